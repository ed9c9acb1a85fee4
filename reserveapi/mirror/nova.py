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

"""The Nova calls the service makes: hypervisors and host aggregates for
the mirror; servers and compute services for reservations that outlive
their instances or their hosts.
"""

import datetime
from urllib import parse

from oslo_utils import timeutils

from reserveapi.common import exception
from reserveapi.peers import clients as peers

NOVA_MICROVERSION = '2.53'
"""Hypervisor ids are compute node UUIDs from 2.53 on (aggregate UUIDs need
2.41)."""
SERVERS_MICROVERSION = '2.69'
"""From 2.69 an instance of a cell that is down is listed and shown (in
part) instead of being left out or answered 404: never taken for gone."""
LONG_AGO = datetime.datetime.min
"""When Nova deleted an instance whose record it no longer keeps
(archived or purged)."""


class NovaClient(peers.PeerClient):
    """Nova, from the ``[nova]`` group."""

    group = 'nova'
    service_type = 'compute'
    microversion = NOVA_MICROVERSION
    error = exception.NovaError
    unavailable = exception.NovaUnavailable

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


    def server_uuids(self, host, timeout=None):
        """UUIDs of the instances Nova has on ``host``, in every project.

        :raises: NovaError, NovaUnavailable
        """
        deadline = self._deadline(timeout)
        uuids = set()
        query = {'all_tenants': '1', 'host': host}
        while True:
            body = self._get_json('/servers', deadline, params=query,
                                  microversion=SERVERS_MICROVERSION)
            page = body['servers']
            uuids.update(server['id'] for server in page)
            next_query = _next_page_query(body.get('servers_links'))
            if not page or not next_query or next_query == query:
                return uuids
            query = next_query

    def deleted_at(self, instance_uuid, timeout=None):
        """None while Nova has the instance; else when Nova deleted it
        (naive UTC), ``LONG_AGO`` if Nova no longer keeps its record.

        :raises: NovaError, NovaUnavailable
        """
        deadline = self._deadline(timeout)
        response = self._request('GET', '/servers/%s' % instance_uuid,
                                 deadline, microversion=SERVERS_MICROVERSION)
        if response.status_code == 200:
            return None
        if response.status_code != 404:
            raise self.error(reason=peers.describe(response))
        body = self._get_json(
            '/servers/detail', deadline, microversion=SERVERS_MICROVERSION,
            params={'all_tenants': '1', 'deleted': 'True',
                    'uuid': instance_uuid})
        for server in body['servers']:
            if server['id'] == instance_uuid:
                return _utc(server.get('OS-SRV-USG:terminated_at')
                            or server['updated'])
        return LONG_AGO

    def compute_service(self, host, timeout=None):
        """Nova's nova-compute service on ``host`` (``state`` is ``up`` or
        ``down``, ``forced_down``...), None if Nova has none.

        :raises: NovaError, NovaUnavailable
        """
        body = self._get_json('/os-services', self._deadline(timeout),
                              params={'host': host,
                                      'binary': 'nova-compute'})
        services = [service for service in body['services']
                    if service['host'] == host]
        return services[0] if services else None


def _utc(timestamp):
    return timeutils.normalize_time(timeutils.parse_isotime(timestamp))


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
