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

"""``/v1/aggregates``: add, remove and delete over the API, mirrored into
the real Placement service, durable across Placement outages.
"""

import threading
import time

import webob

from tests.functional import base
from tests.functional.mirror import base as mirror_base

new_uuid = mirror_base.new_uuid


class TestMembership(mirror_base.MirrorAPITestCase):
    scenarios = base.EVERY_BACKEND

    def test_add_then_remove_host(self):
        rp = self.placement.create_provider('compute-1')

        response = self.add_host('compute-1')

        self.assertEqual(200, response.status_int, response.text)
        self.assertMatchesSample(response.json,
                                 'aggregates/host-add-response.json')
        self.assertEqual({self.aggregate}, self.placement.aggregates(rp))
        self.assertEqual({'compute-1': (True, 'synced')}, self.host_states())

        response = self.remove_host('compute-1')

        self.assertEqual(200, response.status_int, response.text)
        self.assertMatchesSample(response.json,
                                 'aggregates/host-remove-response.json')
        self.assertEqual(set(), self.placement.aggregates(rp))
        shown = self.show()
        self.assertEqual(('synced', []), (shown['state'], shown['hosts']))

    def test_repeated_calls_are_idempotent(self):
        rp = self.placement.create_provider('compute-1')
        self.add_host('compute-1')
        generation = self.placement.get_aggregates(rp)[1]

        response = self.add_host('compute-1')

        self.assertEqual(200, response.status_int)
        self.assertEqual(({self.aggregate}, generation),
                         self.placement.get_aggregates(rp))
        self.remove_host('compute-1')
        response = self.remove_host('compute-1')
        self.assertEqual(200, response.status_int)
        self.assertEqual(set(), self.placement.aggregates(rp))

    def test_every_provider_of_the_host(self):
        self.use_nova()
        by_name = self.placement.create_provider('ironic-1')
        nodes = [self.ironic_node('ironic-1') for _ in range(3)]
        other_host = self.ironic_node('ironic-2')

        response = self.add_host('ironic-1')

        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual({by_name, *nodes},
                         self.placement.members(self.aggregate))
        self.assertEqual(set(), self.placement.aggregates(other_host))

        response = self.remove_host('ironic-1')

        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual(set(), self.placement.members(self.aggregate))

    def test_other_aggregates_of_the_provider_survive(self):
        rp = self.placement.create_provider('compute-1')
        theirs = {new_uuid(), new_uuid()}
        self.placement.set_aggregates(rp, theirs)

        self.add_host('compute-1')
        self.assertEqual(theirs | {self.aggregate},
                         self.placement.aggregates(rp))

        self.remove_host('compute-1')
        self.assertEqual(theirs, self.placement.aggregates(rp))

        self.add_host('compute-1')
        self.delete_aggregate()
        self.assertEqual(theirs, self.placement.aggregates(rp))

    def test_generation_conflict_from_a_concurrent_writer(self):
        rp = self.placement.create_provider('compute-1')
        theirs = []

        def concurrent_writer(environ):
            theirs.append(new_uuid())
            self.placement.add_aggregates(rp, theirs[-1])

        path = '/resource_providers/%s/aggregates' % rp
        self.placement.before_request('PUT', path, concurrent_writer)

        response = self.add_host('compute-1')

        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual({theirs[0], self.aggregate},
                         self.placement.aggregates(rp))

        self.placement.before_request('PUT', path, concurrent_writer)
        response = self.remove_host('compute-1')

        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual(set(theirs), self.placement.aggregates(rp))
        self.assertEqual(2, len(theirs))

    def test_host_without_provider_stays_pending(self):
        response = self.add_host('compute-9')

        self.assertEqual(202, response.status_int, response.text)
        self.assertMatchesSample(response.json,
                                 'aggregates/host-add-pending-response.json')
        self.assertEqual(set(), self.placement.members(self.aggregate))

        self.assertEqual((0, 1), self.run_worker())
        self.assertEqual(2, self.show()['hosts'][0]['attempts'])

        rp = self.placement.create_provider('compute-9')
        self.assertEqual((1, 0), self.run_worker())

        self.assertEqual({rp}, self.placement.members(self.aggregate))
        self.assertEqual({'compute-9': (True, 'synced')}, self.host_states())

    def test_leaving_without_provider_is_synced(self):
        response = self.remove_host('compute-9')

        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual('synced', response.json['state'])

    def test_aggregate_uuid_is_canonical(self):
        rp = self.placement.create_provider('compute-1')

        response = self.add_host('compute-1', self.aggregate.upper())

        self.assertEqual(self.aggregate, response.json['aggregate_uuid'])
        self.assertEqual({self.aggregate}, self.placement.aggregates(rp))


