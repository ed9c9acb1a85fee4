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
import prometheus_client

from reserveapi.cmd import worker
from reserveapi.common import exception
from reserveapi.common import outages
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


class TestRunJob(base.BaseTestCase):
    """A run says when it starts and finishes, at DEBUG; a failure is
    counted, logged as an outage and never raised."""

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name='reserveapi.cmd.worker', level=logging.DEBUG))
        self.useFixture(fixtures.MockPatchObject(
            worker, '_OUTAGES', outages.OutageLog(worker.LOG, 'Job %s')))

    def sample(self, name, **labels):
        return prometheus_client.REGISTRY.get_sample_value(
            'reserveapi_worker_job_' + name, labels) or 0

    def test_start_and_finish(self):
        ran = []
        runs = self.sample('runs_total', worker_job='inventory-sync')
        self.assertTrue(worker.run_job('inventory-sync',
                                       lambda: ran.append(1)))
        self.assertEqual([1], ran)
        self.assertEqual('Running inventory-sync\nFinished inventory-sync\n',
                         self.log.output)
        self.assertEqual(runs + 1, self.sample(
            'runs_total', worker_job='inventory-sync'))
        self.assertGreater(self.sample(
            'last_success_timestamp_seconds', worker_job='inventory-sync'), 0)

    def test_a_failure_is_logged_with_its_cause_and_counted(self):
        def broken():
            raise exception.DatabaseUnavailable(
                cause='OperationalError connection refused',
                server='postgresql 127.0.0.1:5432')

        failures = self.sample('failures_total', worker_job='mirror-retry',
                               cause='database')
        self.assertFalse(worker.run_job('mirror-retry', broken))
        self.assertEqual(failures + 1, self.sample(
            'failures_total', worker_job='mirror-retry', cause='database'))
        lines = self.log.output.splitlines()
        self.assertEqual('Running mirror-retry', lines[0])
        self.assertEqual('Job mirror-retry failed: database postgresql '
                         '127.0.0.1:5432: OperationalError: connection '
                         'refused', lines[1])
        # The traceback, at DEBUG only.
        self.assertEqual('Job mirror-retry failed', lines[2])
        self.assertIn('Traceback', self.log.output)
        self.assertNotIn('Finished', self.log.output)


class TestJobs(tests_base.TestCase):

    def names(self):
        return [name for name, _interval, _job in worker.jobs()]

    def test_file_source(self):
        self.assertEqual(['inventory-sync', 'expire-reservations',
                          'tend-holds', 'mirror-retry', 'sync-aggregates'],
                         self.names())
        self.config(tend_interval=0, group='holds')
        self.assertNotIn('tend-holds', self.names())

    def test_ironic_source_reconciles_with_ironic(self):
        self.config(source='ironic', group='inventory')
        self.assertEqual(['inventory-sync', 'ironic-reconcile',
                          'expire-reservations', 'tend-holds',
                          'mirror-retry', 'sync-aggregates'], self.names())
        self.config(reconcile_interval=0, group='ironic')
        self.assertNotIn('ironic-reconcile', self.names())

    def test_the_sync_job_reads_changes_and_reports_nothing_twice(self):
        jobs = {name: job for name, _interval, job in worker.jobs()}
        self.assertIs(inventory_sync.sync_changes, jobs['inventory-sync'])
