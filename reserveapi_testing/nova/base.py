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

"""The harness: Nova's own functional framework, a real Ironic, and
reserveapi in its own process.

In this process: Nova's API, conductor, scheduler and compute services
(``nova.tests.functional.integrated_helpers``), the real Placement
fixture, Nova's Neutron and Glance fixtures. Beside it: the real Ironic
(``reserveapi_testing.ironic``, one per test process) and the reservation
service (``reserveapi_testing.nova.reserveapi_service``, one per test), whose
inventory is that Ironic and which claims the nodes it reserves there.
"""

import collections
import copy
import os
import sys
import time

import fixtures
from nova import context as nova_context
from nova import objects
from nova import test
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional import fixtures as func_fixtures
from nova.tests.functional import integrated_helpers
from nova.tests.functional.api import client as nova_api_client
from openstack import proxy as sdk_proxy
from openstack.baremetal.v1 import _proxy as baremetal_proxy

from reserveapi.nova import cmd as launcher
from reserveapi_testing import ironic as ironic_fixture
from reserveapi_testing.nova import reserveapi_service

# What reserveapi-nova-compute does: compute_driver = reserveapi.X works.
launcher.register()

# Nova's OpenStackSDKFixture replaces every SDK proxy's get_endpoint with
# a mock; the baremetal proxy gets the real one back (only it: Nova's
# Placement client relies on the mock).
REAL_GET_ENDPOINT = sdk_proxy.Proxy.get_endpoint
RESOURCE_CLASS = 'CUSTOM_BAREMETAL'
BAREMETAL_EXTRA_SPECS = {
    'resources:%s' % RESOURCE_CLASS: '1',
    'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
    'resources:DISK_GB': '0',
}
# Nova polls Ironic every [ironic] api_retry_interval seconds (an integer,
# 2 by default; 0 polls without a pause, and a teardown slowed by load then
# runs out of its [ironic] api_max_retries polls) while it deploys or
# tears down. Ironic's fake deploy is quick.
IRONIC_POLL_INTERVAL = 1
WAIT_TIMEOUT = 180


class _BaremetalNeutron(nova_fixtures.NeutronFixture):
    """The Ironic driver unbinds ports with ``binding:host_id = None``,
    which Nova's fake Neutron answers with ``KeyError(None)`` when the port
    has no binding yet; real Neutron accepts it.
    """

    def update_port(self, port_id, body=None):
        host, _ = self._get_active_binding(port_id)
        port_body = body['port']
        if (host is None and 'binding:host_id' in port_body
                and port_body['binding:host_id'] is None):
            port = self._ports[port_id]
            port.update(copy.deepcopy(port_body))
            return {'port': copy.deepcopy(port)}
        return super().update_port(port_id, body=body)


