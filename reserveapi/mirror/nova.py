# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""The Nova calls the mirror needs: hypervisors and host aggregates."""

from urllib import parse

from reserveapi.mirror import exception as mirror_exc
from reserveapi.mirror import peer

NOVA_MICROVERSION = '2.53'
"""Hypervisor ids are compute node UUIDs from 2.53 on (aggregate UUIDs need
2.41)."""


class NovaClient(peer.PeerClient):
    """Nova, from the ``[nova]`` group."""

    group = 'nova'
    service_type = 'compute'
    microversion = NOVA_MICROVERSION
    error = mirror_exc.NovaError
    unavailable = mirror_exc.NovaUnavailable

    def hypervisors(self, timeout=None):
        """Every compute node, following ``hypervisors_links`` pages.

        :raises: NovaError, NovaUnavailable
        """
        deadline = self._deadline(timeout)
        hypervisors = []
        query = {}
        while True:
            body = self._get_json('/os-hypervisors/detail', deadline,
                                  params=query)
            page = body['hypervisors']
            hypervisors.extend(page)
            next_query = _next_page_query(body.get('hypervisors_links'))
            if not page or not next_query or next_query == query:
                return hypervisors
            query = next_query

    def aggregates(self, timeout=None):
        """Nova's host aggregates as ``[{"uuid", "hosts": [...]}]``.

        :raises: NovaError, NovaUnavailable
        """
        body = self._get_json('/os-aggregates', self._deadline(timeout))
        return [{'uuid': aggregate['uuid'],
                 'hosts': sorted(aggregate.get('hosts') or [])}
                for aggregate in body['aggregates']]


def service_host(hypervisor):
    """The host whose nova-compute service reports ``hypervisor``."""
    return (hypervisor.get('service') or {}).get('host')


def _next_page_query(links):
    """Query of the ``next`` link, replayed on our own endpoint.

    Nova builds the link from its idea of its public URL, which may not be
    reachable from here; the marker and limit are all we need from it.
    """
    for link in links or []:
        if link.get('rel') == 'next':
            return dict(parse.parse_qsl(parse.urlsplit(link['href']).query))
    return None