class TestPlacementOutage(mirror_base.MirrorAPITestCase):
    """Placement refuses connections: callers get 202, nothing is lost."""

    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        self.leaving = self.placement.create_provider('compute-1')
        self.joining = self.placement.create_provider('compute-2')
        self.assertEqual(200, self.add_host('compute-1').status_int)

    def test_add_and_remove_while_down_then_worker_converges(self):
        self.placement.stop()

        added = self.add_host('compute-2')
        removed = self.remove_host('compute-1')

        for response in (added, removed):
            self.assertEqual(202, response.status_int, response.text)
            self.assertEqual('pending', response.json['state'])
            self.assertEqual(1, response.json['attempts'])
            self.assertIn('Placement is unavailable',
                          response.json['last_error'])
            self.assertIsNotNone(response.json['next_attempt_at'])
        self.assertEqual({'compute-1': (False, 'pending'),
                          'compute-2': (True, 'pending')},
                         self.host_states())
        self.assertEqual('pending', self.show()['state'])
        self.assertEqual({self.leaving},
                         self.placement.members(self.aggregate))

        self.assertEqual((0, 2), self.run_worker())
        self.placement.start()
        self.assertEqual((2, 0), self.run_worker())

        self.assertEqual({self.joining},
                         self.placement.members(self.aggregate))
        self.assertEqual({'compute-2': (True, 'synced')}, self.host_states())
        self.assertEqual('synced', self.show()['state'])

    def test_worker_waits_for_back_off(self):
        self.config(group='mirror', backoff_base=5, backoff_max=30)
        self.placement.stop()
        self.add_host('compute-2')
        delays = []
        for _ in range(5):
            host = self.show()['hosts'][1]
            delays.append(_seconds_between(self.now(),
                                           host['next_attempt_at']))
            self.time.advance_time_seconds(delays[-1] - 1)
            self.assertEqual((0, 0), self.run_job('mirror-retry'))
            self.time.advance_time_seconds(1)
            self.assertEqual((0, 1), self.run_job('mirror-retry'))

        self.assertEqual([5, 10, 20, 30, 30], delays)
        self.assertEqual(6, self.show()['hosts'][1]['attempts'])

    def test_add_then_remove_while_down_ends_removed(self):
        self.placement.stop()
        self.add_host('compute-2')
        self.remove_host('compute-2')
        self.placement.start()

        self.run_worker()

        self.assertEqual(set(), self.placement.aggregates(self.joining))
        self.assertEqual({'compute-1': (True, 'synced')}, self.host_states())

    def test_remove_then_add_while_down_ends_present(self):
        self.placement.stop()
        self.remove_host('compute-1')
        self.add_host('compute-1')
        self.placement.start()

        self.run_worker()

        self.assertEqual({self.aggregate},
                         self.placement.aggregates(self.leaving))
        self.assertEqual({'compute-1': (True, 'synced')}, self.host_states())

    def test_remove_committed_while_worker_applies_add(self):
        self.placement.stop()
        self.add_host('compute-2')
        self.placement.start()
        removals = []

        def remove_meanwhile(environ):
            # The worker has read the provider and is about to write the
            # add; the API's remove is committed, and applied, first.
            removals.append(self.remove_host('compute-2'))

        self.placement.before_request(
            'PUT', '/resource_providers/%s/aggregates' % self.joining,
            remove_meanwhile)

        self.assertEqual((0, 1), self.run_worker())

        self.assertEqual(200, removals[0].status_int, removals[0].text)
        # The stale add landed last, and is not taken for synced...
        self.assertEqual({self.aggregate},
                         self.placement.aggregates(self.joining))
        self.assertEqual((False, 'pending'),
                         self.host_states()['compute-2'])

        self.assertEqual((1, 0), self.run_worker())

        self.assertEqual(set(), self.placement.aggregates(self.joining))
        self.assertNotIn('compute-2', self.host_states())

    def test_delete_aggregate_while_down(self):
        self.placement.stop()

        response = self.delete_aggregate()

        self.assertEqual(202, response.status_int, response.text)
        self.assertTrue(response.json['deleted'])
        self.assertEqual([(False, 'pending')],
                         [(host['member'], host['state'])
                          for host in response.json['hosts']])

        self.placement.start()
        self.run_worker()

        self.assertEqual(set(), self.placement.members(self.aggregate))
        shown = self.show()
        self.assertEqual((True, 'synced', []),
                         (shown['deleted'], shown['state'], shown['hosts']))

    def test_inline_timeout_bounds_a_hanging_placement(self):
        self.config(group='mirror', inline_timeout=0.5)
        released = threading.Event()
        self.addCleanup(released.set)

        def hang(environ):
            released.wait(5)
            return webob.Response(status=503)

        self.placement.before_request('GET', '/resource_providers', hang)

        started = time.monotonic()
        response = self.add_host('compute-2')
        elapsed = time.monotonic() - started

        self.assertEqual(202, response.status_int, response.text)
        self.assertLess(elapsed, 2)
        self.assertEqual(set(), self.placement.aggregates(self.joining))

        self.run_worker()
        self.assertEqual({self.aggregate},
                         self.placement.aggregates(self.joining))

    def test_inline_timeout_zero_leaves_everything_to_the_worker(self):
        self.config(group='mirror', inline_timeout=0)

        response = self.add_host('compute-2')

        self.assertEqual(202, response.status_int, response.text)
        self.assertEqual((0, None), (response.json['attempts'],
                                     response.json['last_error']))
        self.assertEqual(set(), self.placement.aggregates(self.joining))

        self.assertEqual((1, 0), self.run_job('mirror-retry'))
        self.assertEqual({self.aggregate},
                         self.placement.aggregates(self.joining))

    def test_placement_server_error_is_pending_too(self):
        self.placement.before_request(
            'GET', '/resource_providers',
            lambda environ: webob.Response(status=500))

        response = self.add_host('compute-2')

        self.assertEqual(202, response.status_int, response.text)
        self.assertIn('returned 500', response.json['last_error'])
        self.run_worker()
        self.assertEqual({self.aggregate},
                         self.placement.aggregates(self.joining))


