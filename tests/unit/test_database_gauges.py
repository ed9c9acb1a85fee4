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

"""A scrape of reserveapi-worker never waits long for the database: it
answers without the database's gauges, and says so, once
``[metrics] database_timeout`` has passed."""

import threading
import time

import fixtures
import prometheus_client
import requests

from reserveapi.monitoring import database
from reserveapi.monitoring import exposition
from tests import base


class TestDatabaseTimeout(base.TestCase):

    def setUp(self):
        super().setUp()
        self.release = threading.Event()
        self.addCleanup(self.release.set)
        self.reads = []

        def hung():
            self.reads.append(1)
            self.release.wait(30)
            return []

        self.useFixture(fixtures.MockPatchObject(
            database, 'read_families', hung))
        self.config(database_timeout=0.1, group='metrics')

    def scrape(self, collector):
        return {sample.name: sample.value
                for family in collector.collect()
                for sample in family.samples}

    def test_a_hung_database_is_a_scrape_without_its_gauges(self):
        collector = database.DatabaseCollector()
        for _ in range(3):
            found = self.scrape(collector)
            self.assertEqual({'reserveapi_database_up',
                              'reserveapi_database_read_duration_seconds'},
                             set(found))
            self.assertEqual(0, found['reserveapi_database_up'])
            self.assertLess(found['reserveapi_database_read_duration_seconds'],
                            5)
        # One read at a time: the scrapes waited for the same one.
        self.assertEqual(1, len(self.reads))
        self.release.set()
        self.assertEqual(1, self.scrape(collector)['reserveapi_database_up'])

    def test_the_scrape_timeout_prometheus_sends_bounds_the_wait(self):
        """Past the scrape timeout the target would be down, and the
        worker-down alert would fire instead of the database's."""
        self.config(database_timeout=30, group='metrics')
        collector = database.DatabaseCollector()
        server = exposition.serve_worker('127.0.0.1', 0, [collector])
        self.addCleanup(prometheus_client.REGISTRY.unregister, collector)
        self.addCleanup(server.shutdown)
        started = time.monotonic()
        text = requests.get(
            'http://127.0.0.1:%d/metrics' % server.server_port,
            headers={'X-Prometheus-Scrape-Timeout-Seconds': '1.5'},
            timeout=10).text
        self.assertLess(time.monotonic() - started, 5)
        self.assertIn('\nreserveapi_database_up 0.0\n', text)
