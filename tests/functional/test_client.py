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

"""reserveapi.client against the real API over HTTP on loopback."""

import datetime
import http
import itertools
import json
import time
import uuid

from keystoneauth1 import session as ks_session

from reserveapi import client
from reserveapi.api import app
from reserveapi_testing import examples
from reserveapi_testing import inventory
from reserveapi_testing import loopback
from tests import base as tests_base
from tests.functional import base
from tests.functional.mirror import base as mirror_base


class TestReservationClient(base.DBTestCase):

    def setUp(self):
        super().setUp()
        self.config(auth_strategy='noauth', group='api')
        inventory.sync(self, [inventory.node('node-%d' % index)
                              for index in range(2)])
        self.server = self.useFixture(loopback.LoopbackServer(
            app.setup_app()))
        self.client = client.ReservationClient(
            ks_session.Session(), endpoint_override=self.server.url)

    def _reserve(self, instance_uuid, host='compute-1'):
        return self.client.reserve(instance_uuid, host,
                                   examples.REQUEST_SPEC)

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

    def test_release_by_instance_needs_no_reservation_uuid(self):
        instance_uuid = str(uuid.uuid4())
        node = self._reserve(instance_uuid)['node_uuid']
        # A fresh client, as after a nova-compute restart.
        fresh = client.ReservationClient(
            ks_session.Session(), endpoint_override=self.server.url)
        self.assertEqual(1, fresh.release_instance(instance_uuid))
        self.assertEqual(0, fresh.release_instance(instance_uuid))
        self.assertEqual([], list(fresh.list(node_uuid=node)))

    def test_another_hosts_instance_is_a_plain_conflict(self):
        instance_uuid = str(uuid.uuid4())
        self._reserve(instance_uuid)
        error = self.assertRaises(client.Conflict, self._reserve,
                                  instance_uuid, host='compute-2')
        self.assertNotIsInstance(error, client.NoValidNode)

    def test_microversion_is_negotiated_from_the_version_document(self):
        # The newest both speak: the client's newest is the service's.
        self.assertEqual('1.6', self.client.api_version)
        self.assertTrue(self.client.speaks('1.1'))

    def test_list_follows_next_links(self):
        self.config(max_limit=1, group='api')
        made = {self._reserve(str(uuid.uuid4()))['uuid'] for _ in range(2)}
        self.assertEqual(made, {r['uuid'] for r in self.client.list()})

    def test_refusal_carries_the_stable_code(self):
        for _ in range(2):
            self._reserve(str(uuid.uuid4()))
        error = self.assertRaises(client.NoValidNode, self._reserve,
                                  str(uuid.uuid4()))
        self.assertIsInstance(error, client.Conflict)
        self.assertEqual('reserveapi.no_valid_node', error.code)
        self.assertEqual(409, error.status)
        self.assertIn('2 reserved', error.detail)
        self.assertTrue(error.request_id.startswith('req-'))

    def test_endpoint_may_name_the_root_or_v1(self):
        # A catalog lists either; both reach the same routes.
        for endpoint in (self.server.url + '/v1', self.server.url + '/v1/',
                         self.server.url + '/'):
            other = client.ReservationClient(ks_session.Session(),
                                             endpoint_override=endpoint)
            instance_uuid = str(uuid.uuid4())
            reservation = other.reserve(instance_uuid, 'compute-1',
                                        examples.REQUEST_SPEC)
            self.assertEqual([reservation['uuid']], [
                item['uuid'] for item in other.list(
                    instance_uuid=instance_uuid.upper())])
            self.assertTrue(other.release(reservation['uuid']))

    def test_capacity(self):
        self._reserve(str(uuid.uuid4()))
        (gold,) = self.client.capacity(host='compute-1')
        self.assertEqual(
            {'resource_class': 'CUSTOM_BAREMETAL_GOLD', 'total': 2,
             'available': 1, 'reserved': 1, 'reserved_by_host': 1},
            {key: gold[key] for key in ('resource_class', 'total',
                                        'available', 'reserved',
                                        'reserved_by_host')})

    def test_summary_of_a_partition(self):
        self._reserve(str(uuid.uuid4()))
        summary = self.client.summary('compute-1')
        (gold,) = summary['capacity']
        self.assertEqual((2, 1, 1), (gold['total'], gold['available'],
                                     gold['reserved_by_host']))
        self.assertEqual('compute-1', summary['host'])
        self.assertIsInstance(summary['traits'], list)
        self.assertIsInstance(summary['architectures'], list)
        # A shard no node is in: nothing to report.
        self.assertEqual([], self.client.summary(
            'compute-1', shard='elsewhere')['capacity'])

    def test_summary_has_a_row_per_running_hold(self):
        # What the driver reports to Placement: the hold's boots reach a
        # host through its own class, whatever the host's partition.
        now = datetime.datetime.now(datetime.timezone.utc)
        hold = client.HoldClient(
            ks_session.Session(), endpoint_override=self.server.url).create(
            'p', 1, examples.REQUEST_SPEC,
            now - datetime.timedelta(seconds=10),
            now + datetime.timedelta(hours=1))
        self.assertEqual('active', hold['state'])
        rows = {row['resource_class']: row for row in self.client.summary(
            'compute-1', shard='elsewhere')['capacity']}
        self.assertEqual([hold['boot_resource_class']], list(rows))
        self.assertEqual(
            (1, 0, 0, 0),
            tuple(rows[hold['boot_resource_class']][key] for key in (
                'total', 'available', 'reserved', 'reserved_by_host')))

    def test_candidates(self):
        held = self._reserve(str(uuid.uuid4()))['node_uuid']
        answer = self.client.candidates(examples.REQUEST_SPEC, limit=5)
        self.assertEqual((1, 2), (answer['count'], answer['total']))
        self.assertEqual(['reserved'], [row['criterion']
                                        for row in answer['excluded']])
        self.assertNotIn(held, [node['uuid'] for node in answer['nodes']])
        elsewhere = self.client.candidates(
            examples.REQUEST_SPEC, shard='elsewhere', conductor_group='',
            candidate_nodes=['node-0'], project_id='p', limit=0)
        self.assertEqual((0, []), (elsewhere['count'], elsewhere['nodes']))
        counted = self.client.candidates(examples.REQUEST_SPEC, explain=False)
        self.assertEqual((1, False), (counted['count'],
                                      'excluded' in counted))


