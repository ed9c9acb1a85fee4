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

"""A running hold inside real Nova: the worker creates its private
flavor in Nova and pins its nodes; its project's boots of that flavor
land on the pinned nodes through any host while on-demand boots take the
other nodes; the end deletes its instances through Nova and frees the
capacity. Allocations equal reservations throughout, and no node is
ever in two of them."""

import datetime
import time

from keystoneauth1 import session as ks_session
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional.api import client as nova_api_client

from reserveapi import client
from reserveapi.client import request_spec
from reserveapi_testing.nova import base
from reserveapi_testing.nova import nova_api


class TestPinnedHold(base.IronicTestCase):

    NODES = 4
    HELD = 2

    def setUp(self):
        super().setUp()
        sections = nova_api.serve_peers_on_loopback(self)
        sections['holds'] = {'cleaning_padding': '0', 'end_notice': '0'}
        self.reserveapi.configure(sections)
        # The API reads [holds] at start.
        self.reserveapi.stop()
        self.reserveapi.start()
        self.holds = client.HoldClient(
            ks_session.Session(), endpoint_override=self.reserveapi.endpoint)
        self.flags(group='reserveapi', inventory_cache_time=0)

    def boot_flavor(self, flavor_id, name, host=None):
        return self.api.post_server({'server': self._build_server(
            name=name, flavor_id=flavor_id,
            image_uuid=nova_fixtures.GlanceFixture.image1['id'],
            networks=[{'uuid': nova_fixtures.NeutronFixture.network_1['id']}],
            host=host)})

    def class_row(self, resource_class):
        (row,) = [row for row in self.reserveapi.capacity(version='1.6')
                  if row['resource_class'] == resource_class]
        return row

    def test_boots_take_the_pins_and_the_end_deletes_them(self):
        project = self.api.project_id
        flavor = self.api.get_flavor(self.flavor_id)
        spec = request_spec.build(
            request_spec.flavor_from_compute(flavor),
            {'id': nova_fixtures.GlanceFixture.image1['id'],
             'properties': {}})
        start = datetime.datetime.now(datetime.timezone.utc)
        hold = self.holds.create(project, self.HELD, spec, start,
                                 start + datetime.timedelta(hours=1),
                                 at_end='delete')
        boot_class = hold['boot_resource_class']
        # An overlapping hold for more than the other nodes is refused.
        refused = self.assertRaises(
            client.Conflict, self.holds.create, 'another-project',
            self.NODES - self.HELD + 1, spec,
            start + datetime.timedelta(minutes=30),
            start + datetime.timedelta(hours=2))
        self.assertEqual('reserveapi.hold_not_admitted', refused.code)

        # 1. The worker creates the flavor in Nova and pins two nodes.
        self.reserveapi.run_worker_once()
        hold = self.holds.get(hold['uuid'])
        self.assertEqual(('active', self.HELD, 0),
                         (hold['state'], hold['pinned'], hold['in_use']))
        hold_flavor = self.api.get_flavor(hold['flavor_id'])
        self.assertFalse(hold_flavor['os-flavor-access:is_public'])
        self.assertEqual('reserveapi-hold-' + hold['uuid'],
                         hold_flavor['name'])
        self.assertEqual('1', hold_flavor['extra_specs'][
            'resources:' + boot_class])
        self.assertEqual([project], [
            access['tenant_id'] for access in
            self.api.api_get('/flavors/%s/os-flavor-access'
                             % hold['flavor_id']).body['flavor_access']])
        self.assertEqual((self.NODES, self.NODES - self.HELD, self.HELD),
                         tuple(self.class_row(base.RESOURCE_CLASS)[key]
                               for key in ('total', 'available',
                                           'hold_nodes')))

        # 2. Every host reports the hold's class; the pins are reserved
        # under the ordinary class.
        self._run_periodics()
        for provider in self.compute_nodes():
            inventory = self.provider_inventory(provider.uuid)
            self.assertEqual((self.HELD, 0), (
                inventory[boot_class]['total'],
                inventory[boot_class]['reserved']))
            self.assertEqual(self.HELD, inventory[base.RESOURCE_CLASS][
                'reserved'])

        # 3. The hold's two boots, through two hosts, beside one on-demand
        # boot, all at once.
        servers = self.wait_for_status([
            self.boot_flavor(hold['flavor_id'], 'held-1', host='compute-1'),
            self.boot_flavor(hold['flavor_id'], 'held-2', host='compute-2'),
            self.boot(1, name='on-demand')[0]])
        self.assertEqual(['ACTIVE'] * 3, [
            server['status'] for server in servers],
            [server.get('fault') for server in servers])
        held, on_demand = servers[:2], servers[2]
        self.assertEqual(['compute-1', 'compute-2'], [
            server['OS-EXT-SRV-ATTR:host'] for server in held])
        hold = self.holds.get(hold['uuid'])
        self.assertEqual((0, self.HELD), (hold['pinned'], hold['in_use']))
        # The hold's boots took its pins, not the free nodes: one free
        # node is left, the on-demand boot took the other.
        self.assertEqual(1, self.class_row(base.RESOURCE_CLASS)['available'])
        self.assertEqual(4, len({self.ironic_node_of(server)['uuid']
                                 for server in servers} | {
            row['node_uuid'] for row in self.reserveapi.reservations()}) + 1)
        self.assert_placement_matches_reservations(servers)

        # A third boot of the flavor: the hold is full. Before the hosts
        # report their boots the scheduler may still send it to one,
        # whose reservation the service refuses (rescheduled until no
        # host is left); once they have, it finds no valid host.
        (third,) = self.wait_for_status([
            self.boot_flavor(hold['flavor_id'], 'held-3')])
        self.assertEqual('ERROR', third['status'])
        self.assertTrue(any(
            message in third['fault']['message'] for message in (
                'No valid host', 'Exceeded maximum number of retries')),
            third['fault'])
        self._run_periodics()
        (fourth,) = self.wait_for_status([
            self.boot_flavor(hold['flavor_id'], 'held-4')])
        self.assertIn('No valid host', fourth['fault']['message'])
        self.assert_placement_matches_reservations(servers)

        # 4. The end: the worker deletes the hold's instances through Nova
        # and its flavor; the on-demand instance stays.
        self.holds.update(hold['uuid'], end=datetime.datetime.now(
            datetime.timezone.utc) + datetime.timedelta(seconds=2))
        time.sleep(2)
        self.reserveapi.run_worker_once()
        self.wait_until_gone(held)
        self.assertEqual('ended', self.holds.get(hold['uuid'])['state'])
        self.assertRaises(nova_api_client.OpenStackApiNotFoundException,
                          self.api.get_flavor, hold['flavor_id'])
        self.wait_until(lambda: len(self.reserveapi.reservations()) == 1)
        self.assert_placement_matches_reservations([on_demand])
        # Once Ironic has cleaned them, the nodes are anyone's again.
        self.wait_until(lambda: all(
            node['provision_state'] == 'available'
            for uuid, node in self.ironic_nodes().items()
            if uuid != self.ironic_node_of(on_demand)['uuid']))
        self.sync_reservation_inventory()
        self.assertEqual(self.NODES - 1,
                         self.class_row(base.RESOURCE_CLASS)['available'])
        self._run_periodics()
        for provider in self.compute_nodes():
            self.assertNotIn(boot_class, self.provider_inventory(
                provider.uuid))
        # Once no host has it, the next reports delete the class itself:
        # the classes of holds that are over do not pile up in Placement.
        self._run_periodics()
        self.assertEqual(404, self.placement.get(
            '/resource_classes/' + boot_class, version='1.2').status)
