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

"""Moving a running cloud off Nova's stock Ironic driver, as the runbook
in doc/source/nova.rst says: inside real Nova, step by step."""

import collections

from nova import context as nova_context

from reserveapi.nova import driver
from reserveapi_testing.nova import base
from reserveapi_testing.nova import reserveapi_service

OLD_HOST = 'old1'
NEW_HOST = 'compute-2'


class TestMovingFromTheStockDriver(base.IronicTestCase):

    COMPUTE_DRIVER = 'ironic.IronicDriver'
    HOSTS = (OLD_HOST,)
    NODES = 6

    def compute_nodes_of(self, host):
        return sorted(node.hypervisor_hostname
                      for node in self.compute_nodes() if node.host == host)

    def providers(self):
        return {provider['uuid']: provider['name'] for provider in
                self.placement.get('/resource_providers').body[
                    'resource_providers']}

    def offered(self):
        """{provider name: what Placement could still allocate of it}."""
        offered = {}
        for provider, name in self.providers().items():
            inventory = self.provider_inventory(provider).get(
                base.RESOURCE_CLASS)
            if inventory is None:
                continue
            used = self.placement.get(
                '/resource_providers/%s/usages' % provider).body[
                'usages'].get(base.RESOURCE_CLASS, 0)
            offered[name] = inventory['total'] - inventory['reserved'] - used
        return offered

    def assertCapacityRight(self, hosts):
        """Each host's provider offers every free Ironic node (each host
        reports the whole partition) and, while one is free, the nodes
        other hosts hold (what a claim changes is left out of every
        inventory: driver.class_inventory); a stock compute node left for
        an old server offers nothing.
        """
        free = self.free_in_ironic()
        held = collections.Counter(
            r['host'] for r in self.reserveapi.reservations()
            if r['state'] in ('reserved', 'active'))
        others = sum(held.values())
        self.assertEqual(
            {name: (free + others - held[name] if free else 0)
             if name in hosts else 0 for name in self.offered()},
            self.offered())

    def free_in_ironic(self):
        return sum(1 for node in self.ironic_nodes().values()
                   if node['instance_uuid'] is None
                   and node['provision_state'] == 'available')

    def run_periodic(self, host):
        self.flags(group='reserveapi', inventory_cache_time=0)
        self.computes[host].manager.update_available_resource(
            nova_context.get_admin_context())

    def test_move_a_running_host_then_add_one(self):
        # 1. old1 runs the stock driver: a compute node per Ironic node.
        old_servers = [server for _ in range(2) for server in
                       self.wait_for_status(self.boot(1, name='old'),
                                            ('ACTIVE',))]
        old_nodes = {server['id']: self.ironic_node_of(server)['uuid']
                     for server in old_servers}
        self.assertEqual(sorted(self.node_uuids),
                         self.compute_nodes_of(OLD_HOST))

        # 2. The service is deployed; old1 restarts with our driver under
        # the same name.
        self.reserveapi = self.useFixture(
            reserveapi_service.ReserveapiService(self.ironic))
        self.sync_reservation_inventory()
        self.flags(compute_driver='reserveapi.IronicDriver')
        self.flags(group='reserveapi', auth_type='none',
                   endpoint_override=self.reserveapi.endpoint, required=True)
        self.computes[OLD_HOST] = self.restart_compute_service(
            self.computes[OLD_HOST], keep_hypervisor_state=False)
        self.assertIsInstance(self.computes[OLD_HOST].manager.driver,
                              driver.IronicDriver)
        # At its start-up periodic task, the stock compute nodes with no
        # instance are retired with their providers; one stays per old
        # server.
        self.assertEqual(sorted([OLD_HOST] + list(old_nodes.values())),
                         self.compute_nodes_of(OLD_HOST))
        self.assertEqual(sorted([OLD_HOST] + list(old_nodes.values())),
                         sorted(self.providers().values()))
        self.assertEqual(self.NODES - 2, self.free_in_ironic())
        self.assertCapacityRight([OLD_HOST])

        # 3. The old servers are managed as before.
        for server in old_servers:
            self.act(server, {'reboot': {'type': 'HARD'}})
        self.act(old_servers[0], {'os-stop': None}, 'SHUTOFF')
        self.assertEqual('power off',
                         self.ironic_node_of(old_servers[0])['power_state'])
        self.act(old_servers[0], {'os-start': None})

        # 4. A second host joins; every new boot lands at its first
        # attempt, never on a node an old server carries.
        self.computes[NEW_HOST] = self.start_service('compute',
                                                     host=NEW_HOST)
        new_servers = self.wait_for_status(self.boot(3, name='new'),
                                           ('ACTIVE',))
        self.assertEqual([1, 1, 1], [self.build_attempts(server)
                                     for server in new_servers])
        reserved = {r['node_uuid'] for r in self.reserveapi.reservations()}
        self.assertEqual(3, len(reserved))
        self.assertFalse(reserved & set(old_nodes.values()))
        for host in (OLD_HOST, NEW_HOST):
            self.run_periodic(host)
        self.assertCapacityRight([OLD_HOST, NEW_HOST])

        # 5. Deleting an old server clears its node in Ironic and retires
        # its compute node and provider at once.
        gone = old_servers.pop()
        self.delete_and_wait([gone])
        self.assertIsNone(
            self.ironic.get_node(old_nodes[gone['id']])['instance_uuid'])
        self.assertEqual(
            sorted([OLD_HOST, old_nodes[old_servers[0]['id']]]),
            self.compute_nodes_of(OLD_HOST))
        self.assertNotIn(old_nodes[gone['id']], self.providers().values())

        # Its node, cleaned and read again, is offered through the
        # service: two more boots take the last free nodes at once.
        self.ironic.wait_for([old_nodes[gone['id']]],
                             provision_state='available')
        self.sync_reservation_inventory()
        for host in (OLD_HOST, NEW_HOST):
            self.run_periodic(host)
        self.assertEqual(2, self.free_in_ironic())
        self.assertCapacityRight([OLD_HOST, NEW_HOST])
        more = self.wait_for_status(self.boot(2, name='more'), ('ACTIVE',))
        self.assertEqual([1, 1], [self.build_attempts(server)
                                  for server in more])

        # 6. The last old server goes; old1 has one compute node left.
        self.delete_and_wait(old_servers + new_servers + more)
        self.assertEqual([OLD_HOST], self.compute_nodes_of(OLD_HOST))
        self.assertEqual([], self.reserveapi.reservations())
        self.assertNotIn('on unknown node', self.stdlog.logger.output)