def _seconds_between(now, timestamp):
    return round((mirror_base.parse_timestamp(timestamp)
                  - now).total_seconds())


class TestDeleteAggregate(mirror_base.MirrorAPITestCase):
    scenarios = base.EVERY_BACKEND

    def test_every_provider_leaves(self):
        rps = [self.placement.create_provider('compute-%d' % number)
               for number in (1, 2)]
        for host in ('compute-1', 'compute-2'):
            self.add_host(host)
        stray = self.placement.create_provider('put-there-by-hand')
        theirs = new_uuid()
        self.placement.add_aggregates(stray, self.aggregate, theirs)

        response = self.delete_aggregate()

        self.assertEqual(200, response.status_int, response.text)
        self.assertMatchesSample(response.json,
                                 'aggregates/aggregate-delete-response.json')
        self.assertEqual(set(), self.placement.members(self.aggregate))
        self.assertEqual({theirs}, self.placement.aggregates(stray))
        for rp in rps:
            self.assertEqual(set(), self.placement.aggregates(rp))

    def test_forgotten_once_a_reconcile_found_it_gone(self):
        self.placement.create_provider('compute-1')
        self.add_host('compute-1')
        self.delete_aggregate()
        self.assertTrue(self.show()['deleted'])

        self.run_job('sync-aggregates')

        response = self.request('GET', '/v1/aggregates/%s' % self.aggregate)
        self.assertError(response, 404, 'reserveapi.aggregate_not_found')

    def test_unknown_aggregate_is_deleted_anyway(self):
        rp = self.placement.create_provider('put-there-by-hand')
        self.placement.add_aggregates(rp, self.aggregate)

        response = self.delete_aggregate()

        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual(set(), self.placement.aggregates(rp))

    def test_host_joining_revives_it(self):
        rp = self.placement.create_provider('compute-1')
        self.delete_aggregate()

        self.add_host('compute-1')
        self.run_job('sync-aggregates')

        shown = self.show()
        self.assertEqual((False, 'synced'), (shown['deleted'], shown['state']))
        self.assertEqual({self.aggregate}, self.placement.aggregates(rp))


class TestRead(mirror_base.MirrorAPITestCase):
    scenarios = base.EVERY_BACKEND

    def test_show(self):
        self.placement.create_provider('compute-1')
        self.add_host('compute-1')
        self.add_host('compute-2')

        shown = self.show()

        self.assertMatchesSample(shown,
                                 'aggregates/aggregate-show-response.json')
        self.assertEqual(['compute-1', 'compute-2'],
                         [host['host'] for host in shown['hosts']])

    def test_unknown(self):
        response = self.request('GET', '/v1/aggregates/%s' % new_uuid())
        self.assertError(response, 404, 'reserveapi.aggregate_not_found')

    def test_list_pages(self):
        self.placement.create_provider('compute-1')
        uuids = sorted(new_uuid() for _ in range(3))
        for aggregate in uuids:
            self.add_host('compute-1', aggregate)

        first = self.request('GET', '/v1/aggregates?limit=2')

        self.assertEqual(200, first.status_int, first.text)
        self.assertMatchesSample(first.json,
                                 'aggregates/aggregates-list-response.json')
        self.assertEqual(uuids[:2], [item['uuid']
                                     for item in first.json['aggregates']])
        second = self.request('GET', first.json['next'])
        self.assertEqual(uuids[2:], [item['uuid']
                                     for item in second.json['aggregates']])
        self.assertNotIn('next', second.json)

        newest_first = self.request(
            'GET', '/v1/aggregates?sort_key=uuid&sort_dir=desc')
        self.assertEqual(uuids[::-1], [item['uuid'] for item in
                                       newest_first.json['aggregates']])


