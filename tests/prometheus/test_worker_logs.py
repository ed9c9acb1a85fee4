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

"""The database killed under a running reserveapi-worker: a minute of
its output is a few lines that name the cause, and Prometheus, which
still scrapes it, sees the failures by cause; one line per job says when
it works again."""

import os
import time

import testtools
from testtools import content

from reserveapi_testing import monitored

OUTAGE_SECONDS = 60
MAX_LINES = 10


class TestDatabaseKilled(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.deployment = self.useFixture(
            monitored.MonitoredDeployment(api=False))
        self.prometheus = self.deployment.prometheus
        self.addCleanup(lambda: self.addDetail(
            'worker.log', content.content_from_file(
                self.deployment.worker_log, buffer_now=True)))

    def output_since(self, offset):
        with open(self.deployment.worker_log, 'rb') as log:
            log.seek(offset)
            return log.read().decode(errors='replace').splitlines()

    def test_a_minute_of_outage_in_a_few_lines_that_name_the_cause(self):
        jobs = 'count(reserveapi_worker_job_last_success_timestamp_seconds)'
        succeeded = ('count(reserveapi_worker_job_last_success_timestamp_'
                     'seconds > 0)')
        self.prometheus.wait_for(succeeded, lambda count: count and (
            count == self.prometheus.value(jobs)))
        failures = ('sum(reserveapi_worker_job_failures_total'
                    '{cause="database"})')
        failed_before = self.prometheus.value(failures)
        offset = os.path.getsize(self.deployment.worker_log)

        self.deployment.database.kill()
        time.sleep(OUTAGE_SECONDS)
        outage = self.output_since(offset)

        self.assertLess(len(outage), MAX_LINES, '\n'.join(outage))
        warnings = [line for line in outage if ' WARNING ' in line]
        self.assertTrue(warnings)
        self.assertEqual([], [line for line in outage if ' ERROR ' in line])
        server = 'database postgresql 127.0.0.1:%d: ' % (
            self.deployment.database.port)
        self.assertEqual([], [line for line in warnings
                              if server not in line])
        self.assertNotIn('Traceback', '\n'.join(outage))
        # The worker still answers scrapes, and says what fails.
        self.assertEqual(0, self.prometheus.value(
            'max(reserveapi_database_up)'))
        self.assertGreater(self.prometheus.value(failures), failed_before)

        offset = os.path.getsize(self.deployment.worker_log)
        self.deployment.database.start()
        failing = {line.split(' Job ')[1].split()[0] for line in warnings}
        deadline = time.monotonic() + 30
        back = set()
        while back != failing and time.monotonic() < deadline:
            time.sleep(1)
            back = {line.split(' Job ')[1].split()[0]
                    for line in self.output_since(offset)
                    if ' INFO ' in line and ' works again after ' in line}
        self.assertEqual(failing, back)
        self.prometheus.wait_for('max(reserveapi_database_up)',
                                 lambda up: up == 1)