class IronicTestCase(test.TestCase, integrated_helpers.InstanceHelperMixin):
    """Nova with ``COMPUTE_DRIVER`` on ``HOSTS`` against ``NODES`` Ironic
    nodes, all ``available``, resource class ``baremetal``.
    """

    COMPUTE_DRIVER = 'reserveapi.IronicDriver'
    HOSTS = ('compute-1', 'compute-2', 'compute-3')
    NODES = 12
    SHUFFLE_HOSTS = True
    """``[filter_scheduler] shuffle_best_same_weighed_hosts`` with our
    driver."""
    # Servers boot concurrently, as they do for real.
    CAST_AS_CALL = False
    NUMBER_OF_CELLS = 1

    def setUp(self):
        # Before Nova's fixtures poison os.uname, which starting Ironic
        # uses (ctypes looks libc up); once per test process.
        self.ironic = ironic_fixture.shared_ironic()
        super().setUp()
        self.ironic.reset()
        self.node_uuids = self.ironic.seed_nodes(self.NODES)
        self.reserveapi = None
        if self.COMPUTE_DRIVER.startswith('reserveapi.'):
            self.reserveapi = self.useFixture(
                reserveapi_service.ReserveapiService(self.ironic))
            self.sync_reservation_inventory()
        self._configure_nova()
        self._start_nova()
        self.flavor_id = self._create_flavor(
            name='baremetal', memory_mb=4096, vcpu=4, disk=100, ephemeral=0,
            extra_spec=BAREMETAL_EXTRA_SPECS)

    def sync_reservation_inventory(self):
        """The service reads Ironic's nodes now (``reserveapi-manage
        sync-nodes``, a complete pass): after a test changed them.
        """
        self.reserveapi.sync_inventory()

    def _configure_nova(self):
        self.useFixture(fixtures.MockPatchObject(
            baremetal_proxy.Proxy, 'get_endpoint', REAL_GET_ENDPOINT))
        self.flags(compute_driver=self.COMPUTE_DRIVER)
        self.flags(group='ironic', auth_type='none',
                   endpoint_override=self.ironic.endpoint,
                   api_retry_interval=IRONIC_POLL_INTERVAL)
        if self.reserveapi is not None:
            self.flags(group='reserveapi', auth_type='none',
                       endpoint_override=self.reserveapi.endpoint,
                       required=True)
            # As doc/source/nova.rst has the scheduler configured: every
            # host reports the same inventory, so Nova's weighers cannot
            # tell them apart.
            self.flags(group='filter_scheduler',
                       shuffle_best_same_weighed_hosts=self.SHUFFLE_HOSTS)
        self.flags(group='wsgi', api_paste_config=self.api_paste_config())
        # Bare metal flavors are large; Nova's default quotas are not.
        self.flags(group='quota', ram=-1, cores=-1, instances=-1)

    def api_paste_config(self):
        """The api-paste.ini nova-api loads: Nova's own."""
        return nova_api_paste()

    def _start_nova(self):
        self.placement_fixture = self.useFixture(
            func_fixtures.PlacementFixture())
        self.placement = self.placement_fixture.api
        self.neutron = self.useFixture(_BaremetalNeutron(self))
        self.useFixture(nova_fixtures.GlanceFixture(self))
        self.useFixture(nova_fixtures.CinderFixture(self))
        self.start_service('conductor')
        self.start_service('scheduler')
        self.computes = {host: self.start_service('compute', host=host)
                         for host in self.HOSTS}
        self.api_fixture = self.useFixture(nova_fixtures.OSAPIFixture(
            api_version='v2.1'))
        self.api = self.admin_api = self.api_fixture.admin_api
        self.api.microversion = 'latest'

    # Helpers --------------------------------------------------------

    def boot(self, count, name='server', host=None, az=None):
        """POST ``count`` servers at once, without waiting; ``host``
        asks the scheduler for that host (its filters still apply), ``az``
        for that availability zone.
        """
        return [self.api.post_server({'server': self._build_server(
            name='%s-%d' % (name, index), flavor_id=self.flavor_id,
            image_uuid=nova_fixtures.GlanceFixture.image1['id'],
            networks=[{'uuid': nova_fixtures.NeutronFixture.network_1['id']}
                      ], host=host, az=az)}) for index in range(count)]

    def build_attempts(self, server):
        """How many compute hosts tried to build ``server``: 1 unless it
        was rescheduled.
        """
        (create,) = [action for action in
                     self.api.get_instance_actions(server['id'])
                     if action['action'] == 'create']
        events = self.api.get_instance_action_details(
            server['id'], create['request_id'])['events']
        return sum(1 for event in events
                   if event['event'] == 'compute__do_build_and_run_instance')

    def wait_for_status(self, servers, statuses=('ACTIVE', 'ERROR'),
                        timeout=WAIT_TIMEOUT):
        """The servers once each has one of ``statuses``; raise on time."""
        pending = {server['id'] for server in servers}
        done = {}
        deadline = time.monotonic() + timeout
        while pending:
            for server_id in sorted(pending):
                server = self.api.get_server(server_id)
                if server['status'] in statuses:
                    done[server_id] = server
                    pending.discard(server_id)
            if pending:
                self.assertLess(time.monotonic(), deadline,
                                'servers still building: %s' % pending)
                time.sleep(0.2)
        return [done[server['id']] for server in servers]

    def act(self, server, action, status='ACTIVE'):
        """POST a server action; the server once it is done."""
        self.api.post_server_action(server['id'], action)
        deadline = time.monotonic() + WAIT_TIMEOUT
        while True:
            # The action is accepted before its task starts: wait for the
            # task to come and go.
            time.sleep(0.2)
            current = self.api.get_server(server['id'])
            if (current['status'] == status
                    and current['OS-EXT-STS:task_state'] is None):
                return current
            self.assertNotEqual('ERROR', current['status'])
            self.assertLess(time.monotonic(), deadline,
                            'server %s is still %s/%s' % (
                                server['id'], current['status'],
                                current['OS-EXT-STS:task_state']))

    def wait_until(self, condition, timeout=WAIT_TIMEOUT):
        deadline = time.monotonic() + timeout
        while not condition():
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.2)

    def ironic_node_of(self, server):
        (node,) = self.ironic.list_nodes(
            instance_uuid=server['id'],
            fields='uuid,provision_state,power_state')
        return node

    def delete_and_wait(self, servers):
        for server in servers:
            self.api.delete_server(server['id'])
        self.wait_until_gone(servers)

    def wait_until_gone(self, servers):
        """Wait until every server is deleted. One that goes to ERROR
        instead fails the test with its fault, whose message and details
        (for an admin, the traceback) say why."""
        deadline = time.monotonic() + WAIT_TIMEOUT
        for server in servers:
            while True:
                try:
                    current = self.api.get_server(server['id'])
                except nova_api_client.OpenStackApiNotFoundException:
                    break
                self.assertNotEqual(
                    'ERROR', current['status'],
                    'server %s went to ERROR instead of going: %s' % (
                        server['id'], current.get('fault')))
                self.assertLess(time.monotonic(), deadline,
                                'server %s is still %s' % (
                                    server['id'], current['status']))
                time.sleep(0.2)

    def ironic_nodes(self):
        return {node['uuid']: node for node in self.ironic.list_nodes(
            fields='uuid,instance_uuid,provision_state')}

    def compute_nodes(self):
        context = nova_context.get_admin_context()
        return objects.ComputeNodeList.get_all(context)

    def provider_inventory(self, provider_uuid):
        return self.placement.get(
            '/resource_providers/%s/inventories' % provider_uuid
        ).body['inventories']

    def allocated_consumers(self):
        """{consumer: [provider, ...]} of every host's compute node."""
        consumers = collections.defaultdict(list)
        for node in self.compute_nodes():
            for consumer in self.placement.get(
                    '/resource_providers/%s/allocations' % node.uuid
            ).body['allocations']:
                consumers[consumer].append(node.uuid)
        return dict(consumers)

    def assert_placement_matches_reservations(self, active):
        """Every ``active`` server has one reservation and one allocation,
        on one provider; no node is in two reservations. The
        reservations."""
        reservations = self.reserveapi.reservations()
        nodes = collections.Counter(r['node_uuid'] for r in reservations)
        self.assertEqual([], [node for node, count in nodes.items()
                              if count > 1])
        self.assertEqual(sorted(server['id'] for server in active),
                         sorted(r['instance_uuid'] for r in reservations))
        consumers = self.allocated_consumers()
        self.assertEqual(sorted(r['instance_uuid'] for r in reservations),
                         sorted(consumers))
        self.assertEqual([1] * len(consumers),
                         [len(providers) for providers in consumers.values()])
        return reservations

    def stop_compute(self, host):
        """As if the host died: the service stops and is reported down."""
        self.computes[host].stop()
        service = self.admin_api.get_services(host=host,
                                              binary='nova-compute')[0]
        self.admin_api.put_service(service['id'], {'forced_down': True})


def nova_api_paste():
    """Nova's own api-paste.ini, installed with the nova package."""
    return os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')