class TestBadInput(mirror_base.MirrorAPITestCase):
    """400 in the standard format, and nothing stored or mirrored."""

    def setUp(self):
        super().setUp()
        self.rp = self.placement.create_provider('compute-1')

    def assertNothingChanged(self):
        self.assertEqual([], self.request('GET',
                                          '/v1/aggregates').json['aggregates'])
        self.assertEqual(set(), self.placement.aggregates(self.rp))

    def test_bad_paths(self):
        for method, path in (
                ('PUT', '/v1/aggregates/not-a-uuid/hosts/compute-1'),
                ('DELETE', '/v1/aggregates/not-a-uuid/hosts/compute-1'),
                ('DELETE', '/v1/aggregates/not-a-uuid'),
                ('GET', '/v1/aggregates/not-a-uuid'),
                ('PUT', '/v1/aggregates/%s/hosts/a%%2Fb' % self.aggregate),
                ('PUT', '/v1/aggregates/%s/hosts/%%20' % self.aggregate),
                ('PUT', '/v1/aggregates/%s/hosts/%s'
                 % (self.aggregate, 'h' * 256)),
                ('GET', '/v1/aggregates?limit=0'),
                ('GET', '/v1/aggregates?sort_key=host'),
                ('GET', '/v1/aggregates?marker=%s' % self.aggregate)):
            response = self.request(method, path)
            self.assertError(response, 400, 'reserveapi.invalid')
        # No host is no route at all.
        for method, path in (
                ('PUT', '/v1/aggregates/%s/hosts/' % self.aggregate),
                ('DELETE', '/v1/aggregates/%s/hosts' % self.aggregate)):
            self.assertError(self.request(method, path), 404,
                             'reserveapi.not_found')
        self.assertNothingChanged()

    def test_longest_host_name_is_fine(self):
        name = 'h' * 255

        response = self.add_host(name)

        # Placement's provider names stop at 200 characters, so such a
        # host can only have providers through Nova: none here.
        self.assertEqual(202, response.status_int, response.text)
        self.assertEqual({name: (True, 'pending')}, self.host_states())

    def test_bad_sync_bodies(self):
        good = {'uuid': self.aggregate, 'hosts': ['compute-1']}
        for body in (
                {},
                {'aggregates': 'all'},
                {'aggregates': [good], 'force': True},
                {'aggregates': [dict(good, name='agg-1')]},
                {'aggregates': [{'uuid': 'nope', 'hosts': []}]},
                {'aggregates': [{'uuid': self.aggregate}]},
                {'aggregates': [{'uuid': self.aggregate, 'hosts': None}]},
                {'aggregates': [{'uuid': self.aggregate, 'hosts': ['']}]},
                {'aggregates': [{'uuid': self.aggregate, 'hosts': [7]}]},
                {'aggregates': [{'uuid': self.aggregate,
                                 'hosts': ['h' * 256]}]},
                {'aggregates': [good, good]}):
            response = self.request('POST', '/v1/aggregates/sync', body)
            self.assertError(response, 400, 'reserveapi.invalid')
        response = self.app.post('/v1/aggregates/sync', 'not json',
                                 headers=self.admin_headers, status='*',
                                 content_type='application/json')
        self.assertError(response, 400, 'reserveapi.invalid')
        self.assertNothingChanged()


class TestPolicy(mirror_base.MirrorAPITestCase):

    def calls(self):
        host = '/v1/aggregates/%s/hosts/compute-1' % self.aggregate
        return (('PUT', host, None), ('DELETE', host, None),
                ('DELETE', '/v1/aggregates/%s' % self.aggregate, None),
                ('GET', '/v1/aggregates', None),
                ('GET', '/v1/aggregates/%s' % self.aggregate, None),
                ('POST', '/v1/aggregates/sync',
                 {'aggregates': [], 'dry_run': True}))

    def test_project_roles_are_refused(self):
        rp = self.placement.create_provider('compute-1')
        for roles in (['member', 'reader'], ['reader'], []):
            for method, path, body in self.calls():
                response = self.request(method, path, body,
                                        headers=self.headers_for(roles))
                self.assertError(response, 403, 'reserveapi.forbidden')
        self.assertEqual([], self.request(
            'GET', '/v1/aggregates').json['aggregates'])
        self.assertEqual(set(), self.placement.aggregates(rp))

    def test_service_role_is_allowed(self):
        rp = self.placement.create_provider('compute-1')
        for method, path, body in self.calls():
            response = self.request(method, path, body,
                                    headers=self.service_headers)
            self.assertLess(response.status_int, 300, response.text)
        self.assertEqual(set(), self.placement.aggregates(rp))
