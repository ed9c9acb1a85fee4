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
their instances or their hosts; the private flavor of a hold, and the
deletion of its instances at its end.
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

    def ensure_private_flavor(self, name, vcpus, ram, disk, extra_specs,
                              project_id, timeout=None):
        """The id of the private flavor ``name``, created if Nova has none,
        with access for ``project_id`` and ``extra_specs`` set.

        Every step may be repeated, so a worker calls it again after any
        failure, and two workers may make the same flavor at once.

        :raises: NovaError, NovaUnavailable
        """
        deadline = self._deadline(timeout)
        flavor_id = self._flavor_id(name, deadline)
        if flavor_id is None:
            flavor_id = self._create_private_flavor(name, vcpus, ram, disk,
                                                    deadline)
        self._add_flavor_access(flavor_id, project_id, deadline)
        # Sets the keys given and leaves any others alone.
        response = self._request('POST',
                                 '/flavors/%s/os-extra_specs' % flavor_id,
                                 deadline, json={'extra_specs': extra_specs})
        if response.status_code != 200:
            raise self.error(reason=peers.describe(response))
        return flavor_id

    def delete_flavor(self, flavor_id, timeout=None):
        """Delete a flavor; one Nova no longer has is deleted already, so
        a worker may call it again after any failure.

        :raises: NovaError, NovaUnavailable
        """
        response = self._request('DELETE', '/flavors/%s' % flavor_id,
                                 self._deadline(timeout))
        if response.status_code not in (202, 404):
            raise self.error(reason=peers.describe(response))

    def delete_server(self, instance_uuid, timeout=None):
        """Ask Nova to delete an instance of any project: True once asked,
        False if Nova no longer has it.

        :raises: NovaError, NovaUnavailable
        """
        response = self._request('DELETE', '/servers/%s' % instance_uuid,
                                 self._deadline(timeout))
        if response.status_code == 204:
            return True
        if response.status_code == 404:
            return False
        raise self.error(reason=peers.describe(response))

    def _flavor_id(self, name, deadline):
        """Id of the flavor called ``name`` (Nova keeps names unique),
        private flavors included; None if Nova has none."""
        # "None" asks for public and private flavors alike; without it
        # Nova lists only the public ones.
        query = {'is_public': 'None'}
        while True:
            body = self._get_json('/flavors/detail', deadline, params=query)
            page = body['flavors']
            for flavor in page:
                if flavor['name'] == name:
                    return flavor['id']
            next_query = _next_page_query(body.get('flavors_links'))
            if not page or not next_query:
                return None
            next_query['is_public'] = 'None'
            if next_query == query:
                return None
            query = next_query

    def _create_private_flavor(self, name, vcpus, ram, disk, deadline):
        """Create the flavor, or find the one another worker created
        meanwhile (Nova answers 409 for a name taken)."""
        response = self._request('POST', '/flavors', deadline, json={
            'flavor': {'name': name, 'vcpus': vcpus, 'ram': ram,
                       'disk': disk, 'os-flavor-access:is_public': False}})
        if response.status_code == 200:
            return response.json()['flavor']['id']
        if response.status_code == 409:
            flavor_id = self._flavor_id(name, deadline)
            if flavor_id is not None:
                return flavor_id
        raise self.error(reason=peers.describe(response))

    def _add_flavor_access(self, flavor_id, project_id, deadline):
        """Let ``project_id`` use the flavor, if it cannot already."""
        response = self._request(
            'POST', '/flavors/%s/action' % flavor_id, deadline,
            json={'addTenantAccess': {'tenant': project_id}})
        if response.status_code == 200:
            return
        if response.status_code == 409:
            # Nova answers 409 both when the project has access already
            # and when the flavor is public (then listing access is a
            # 404): only the list tells them apart.
            listed = self._request(
                'GET', '/flavors/%s/os-flavor-access' % flavor_id, deadline)
            if listed.status_code == 200 and project_id in {
                    access['tenant_id']
                    for access in listed.json()['flavor_access']}:
                return
        raise self.error(reason=peers.describe(response))


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
