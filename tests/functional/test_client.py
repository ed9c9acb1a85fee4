"""reserveapi.client against the real API over HTTP on loopback."""

import itertools
import uuid

from keystoneauth1 import session as ks_session

from reserveapi import client
from reserveapi import conf
from reserveapi.api import app
from tests.functional import aggregates
from tests.functional import base
from tests.functional import fixtures as peer_fixtures
from tests.functional import inventory


class TestReservationClient(base.DBTestCase):

    def setUp(self):
        super().setUp()
        self.config(auth_strategy='noauth', group='api')
        inventory.sync(self, [inventory.node('node-%d' % index)
                              for index in range(2)])
        server = self.useFixture(peer_fixtures.LoopbackServer(
            app.setup_app(conf.CONF)))
        self.client = client.ReservationClient(
            ks_session.Session(), endpoint_override=server.url)

    def _reserve(self, instance_uuid, host='compute-1'):
        return self.client.reserve(instance_uuid, host,
                                   inventory.EXAMPLE_SPEC)

    def test_reservation_lifecycle(self):
        instance_uuid = str(uuid.uuid4())
        reservation = self._reserve(instance_uuid)
        self.assertEqual('reserved', reservation['state'])
        self.assertEqual(reservation, self._reserve(instance_uuid))

        self.assertEqual('active',
                         self.client.confirm(reservation['uuid'])['state'])
        moved = self.client.take_over(reservation['uuid'], 'compute-2')
        self.assertEqual('compute-2', moved['host'])
        self.assertEqual(
            [reservation['uuid']],
            [r['uuid'] for r in self.client.list(host='compute-2')])

        self.assertTrue(self.client.release(reservation['uuid']))
        self.assertFalse(self.client.release(reservation['uuid']))
        self.assertRaises(client.NotFound, self.client.get,
                          reservation['uuid'])

    def test_list_follows_next_links(self):
        self.config(max_limit=1, group='api')
        made = {self._reserve(str(uuid.uuid4()))['uuid'] for _ in range(2)}
        self.assertEqual(made, {r['uuid'] for r in self.client.list()})

    def test_refusal_carries_the_stable_code(self):
        for _ in range(2):
            self._reserve(str(uuid.uuid4()))
        error = self.assertRaises(client.Conflict, self._reserve,
                                  str(uuid.uuid4()))
        self.assertEqual('reserveapi.no_valid_node', error.code)
        self.assertEqual(409, error.status)
        self.assertIn('2 reserved', error.detail)
        self.assertTrue(error.request_id.startswith('req-'))

    def test_capacity(self):
        self._reserve(str(uuid.uuid4()))
        (gold,) = self.client.capacity(host='compute-1')
        self.assertEqual(
            {'resource_class': 'CUSTOM_BAREMETAL_GOLD', 'total': 2,
             'available': 1, 'reserved': 1, 'reserved_by_host': 1},
            {key: gold[key] for key in ('resource_class', 'total',
                                        'available', 'reserved',
                                        'reserved_by_host')})


class TestAggregateMirrorClient(aggregates.MirrorAPITestCase):

    def setUp(self):
        super().setUp()
        self.provider = self.placement.create_provider(name='compute-1')
        server = self.useFixture(peer_fixtures.LoopbackServer(self.app.app))
        self.client = client.AggregateMirrorClient(
            ks_session.Session(), endpoint_override=server.url,
            additional_headers=self.admin_headers)

    def test_hooks_mirror_into_placement(self):
        joined = self.client.add_host(self.aggregate, 'compute-1')
        self.assertEqual((True, 'synced'), (joined['member'], joined['state']))
        self.assertEqual({self.aggregate},
                         self.placement.aggregates(self.provider))

        left = self.client.remove_host(self.aggregate, 'compute-1')
        self.assertEqual((False, 'synced'), (left['member'], left['state']))
        self.assertEqual(set(), self.placement.aggregates(self.provider))
        self.assertEqual(self.aggregate,
                         self.client.delete_aggregate(self.aggregate)['uuid'])

    def test_placement_down_is_not_an_error(self):
        self.placement.stop()
        joined = self.client.add_host(self.aggregate, 'compute-1')
        self.assertEqual((True, 'pending'), (joined['member'],
                                             joined['state']))
        self.placement.start()
        self.run_worker()
        self.assertEqual('synced',
                         self.client.get(self.aggregate)['hosts'][0]['state'])
        self.assertEqual({self.aggregate},
                         self.placement.aggregates(self.provider))

    def test_list_and_sync(self):
        self.config(max_limit=1, group='api')
        other = aggregates.new_uuid()
        for aggregate in (self.aggregate, other):
            self.client.add_host(aggregate, 'compute-1')
        self.assertEqual(sorted([self.aggregate, other]),
                         [agg['uuid'] for agg in self.client.list()])
        (first,) = itertools.islice(self.client.list(sort_dir='desc'), 1)
        self.assertEqual(max(self.aggregate, other), first['uuid'])

        self.placement.set_aggregates(self.provider, [])
        report = self.client.sync(
            [{'uuid': self.aggregate, 'hosts': ['compute-1']}],
            dry_run=True)
        self.assertEqual((True, False), (report['dry_run'],
                                         report['in_sync']))
        self.assertEqual([('compute-1', 'missing', 'none')],
                         [(item['host'], item['difference'], item['action'])
                          for item in report['differences']])
        report = self.client.sync(
            [{'uuid': self.aggregate, 'hosts': ['compute-1']}])
        self.assertEqual(['added'], [item['action']
                                     for item in report['differences']])
        self.assertEqual({self.aggregate},
                         self.placement.aggregates(self.provider))


class TestNodeClient(base.DBTestCase):

    def setUp(self):
        super().setUp()
        self.config(auth_strategy='noauth', group='api')
        self.config(max_limit=2, group='api')
        inventory.sync(self, [
            inventory.node('node-%d' % index,
                           maintenance=index == 4) for index in range(5)])
        server = self.useFixture(peer_fixtures.LoopbackServer(
            app.setup_app(conf.CONF)))
        self.client = client.NodeClient(ks_session.Session(),
                                        endpoint_override=server.url)

    def test_list_follows_next_links_with_filters(self):
        names = [node['name'] for node in self.client.list(sort_key='name')]
        self.assertEqual(['node-%d' % index for index in range(5)], names)
        self.assertEqual(['node-4'], [node['name'] for node in
                                      self.client.list(maintenance='true')])

    def test_marker_and_limit(self):
        names = [node['name'] for node in self.client.list(
            sort_key='name', limit=1,
            marker=inventory.node_uuid('node-2'))]
        self.assertEqual(['node-3', 'node-4'], names)

    def test_get_by_name_or_uuid(self):
        by_name = self.client.get('node-3')
        self.assertEqual(inventory.node_uuid('node-3'), by_name['uuid'])
        self.assertEqual(by_name, self.client.get(by_name['uuid']))
        error = self.assertRaises(client.NotFound, self.client.get, 'nope')
        self.assertEqual('reserveapi.node_not_found', error.code)
