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

"""``POST /v1/aggregates/sync`` and the worker's reconcile pass against
the real Placement service.
"""

from tests.functional import base
from tests.functional.mirror import base as mirror_base

new_uuid = mirror_base.new_uuid


class DriftTestCase(mirror_base.MirrorAPITestCase):
    """Two aggregates of ours, A (compute-1, compute-2) and B (compute-3),
    in sync; then drift is injected behind our back.
    """

    def setUp(self):
        super().setUp()
        self.agg_a, self.agg_b = sorted((new_uuid(), new_uuid()))
        self.rp1 = self.placement.create_provider('compute-1')
        self.rp2 = self.placement.create_provider('compute-2')
        self.rp3 = self.placement.create_provider('compute-3')
        self.stray = self.placement.create_provider('enrolled-by-hand')
        self.foreign = new_uuid()
        for host, aggregate in (('compute-1', self.agg_a),
                                ('compute-2', self.agg_a),
                                ('compute-3', self.agg_b)):
            self.assertEqual(200, self.add_host(host, aggregate).status_int)
        self.desired = [
            {'uuid': self.agg_a, 'hosts': ['compute-1', 'compute-2']},
            {'uuid': self.agg_b, 'hosts': ['compute-3']}]

    def inject_drift(self):
        """compute-1 lost A, compute-3 gained A, a provider of no host got
        B; a foreign aggregate (not ours) on compute-1 is no drift."""
        self.placement.set_aggregates(self.rp1, {self.foreign})
        self.placement.add_aggregates(self.rp3, self.agg_a)
        self.placement.add_aggregates(self.stray, self.agg_b)

    def placement_state(self):
        """Every provider's aggregates and generation."""
        return {rp: self.placement.get_aggregates(rp)
                for rp in (self.rp1, self.rp2, self.rp3, self.stray)}

    def differences(self, response):
        return [(item['aggregate_uuid'], item['host'], item['provider_uuid'],
                 item['difference'], item['action'])
                for item in response.json['differences']]