class _Unavailable:
    """A service whose version document answers but every other call gets
    ``status`` (503 unless told); it counts the calls to everything but
    the version document. ``failures`` calls fail, then each answers 204.
    """

    def __init__(self, status=503, failures=None, max_version='1.7'):
        self.calls = []
        self.status = status
        self.failures = failures
        self.max_version = max_version

    def __call__(self, environ, start_response):
        if environ['PATH_INFO'] == '/':
            start_response('200 OK', [('Content-Type', 'application/json')])
            return [json.dumps({'versions': [{
                'id': 'v1', 'min_version': '1.0',
                'max_version': self.max_version}]}).encode()]
        self.calls.append((environ['REQUEST_METHOD'], environ['PATH_INFO'],
                           environ.get('HTTP_OPENSTACK_API_VERSION')))
        if self.failures is not None and len(self.calls) > self.failures:
            start_response('204 No Content', [])
            return []
        status = http.HTTPStatus(self.status)
        start_response('%d %s' % (status, status.phrase),
                       [('Content-Type', 'application/json')])
        return [json.dumps({'errors': [{
            'status': self.status, 'code': 'reserveapi.unavailable',
            'title': status.phrase, 'detail': 'down',
            'request_id': 'req-1'}]}).encode()]


class TestClientFailures(tests_base.TestCase):

    def setUp(self):
        super().setUp()
        self.service = _Unavailable()
        self.server = self.useFixture(
            loopback.LoopbackServer(self.service))
        self.client = client.ReservationClient(
            ks_session.Session(), endpoint_override=self.server.url)

    def test_idempotent_calls_are_retried_with_back_off(self):
        started = time.monotonic()
        error = self.assertRaises(client.ServiceUnavailable,
                                  self.client.release, str(uuid.uuid4()))
        self.assertEqual((503, 'reserveapi.unavailable'),
                         (error.status, error.code))
        self.assertEqual(4, len(self.service.calls))
        # keystoneauth1 waits 0.5 s, 1 s, 2 s between the tries.
        self.assertGreaterEqual(time.monotonic() - started, 3.0)
        # The newest version both sides speak is the client's newest.
        self.assertEqual({'baremetal-reservation 1.6, reservation 1.6'},
                         {version for _, _, version in self.service.calls})

    def test_a_release_is_retried_on_500_and_never_given_up_silently(self):
        self.service.status = 500
        error = self.assertRaises(client.ClientError, self.client.release,
                                  str(uuid.uuid4()))
        self.assertEqual(500, error.status)
        self.assertEqual(4, len(self.service.calls))

    def test_a_release_that_fails_once_succeeds(self):
        self.service.status = 500
        self.service.failures = 1
        self.assertTrue(self.client.release(str(uuid.uuid4())))
        self.assertEqual(['DELETE', 'DELETE'],
                         [method for method, _, _ in self.service.calls])

    def test_other_calls_are_not_retried_on_500(self):
        self.service.status = 500
        self.assertRaises(client.ClientError, self.client.get,
                          str(uuid.uuid4()))
        self.assertEqual(1, len(self.service.calls))

    def test_a_non_idempotent_call_is_sent_once(self):
        self.assertRaises(client.ServiceUnavailable, self.client.take_over,
                          str(uuid.uuid4()), 'compute-2')
        self.assertEqual(['PATCH'],
                         [method for method, _, _ in self.service.calls])

    def test_connection_refused_is_service_unavailable(self):
        self.server.stop()
        fresh = client.ReservationClient(
            ks_session.Session(), endpoint_override=self.server.url)
        error = self.assertRaises(client.ServiceUnavailable, fresh.capacity)
        self.assertIsNone(error.status)

    def test_no_common_microversion_is_refused(self):
        self.patch(client.base, 'MIN_VERSION', '1.8')
        self.patch(client.base, 'MAX_VERSION', '1.9')
        error = self.assertRaises(client.ClientError, self.client.capacity)
        self.assertIn('1.0 to 1.7', str(error))
        self.assertEqual([], self.service.calls)

    def test_an_older_service_is_asked_for_its_summary_at_its_newest(self):
        # A service of 1.5 has no holds' rows to give: the driver's
        # summary is read at 1.5 and reports the classes as before.
        self.service.max_version = '1.5'
        self.service.status = 404
        self.assertRaises(client.NotFound, self.client.summary, 'compute-1')
        self.assertEqual([('GET', '/v1/capacity',
                           'baremetal-reservation 1.5, reservation 1.5')],
                         self.service.calls)

    def test_an_older_service_is_never_sent_what_it_would_ignore(self):
        # A service of 1.0 knows no partitions and no summary: the client
        # refuses before it sends anything, never reserving in the whole
        # cloud for a host limited to one shard.
        self.service.max_version = '1.0'
        self.assertEqual('1.0', self.client.api_version)
        self.assertFalse(self.client.speaks(client.base.PARTITIONS_VERSION))
        error = self.assertRaises(
            client.ClientError, self.client.reserve, str(uuid.uuid4()),
            'compute-1', examples.REQUEST_SPEC, shard='sa')
        self.assertIn('needs microversion 1.1', error.detail)
        error = self.assertRaises(client.ClientError, self.client.summary,
                                  'compute-1')
        self.assertIn('needs microversion 1.2', error.detail)
        error = self.assertRaises(client.ClientError, self.client.candidates,
                                  examples.REQUEST_SPEC)
        self.assertIn('needs microversion 1.3', error.detail)
        self.assertEqual([], self.service.calls)


