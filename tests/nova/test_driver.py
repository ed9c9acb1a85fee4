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

"""reserveapi.IronicDriver inside real Nova: three compute services, one
real Ironic, the reservation service."""

import collections
import json
from unittest import mock
import uuid

import fixtures
from keystoneauth1 import exceptions as ks_exc
from nova import context as nova_context
from nova import exception
from nova.virt.ironic import driver as ironic_driver

from reserveapi import client
from reserveapi.nova import driver
from reserveapi.nova import stock
from reserveapi_testing.nova import base
from reserveapi_testing.nova import nova_api


class TestReservationDriver(base.IronicTestCase):

    def test_one_compute_node_per_host_reporting_the_whole_cloud(self):
        for compute in self.computes.values():
            self.assertIsInstance(compute.manager.driver, driver.IronicDriver)
        nodes = self.compute_nodes()
        self.assertEqual(sorted(self.HOSTS),
                         sorted(node.hypervisor_hostname for node in nodes))
        self.assertEqual(sorted(self.HOSTS),
                         sorted(node.host for node in nodes))
        self.assertEqual(
            sorted(str(uuid.uuid5(driver.NODE_NAMESPACE, host))
                   for host in self.HOSTS),
            sorted(node.uuid for node in nodes))
        for node in nodes:
            inventory = self.provider_inventory(node.uuid)
            self.assertEqual([base.RESOURCE_CLASS], list(inventory))
            self.assertEqual(
                (self.NODES, 0, 1),
                (inventory[base.RESOURCE_CLASS]['total'],
                 inventory[base.RESOURCE_CLASS]['reserved'],
                 inventory[base.RESOURCE_CLASS]['max_unit']))

    def test_provider_traits_are_the_free_nodes_traits(self):
        self.ironic.set_traits(self.node_uuids[0], ['CUSTOM_GPU'])
        self.ironic.set_traits(self.node_uuids[1], ['CUSTOM_GPU',
                                                    'CUSTOM_RAID'])
        self.sync_reservation_inventory()
        self.flags(group='reserveapi', inventory_cache_time=0)
        context = nova_context.get_admin_context()
        sent = []
        real_request = client.ReservationClient.request

        def request(reservations, method, url, *args, **kwargs):
            sent.append((method, url.split('?')[0]))
            return real_request(reservations, method, url, *args, **kwargs)

        with mock.patch.object(client.ReservationClient, 'request',
                               request):
            for compute in self.computes.values():
                compute.manager.update_available_resource(context)
        # The summary (read for the resources, then for the provider tree:
        # no cache here), whatever the inventory's size; no node listed.
        self.assertEqual({('GET', '/v1/capacity')}, set(sent))
        self.assertLessEqual(len(self.HOSTS), len(sent))
        for node in self.compute_nodes():
            traits = set(self.placement.get(
                '/resource_providers/%s/traits' % node.uuid,
                version='1.6').body['traits'])
            self.assertLessEqual({'CUSTOM_GPU', 'CUSTOM_RAID'}, traits)

    def test_boot_six_and_delete(self):
        servers = self.wait_for_status(self.boot(6), ('ACTIVE',))
        ironic = self.ironic_nodes()
        used = {uuid: node for uuid, node in ironic.items()
                if node['instance_uuid']}
        self.assertEqual({server['id'] for server in servers},
                         {node['instance_uuid'] for node in used.values()})
        self.assertEqual({'active'}, {node['provision_state']
                                      for node in used.values()})
        reservations = self.reserveapi.reservations()
        self.assertEqual(
            {(server['id'], server['OS-EXT-SRV-ATTR:host'],
              next(uuid for uuid, node in used.items()
                   if node['instance_uuid'] == server['id']), 'active')
             for server in servers},
            {(r['instance_uuid'], r['host'], r['node_uuid'], r['state'])
             for r in reservations})
        # instance.node stays the host: one compute node per host.
        self.assertEqual(
            {(server['OS-EXT-SRV-ATTR:host'],
              server['OS-EXT-SRV-ATTR:hypervisor_hostname'])
             for server in servers},
            {(host, host) for host in
             {server['OS-EXT-SRV-ATTR:host'] for server in servers}})
        self.assertLessEqual({server['OS-EXT-SRV-ATTR:host']
                              for server in servers}, set(self.HOSTS))

        # A restarted compute service (a fresh driver) still finds its
        # instances' nodes and reservations.
        host = servers[0]['OS-EXT-SRV-ATTR:host']
        old_driver = self.computes[host].manager.driver
        self.computes[host] = self.restart_compute_service(
            self.computes[host], keep_hypervisor_state=False)
        self.assertIsNot(old_driver, self.computes[host].manager.driver)
        self.delete_and_wait(servers)
        self.assertEqual([], self.reserveapi.reservations())
        self.assertEqual(
            [], [node for node in self.ironic_nodes().values()
                 if node['instance_uuid']])

    def test_failed_deploy_releases_and_cleans_the_node(self):
        injected = exception.InstanceDeployFailure(reason='injected')
        with mock.patch.object(ironic_driver.IronicDriver,
                               '_add_instance_info_to_node',
                               side_effect=injected):
            (server,) = self.wait_for_status(self.boot(1), ('ERROR',))
        # Tried on every host, released after each try.
        self.assertIn('Exceeded maximum number of retries',
                      server['fault']['message'])
        self.assertEqual([], self.reserveapi.reservations())
        self.assertEqual([], self.ironic.list_nodes(associated=True))

    def test_ironic_unreachable_after_reserving_tries_the_next_host(self):
        # Ironic drops the connection as the host reads its reserved node
        # (the real one now and then closes a kept-alive connection):
        # that host lets the node go, and the boot goes on elsewhere.
        get_node = stock.StockDriver._get_ironic_node
        asked = []

        def dropped_once(compute_driver, node_uuid):
            asked.append(node_uuid)
            if len(asked) == 1:
                raise ks_exc.ConnectFailure('Connection aborted.')
            return get_node(compute_driver, node_uuid)

        with mock.patch.object(stock.StockDriver, '_get_ironic_node',
                               new=dropped_once):
            (server,) = self.wait_for_status(self.boot(1), ('ACTIVE',))

        self.assertGreater(len(asked), 1)
        reservation, = self.reserveapi.reservations()
        self.assertEqual(server['id'], reservation['instance_uuid'])
        self.assertEqual([server['id']], [
            node['instance_uuid'] for node in self.ironic_nodes().values()
            if node['instance_uuid']])

    def test_boots_go_on_with_one_compute_down(self):
        self.stop_compute('compute-1')
        servers = self.wait_for_status(self.boot(3), ('ACTIVE',))
        self.assertNotIn('compute-1', {server['OS-EXT-SRV-ATTR:host']
                                       for server in servers})
        self.assertEqual(
            3, len({r['node_uuid'] for r in self.reserveapi.reservations()}))

    def test_more_servers_than_nodes(self):
        # A stale inventory lets the scheduler send every boot to a host:
        # the extras find no node there, are rescheduled to the other
        # hosts, find none there either, and end in ERROR.
        self.flags(group='reserveapi', inventory_cache_time=3600)
        servers = self.wait_for_status(self.boot(self.NODES + 2))
        by_status = collections.defaultdict(list)
        for server in servers:
            by_status[server['status']].append(server)
        self.assertEqual((self.NODES, 2), (len(by_status['ACTIVE']),
                                           len(by_status['ERROR'])))
        for server in by_status['ERROR']:
            self.assertIn('Exceeded maximum number of retries',
                          server['fault']['message'])
        self.assertIn('No node reserved', self.stdlog.logger.output)
        holders = [node['instance_uuid']
                   for node in self.ironic_nodes().values()]
        self.assertEqual(sorted(s['id'] for s in by_status['ACTIVE']),
                         sorted(holders))
        reservations = self.reserveapi.reservations()
        self.assertEqual(self.NODES,
                         len({r['node_uuid'] for r in reservations}))
        self.assertEqual(sorted(s['id'] for s in by_status['ACTIVE']),
                         sorted(r['instance_uuid'] for r in reservations))

    def test_no_free_node_no_host_is_picked(self):
        # While nodes are free, other hosts' claims change no host's
        # inventory (no write racing a boot's allocation); once none is
        # free, every host's next update reports the class full and the
        # scheduler picks no host: the next boot never reaches a driver.
        servers = self.wait_for_status(self.boot(self.NODES - 1),
                                       ('ACTIVE',))
        providers = [node.uuid for node in self.compute_nodes()]
        context = nova_context.get_admin_context()

        def update_every_host():
            for compute in self.computes.values():
                compute.manager.update_available_resource(context)

        self.flags(group='reserveapi', inventory_cache_time=0)
        update_every_host()
        for provider in providers:
            self.assertEqual(
                0, self.provider_inventory(provider)[
                    base.RESOURCE_CLASS]['reserved'])
        (last,) = self.wait_for_status(self.boot(1), ('ACTIVE',))
        update_every_host()
        held = collections.Counter(
            server['OS-EXT-SRV-ATTR:host'] for server in servers + [last])
        for node in self.compute_nodes():
            inventory = self.provider_inventory(node.uuid)[
                base.RESOURCE_CLASS]
            self.assertEqual(held[node.hypervisor_hostname],
                             inventory['total'] - inventory['reserved'],
                             node.hypervisor_hostname)
        reserve = mock.patch.object(client.ReservationClient, 'reserve',
                                    side_effect=AssertionError('reached'))
        with reserve as reserve_call:
            (refused,) = self.wait_for_status(self.boot(1), ('ERROR',))
        self.assertIn('No valid host', refused['fault']['message'])
        reserve_call.assert_not_called()

    def test_instance_operations_find_the_reserved_node(self):
        """Every operation reads the node from Ironic or the reservation:
        ``instance.node`` is the host name.
        """
        (server,) = self.wait_for_status(self.boot(1), ('ACTIVE',))
        self.assertEqual(server['OS-EXT-SRV-ATTR:host'],
                         server['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        node = self.ironic_node_of(server)['uuid']

        self.act(server, {'os-stop': None}, 'SHUTOFF')
        self.assertEqual('power off', self.ironic_node_of(server)[
            'power_state'])
        self.act(server, {'os-start': None})
        self.assertEqual('power on', self.ironic_node_of(server)[
            'power_state'])
        self.act(server, {'reboot': {'type': 'HARD'}})
        self.act(server, {'rescue': {'adminPass': 'rescue-me'}}, 'RESCUE')
        self.assertEqual('rescue', self.ironic_node_of(server)[
            'provision_state'])
        self.act(server, {'unrescue': None})
        self.assertEqual('active', self.ironic_node_of(server)[
            'provision_state'])

        # Ironic's noop network interface records no VIF, but attaching
        # one to a node that does not exist is a 404: the attach (a
        # synchronous call through to the driver) succeeding shows the
        # driver found the node.
        port = self.api.attach_interface(server['id'], {
            'interfaceAttachment': {
                'net_id': base.nova_fixtures.NeutronFixture.network_1['id']}}
        ).body['interfaceAttachment']['port_id']
        self.assertIn(port, self.interfaces(server))
        self.api.detach_interface(server['id'], port)
        self.wait_until(lambda: port not in self.interfaces(server))

        # Still the same node, held by the same reservation.
        self.assertEqual(node, self.ironic_node_of(server)['uuid'])
        (reservation,) = self.reserveapi.reservations()
        self.assertEqual((node, 'active'),
                         (reservation['node_uuid'], reservation['state']))

        # Ironic 39 cannot rebuild (its conductor reads an unset local,
        # auto_lessee, and answers 500, whichever driver asks), so the
        # rebuild ends in ERROR; its fault shows it went to the reserved
        # node. From 2.93 Nova asks drivers to re-image a boot volume,
        # which the stock Ironic driver refuses: ask at 2.92.
        self.api.microversion = '2.92'
        self.api.post_server_action(server['id'], {'rebuild': {
            'imageRef': base.nova_fixtures.GlanceFixture.image1['id']}})
        (failed,) = self.wait_for_status([server], ('ERROR',))
        self.assertIn('bare metal node %s to rebuild' % node,
                      failed['fault']['message'])

    def interfaces(self, server):
        return [attachment['port_id'] for attachment in
                self.api.get_port_interfaces(server['id'])]


    def test_the_service_claims_the_node_in_ironic(self):
        """With ``[ironic] claim_nodes`` the service sets the instance on
        the node in Ironic before it answers the driver, which deploys
        the node it finds already its own; the delete clears it.
        """
        seen = []
        real_reserve = client.ReservationClient.reserve

        def reserve_and_look(reservations, instance_uuid, *args, **kwargs):
            reservation = real_reserve(reservations, instance_uuid, *args,
                                       **kwargs)
            node = self.ironic.get_node(reservation['node_uuid'])
            seen.append((node['uuid'], node['instance_uuid'],
                         node['provision_state']))
            return reservation

        self.useFixture(fixtures.MockPatchObject(
            client.ReservationClient, 'reserve', reserve_and_look))
        (server,) = self.wait_for_status(self.boot(1), ('ACTIVE',))

        node = self.ironic_node_of(server)['uuid']
        self.assertEqual([(node, server['id'], 'available')], seen)
        in_ironic = self.ironic.get_node(node)
        self.assertEqual((server['id'], 'active'),
                         (in_ironic['instance_uuid'],
                          in_ironic['provision_state']))
        self.assertEqual(server['id'], self.reserveapi.node(node)[
            'reservation']['instance_uuid'])

        self.delete_and_wait([server])

        self.assertIsNone(self.ironic.get_node(node)['instance_uuid'])
        # Ironic's answer to the release was a fresh read: the service
        # holds the node as Ironic had it then, without waiting for a
        # sync. Nova's teardown ends once cleaning starts, so that read
        # may still find the node cleaning; it is never deployed again.
        in_service = self.reserveapi.node(node)
        self.assertEqual((None, None, None),
                         (in_service['instance_uuid'],
                          in_service['reservation'],
                          in_service['stale_since']))
        self.assertIn(in_service['provision_state'],
                      ('cleaning', 'available'))


class _VersionDocument:
    """A service that serves microversions up to ``max_version``."""

    def __init__(self, max_version):
        self.max_version = max_version

    def __call__(self, environ, start_response):
        start_response('200 OK', [('Content-Type', 'application/json')])
        return [json.dumps({'versions': [{
            'id': 'v1', 'min_version': '1.0',
            'max_version': self.max_version}]}).encode()]


class TestStartUp(base.IronicTestCase):
    """``[reserveapi] required``, with the service away."""

    HOSTS = ('compute-1',)

    def test_required_refuses_to_start(self):
        self.reserveapi.stop()
        error = self.assertRaises(
            exception.InvalidConfiguration, self.start_service, 'compute',
            host='compute-2')
        message = str(error)
        self.assertNotIn('\n', message)
        self.assertIn('[reserveapi] required is true', message)

    def test_no_auth_and_no_endpoint_is_refused_in_one_line(self):
        """keystoneauth's MissingAuthPlugin is a configuration mistake,
        said as the service being away is, not a traceback."""
        self.flags(group='reserveapi', auth_type=None,
                   endpoint_override=None)
        error = self.assertRaises(
            exception.InvalidConfiguration, self.start_service, 'compute',
            host='compute-2')
        message = str(error)
        self.assertNotIn('\n', message)
        self.assertIn('[reserveapi] sets neither auth_type nor '
                      'endpoint_override', message)
        self.assertIn('[reserveapi] required is true', message)

    def test_an_older_service_is_refused_in_one_line(self):
        # A service of 1.1 could not limit this host to its shard in the
        # capacity it reports: refused, never ignored.
        older = self.useFixture(nova_api.LoopbackFront(
            _VersionDocument('1.1')))
        self.flags(group='reserveapi', endpoint_override=older.url)
        self.flags(group='ironic', shard='sa')
        error = self.assertRaises(
            exception.InvalidConfiguration, self.start_service, 'compute',
            host='compute-2')
        message = str(error)
        self.assertNotIn('\n', message)
        self.assertIn("up to 1.1; this driver needs 1.2 (this host is "
                      "limited to shard 'sa')", message)

    def test_not_required_runs_the_stock_driver(self):
        self.reserveapi.stop()
        self.flags(group='reserveapi', required=False)
        compute = self.start_service('compute', host='compute-2')
        self.assertIn('running the stock Ironic driver, one compute node '
                      'per Ironic node, which is deprecated',
                      self.stdlog.logger.output)
        self.assertIsInstance(compute.manager.driver, driver.IronicDriver)
        # One compute node per Ironic node for the stock-mode host (on
        # its share of the hash ring), none named after the host.
        mine = [node.hypervisor_hostname for node in self.compute_nodes()
                if node.host == 'compute-2']
        self.assertTrue(mine)
        self.assertLessEqual(set(mine), set(self.node_uuids))