class TestSync(DriftTestCase):
    scenarios = base.EVERY_BACKEND

    def test_dry_run_reports_exactly_the_drift_and_changes_nothing(self):
        self.inject_drift()
        before = self.placement_state()
        hosts_before = {agg: self.host_states(agg)
                        for agg in (self.agg_a, self.agg_b)}

        response = self.sync(self.desired, dry_run=True)

        self.assertEqual(200, response.status_int, response.text)
        self.assertMatchesSample(response.json,
                                 'aggregates/sync-dry-run-response.json')
        self.assertEqual([
            (self.agg_a, 'compute-1', self.rp1, 'missing', 'none'),
            (self.agg_a, 'compute-3', self.rp3, 'extra', 'none'),
            (self.agg_b, None, self.stray, 'extra', 'none'),
        ], self.differences(response))
        self.assertFalse(response.json['in_sync'])
        self.assertEqual(before, self.placement_state())
        self.assertEqual(hosts_before, {agg: self.host_states(agg)
                                        for agg in (self.agg_a, self.agg_b)})

    def test_compares_from_one_listing_per_aggregate(self):
        # member_of listings already say which of our aggregates each
        # provider has: no provider is read one by one.
        self.inject_drift()
        reads = []
        for rp in (self.rp1, self.rp2, self.rp3, self.stray):
            self.placement.before_request(
                'GET', '/resource_providers/%s/aggregates' % rp,
                reads.append, times=None)

        response = self.sync(self.desired, dry_run=True)

        self.assertEqual(3, len(response.json['differences']))
        self.assertEqual([], reads)

    def test_request_sample(self):
        self.inject_drift()
        with open(base.SAMPLES_DIR + '/aggregates/sync-request.json') as f:
            sample = f.read()
        body = sample.replace(
            '0f8ffa7e-4d5c-4b3a-9a10-2c1f6a3c5e21', self.agg_a).replace(
            '6d2b7f8a-1c3e-4f5a-8b9c-0d1e2f3a4b5c', self.agg_b)

        response = self.app.post('/v1/aggregates/sync', body,
                                 headers=dict(self.admin_headers,
                                              **{'Content-Type':
                                                 'application/json'}))

        self.assertEqual(3, len(response.json['differences']))
        self.assertTrue(response.json['dry_run'])

    def test_in_sync(self):
        response = self.sync(self.desired, dry_run=True)

        self.assertEqual(200, response.status_int)
        self.assertEqual((True, []), (response.json['in_sync'],
                                      response.json['differences']))

    def test_adds_missing_and_keeps_extras_without_prune(self):
        self.inject_drift()
        self.desired[0]['hosts'].append('compute-4')

        response = self.sync(self.desired)

        self.assertEqual(202, response.status_int, response.text)
        self.assertMatchesSample(response.json,
                                 'aggregates/sync-response.json')
        self.assertEqual([
            (self.agg_a, 'compute-1', self.rp1, 'missing', 'added'),
            (self.agg_a, 'compute-3', self.rp3, 'extra', 'kept'),
            (self.agg_a, 'compute-4', None, 'unverified', 'pending'),
            (self.agg_b, None, self.stray, 'extra', 'kept'),
        ], self.differences(response))
        self.assertEqual({self.foreign, self.agg_a},
                         self.placement.aggregates(self.rp1))
        self.assertEqual({self.agg_a, self.agg_b},
                         self.placement.aggregates(self.rp3))
        self.assertEqual({self.agg_b}, self.placement.aggregates(self.stray))
        self.assertEqual({'compute-1': (True, 'synced'),
                          'compute-2': (True, 'synced'),
                          'compute-4': (True, 'pending')},
                         self.host_states(self.agg_a))

        # The new host waits for its provider like any other.
        rp4 = self.placement.create_provider('compute-4')
        self.run_worker()
        self.assertEqual({self.agg_a}, self.placement.aggregates(rp4))

    def test_prune_removes_only_extras_of_our_aggregates(self):
        self.inject_drift()

        response = self.sync(self.desired, prune=True)

        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual([
            (self.agg_a, 'compute-1', self.rp1, 'missing', 'added'),
            (self.agg_a, 'compute-3', self.rp3, 'extra', 'removed'),
            (self.agg_b, None, self.stray, 'extra', 'removed'),
        ], self.differences(response))
        self.assertTrue(response.json['in_sync'])
        self.assertEqual({self.foreign, self.agg_a},
                         self.placement.aggregates(self.rp1))
        self.assertEqual({self.agg_a}, self.placement.aggregates(self.rp2))
        self.assertEqual({self.agg_b}, self.placement.aggregates(self.rp3))
        self.assertEqual(set(), self.placement.aggregates(self.stray))
        self.assertTrue(
            self.sync(self.desired, dry_run=True).json['in_sync'])

    def test_desired_state_is_complete(self):
        # B is ours but not named any more: none of its hosts should
        # have it, and with prune they stop having it.
        report = self.sync(self.desired[:1], prune=True).json

        self.assertEqual([(self.agg_b, 'compute-3', self.rp3, 'extra',
                           'removed')],
                         [tuple(item[key] for key in (
                             'aggregate_uuid', 'host', 'provider_uuid',
                             'difference', 'action'))
                          for item in report['differences']])
        self.assertEqual(set(), self.placement.aggregates(self.rp3))
        self.assertEqual({}, self.host_states(self.agg_b))

    def test_records_the_desired_state(self):
        agg_c = new_uuid()
        self.desired.append({'uuid': agg_c, 'hosts': ['compute-2']})

        response = self.sync(self.desired)

        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual({self.agg_a, agg_c},
                         self.placement.aggregates(self.rp2))
        self.assertEqual({'compute-2': (True, 'synced')},
                         self.host_states(agg_c))

    def test_placement_down(self):
        self.placement.stop()

        response = self.sync(self.desired)

        self.assertEqual(202, response.status_int, response.text)
        self.assertFalse(response.json['in_sync'])
        self.assertEqual(
            {('unverified', 'pending')},
            {(item['difference'], item['action'])
             for item in response.json['differences']})
        self.assertIn('Placement is unavailable',
                      response.json['differences'][0]['detail'])