class TestAggregateMirrorClient(mirror_base.MirrorAPITestCase):

    def setUp(self):
        super().setUp()
        self.provider = self.placement.create_provider(name='compute-1')
        server = self.useFixture(loopback.LoopbackServer(self.app.app))
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
        other = mirror_base.new_uuid()
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
        server = self.useFixture(loopback.LoopbackServer(
            app.setup_app()))
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


class TestHoldClient(base.DBTestCase):

    def setUp(self):
        super().setUp()
        self.config(auth_strategy='noauth', group='api')
        self.config(max_limit=1, group='api')
        inventory.sync(self, [inventory.node('node-%d' % index)
                              for index in range(2)])
        self.server = self.useFixture(loopback.LoopbackServer(
            app.setup_app()))
        self.client = client.HoldClient(ks_session.Session(),
                                        endpoint_override=self.server.url)
        self.start = (datetime.datetime.now(datetime.timezone.utc)
                      .replace(microsecond=0) + datetime.timedelta(hours=3))

    def _hold(self, amount=1, project_id='p', **fields):
        return self.client.create(
            project_id, amount, examples.REQUEST_SPEC, self.start,
            self.start + datetime.timedelta(hours=2), **fields)

    def test_hold_lifecycle(self):
        hold = self._hold(conductor_group='')
        self.assertEqual(('pending', self.start.isoformat()),
                         (hold['state'], hold['start']))
        self.assertEqual(hold, self.client.get(hold['uuid']))
        end = self.start + datetime.timedelta(hours=4)
        updated = self.client.update(hold['uuid'], end=end, amount=2)
        self.assertEqual((2, end.isoformat()),
                         (updated['amount'], updated['end']))
        self.assertIsNone(self.client.cancel(hold['uuid']))
        self.assertEqual('cancelled',
                         self.client.get(hold['uuid'])['state'])
        self.assertIsNone(self.client.cancel(hold['uuid']))
        error = self.assertRaises(client.NotFound, self.client.get,
                                  str(uuid.uuid4()))
        self.assertEqual('reserveapi.hold_not_found', error.code)

    def test_list_follows_next_links_with_filters(self):
        made = [self._hold(project_id=project)['uuid']
                for project in ('p', 'q')]
        self.assertEqual(made, [hold['uuid'] for hold in self.client.list()])
        self.assertEqual(made[1:], [hold['uuid'] for hold in
                                    self.client.list(project_id='q')])

    def test_refusals_carry_their_codes(self):
        self._hold(amount=2)
        error = self.assertRaises(client.Conflict, self._hold)
        self.assertEqual((409, 'reserveapi.hold_not_admitted'),
                         (error.status, error.code))
        naive = self.start.replace(tzinfo=None)
        error = self.assertRaises(
            client.ClientError, self.client.create, 'p', 1,
            examples.REQUEST_SPEC, naive, naive + datetime.timedelta(hours=1))
        self.assertEqual((400, 'reserveapi.invalid'),
                         (error.status, error.code))
        self.assertIn('field start must be a date and time with a UTC '
                      'offset', error.detail)

    def test_an_older_service_is_never_asked(self):
        self.client.adapter.default_microversion = '1.4'
        error = self.assertRaises(client.ClientError, self.client.list)
        self.assertIn('holds: needs microversion 1.5', error.detail)

    def test_at_end(self):
        hold = self._hold(at_end='delete')
        self.assertEqual(('delete', 0, 0),
                         (hold['at_end'], hold['pinned'], hold['in_use']))
        self.assertEqual('keep', self.client.get(
            self._hold(project_id='q')['uuid'])['at_end'])
        # At 1.5 a hold has no at_end to ask: refused before it is sent.
        older = client.HoldClient(ks_session.Session(),
                                  endpoint_override=self.server.url,
                                  default_microversion='1.5')
        error = self.assertRaises(
            client.ClientError, older.create, 'r', 1, examples.REQUEST_SPEC,
            self.start, self.start + datetime.timedelta(hours=2),
            at_end='keep')
        self.assertIn("a hold's at_end: needs microversion 1.6",
                      error.detail)
        self.assertEqual(2, len(list(self.client.list())))

    def test_candidates_say_what_a_hold_over_a_window_would_get(self):
        self._hold()
        reservations = client.ReservationClient(
            ks_session.Session(), endpoint_override=self.server.url)
        answer = reservations.candidates(
            examples.REQUEST_SPEC, project_id='q', limit=0,
            start=self.start, end=self.start + datetime.timedelta(hours=1))
        self.assertEqual((2, 1, 1), (answer['count'], answer['promised'],
                                     answer['admissible']))
        self.assertNotIn('admissible', reservations.candidates(
            examples.REQUEST_SPEC, limit=0))
