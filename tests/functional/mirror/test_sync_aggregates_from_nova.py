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

"""The worker's reconcile from Nova against the real Placement and a fake
Nova: what nova-api's hook could not report is repaired, and nothing the
hook reported meanwhile is undone. The same job inside real Nova is in
tests/nova/test_aggregates.py.
"""

import fixtures

from reserveapi.cmd import worker
from reserveapi.common import exception
from reserveapi.mirror import sync as mirror_sync
from tests.functional.mirror import base as mirror_base

JOB = 'sync-aggregates-from-nova'


class TestReconcileFromNova(mirror_base.MirrorAPITestCase):
    """compute-1 and compute-2 are Ironic hosts with two nodes each."""

    def setUp(self):
        super().setUp()
        self.use_nova()
        self.config(group='mirror', reconcile_from_nova_interval=60)
        self.rps = {host: {self.ironic_node(host), self.ironic_node(host)}
                    for host in ('compute-1', 'compute-2')}
        self.nova.add_aggregate(['compute-1'], uuid=self.aggregate)
        self.assertEqual(200, self.add_host('compute-1').status_int)

    def nova_aggregate(self, uuid):
        (aggregate,) = [aggregate for aggregate in self.nova.host_aggregates
                        if aggregate['uuid'] == uuid]
        return aggregate

    def test_off_by_default(self):
        self.config(group='mirror', reconcile_from_nova_interval=0)
        self.assertNotIn(JOB, [name for name, _i, _j in worker.jobs()])

    def test_missed_join_leave_and_delete_are_repaired(self):
        other = mirror_base.new_uuid()
        gone = mirror_base.new_uuid()
        self.assertEqual(200, self.add_host('compute-2', gone).status_int)
        # While the hook could not reach us: compute-1 left, compute-2
        # joined, another aggregate was made with compute-1 in it, and
        # the one compute-2 was in was deleted.
        self.placement.stop()
        self.nova_aggregate(self.aggregate)['hosts'] = ['compute-2']
        self.nova.add_aggregate(['compute-1'], uuid=other)
        self.placement.start()

        report = self.run_job(JOB)

        self.assertTrue(report.in_sync, report)
        self.assertEqual(self.rps['compute-2'],
                         self.placement.members(self.aggregate))
        self.assertEqual(self.rps['compute-1'], self.placement.members(other))
        self.assertEqual(set(), self.placement.members(gone))
        # A host that left and is synced is no longer listed.
        self.assertEqual({'compute-2': (True, 'synced')}, self.host_states())
        # Deleted, gone from every provider, so forgotten.
        self.assertEqual(404, self.request(
            'GET', '/v1/aggregates/%s' % gone).status_int)
        # Nothing left to do.
        self.assertEqual([], self.run_job(JOB).differences)

    def test_a_change_reported_meanwhile_wins(self):
        """Nova answers that compute-1 left (the hook missed it); before
        the job records that, compute-1 joins again and the hook reports
        it. Nova's older answer does not take compute-1 out.
        """
        self.nova_aggregate(self.aggregate)['hosts'] = []
        real = mirror_sync.desired_from_nova

        def hook_reports_in_between():
            desired = real()
            self.nova_aggregate(self.aggregate)['hosts'] = ['compute-1']
            self.time.advance_time_seconds(1)
            self.assertEqual(200, self.add_host('compute-1').status_int)
            return desired

        self.useFixture(fixtures.MockPatchObject(
            mirror_sync, 'desired_from_nova', hook_reports_in_between))
        self.run_job(JOB)
        self.assertEqual(self.rps['compute-1'],
                         self.placement.members(self.aggregate))
        self.assertEqual({'compute-1': (True, 'synced')}, self.host_states())

    def test_prunes_only_when_configured(self):
        stray = next(iter(self.rps['compute-2']))
        self.placement.add_aggregates(stray, self.aggregate)
        report = self.run_job(JOB)
        self.assertEqual([(stray, mirror_sync.EXTRA, mirror_sync.KEPT)],
                         [(item.provider_uuid, item.difference, item.action)
                          for item in report.differences])
        self.assertIn(stray, self.placement.members(self.aggregate))

        self.config(group='mirror', reconcile_from_nova_prune=True)
        self.assertTrue(self.run_job(JOB).in_sync)
        self.assertEqual(self.rps['compute-1'],
                         self.placement.members(self.aggregate))

    def test_nova_down_changes_nothing(self):
        self.nova.stop()
        self.assertRaises(exception.NovaUnavailable, self.run_job, JOB)
        self.assertEqual({'compute-1': (True, 'synced')}, self.host_states())
        self.assertEqual(self.rps['compute-1'],
                         self.placement.members(self.aggregate))