class TestReconcile(DriftTestCase):
    """The worker's periodic pass: our recorded state is the desired one."""

    scenarios = base.EVERY_BACKEND

    def test_repairs_recorded_memberships_and_keeps_unbacked_extras(self):
        self.inject_drift()
        self.remove_host('compute-2', self.agg_a)
        self.placement.add_aggregates(self.rp2, self.agg_a)

        report = self.run_job('sync-aggregates')

        self.assertEqual(
            [(self.agg_a, 'compute-1', self.rp1, 'missing', 'added'),
             (self.agg_a, 'compute-2', self.rp2, 'extra', 'removed'),
             (self.agg_a, 'compute-3', self.rp3, 'extra', 'kept'),
             (self.agg_b, None, self.stray, 'extra', 'kept')],
            [(item.aggregate_uuid, item.host, item.provider_uuid,
              item.difference, item.action) for item in report.differences])
        self.assertEqual({self.foreign, self.agg_a},
                         self.placement.aggregates(self.rp1))
        self.assertEqual(set(), self.placement.aggregates(self.rp2))
        self.assertEqual({self.agg_a, self.agg_b},
                         self.placement.aggregates(self.rp3))

    def test_nothing_recorded_needs_no_placement(self):
        for aggregate in (self.agg_a, self.agg_b):
            self.delete_aggregate(aggregate)
            self.run_job('sync-aggregates')
        self.placement.stop()

        report = self.run_job('sync-aggregates')

        self.assertEqual((0, []), (report.aggregates, report.differences))
        self.assertEqual([], self.request(
            'GET', '/v1/aggregates').json['aggregates'])

    def test_deleted_aggregate_is_removed_everywhere_then_forgotten(self):
        self.placement.stop()
        self.delete_aggregate(self.agg_a)
        self.placement.start()
        self.placement.add_aggregates(self.stray, self.agg_a)

        report = self.run_job('sync-aggregates')

        self.assertTrue(report.in_sync, report)
        self.assertEqual(set(), self.placement.members(self.agg_a))
        self.assertEqual({self.agg_b}, self.placement.aggregates(self.rp3))
        response = self.request('GET', '/v1/aggregates/%s' % self.agg_a)
        self.assertError(response, 404, 'reserveapi.aggregate_not_found')


class TestNewProviders(mirror_base.MirrorAPITestCase):

    def test_provider_created_later_inherits_on_reconcile(self):
        self.use_nova()
        first = self.ironic_node('ironic-1')
        self.add_host('ironic-1')
        enrolled_later = self.ironic_node('ironic-1')
        elsewhere = self.ironic_node('ironic-2')
        self.assertEqual({first}, self.placement.members(self.aggregate))

        report = self.run_job('sync-aggregates')

        self.assertEqual([('missing', 'added')],
                         [(item.difference, item.action)
                          for item in report.differences])
        self.assertEqual({first, enrolled_later},
                         self.placement.members(self.aggregate))
        self.assertEqual(set(), self.placement.aggregates(elsewhere))
        self.assertEqual({'ironic-1': (True, 'synced')}, self.host_states())

    def test_nova_down_leaves_everything_unverified(self):
        nova = self.use_nova()
        node = self.ironic_node('ironic-1')
        self.add_host('ironic-1')
        nova.stop()

        report = self.run_job('sync-aggregates')

        self.assertFalse(report.in_sync)
        self.assertEqual([('ironic-1', 'unverified', 'pending')],
                         [(item.host, item.difference, item.action)
                          for item in report.differences])
        self.assertEqual({self.aggregate}, self.placement.aggregates(node))
        nova.start()
        self.run_worker()
        self.assertEqual({'ironic-1': (True, 'synced')}, self.host_states())
