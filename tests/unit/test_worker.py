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

"""reserveapi-worker --once: every job runs, a failure is reported."""

import logging

import fixtures
from oslotest import base

from reserveapi.cmd import worker
from reserveapi.inventory import sync as inventory_sync
from tests import base as tests_base


class TestRunOnce(base.BaseTestCase):

    def test_a_failing_job_does_not_stop_the_others(self):
        ran = []

        def broken():
            ran.append('broken')
            raise RuntimeError('inventory file is gone')

        jobs = [('broken', 1, broken), ('fine', 1, lambda: ran.append('fine'))]
        self.assertEqual(1, worker.run_once(jobs))
        self.assertEqual(['broken', 'fine'], ran)

    def test_all_good(self):
        ran = []
        self.assertEqual(0, worker.run_once(
            [('fine', 1, lambda: ran.append('fine'))]))
        self.assertEqual(['fine'], ran)


class TestTraced(base.BaseTestCase):
    """The daemon's jobs say when they start and finish, at DEBUG."""

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name='reserveapi.cmd.worker', level=logging.DEBUG))

    def test_start_and_finish(self):
        ran = []
        worker._traced('inventory-sync', lambda: ran.append(1))()
        self.assertEqual([1], ran)
        self.assertEqual('Running inventory-sync\nFinished inventory-sync\n',
                         self.log.output)

    def test_a_failure_propagates_unfinished(self):
        def broken():
            raise RuntimeError('database is gone')

        self.assertRaises(RuntimeError, worker._traced('mirror-retry', broken))
        self.assertEqual('Running mirror-retry\n', self.log.output)


class TestJobs(tests_base.TestCase):

    def names(self):
        return [name for name, _interval, _job in worker.jobs()]

    def test_file_source(self):
        self.assertEqual(['inventory-sync', 'expire-reservations',
                          'mirror-retry', 'sync-aggregates'], self.names())

    def test_ironic_source_reconciles_with_ironic(self):
        self.config(source='ironic', group='inventory')
        self.assertEqual(['inventory-sync', 'ironic-reconcile',
                          'expire-reservations', 'mirror-retry',
                          'sync-aggregates'], self.names())
        self.config(reconcile_interval=0, group='ironic')
        self.assertNotIn('ironic-reconcile', self.names())

    def test_the_sync_job_reads_changes_and_reports_nothing_twice(self):
        jobs = {name: job for name, _interval, job in worker.jobs()}
        self.assertIs(inventory_sync.sync_changes, jobs['inventory-sync'])
