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

"""A failure that lasts, as the API and the healthcheck log it: one
WARNING naming the database when a route starts answering 503, none
for the requests after it, one INFO when the route answers again."""

import logging

import fixtures
from oslo_db.sqlalchemy import engines

from reserveapi.api import errors
from reserveapi.common import outages
from reserveapi.db import base as db_base
from reserveapi.db import healthcheck
from reserveapi_testing import loopback
from tests.functional import base


class TestOutageLogs(base.APITestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            level=logging.INFO, format='%(levelname)s %(name)s %(message)s'))
        for module in (errors, healthcheck):
            self.useFixture(fixtures.MockPatchObject(
                module, '_OUTAGES' if module is healthcheck else 'OUTAGES',
                outages.OutageLog(module.LOG, '%s')))
        self.port = loopback.free_port()

    def database_down(self):
        engine = engines.create_engine(
            'postgresql+psycopg2://postgres@127.0.0.1:%d/reserveapi'
            % self.port, max_retries=0)
        self.addCleanup(engine.dispose)
        return db_base.main_context_manager.patch_engine(engine)

    def lines(self, logger):
        return [line.split(' ', 2)[0::2] for line in
                self.log.output.splitlines()
                if line.split(' ', 2)[1] == logger]

    def test_a_route_failing_is_logged_once_and_when_it_ends(self):
        restore = self.database_down()
        for _ in range(5):
            self.assertEqual(503, self.request('GET', '/v1/nodes').status_int)
        restore()
        self.assertEqual(200, self.request('GET', '/v1/nodes').status_int)
        lines = self.lines('reserveapi.api.errors')
        self.assertEqual(['WARNING', 'INFO'], [level for level, _ in lines])
        self.assertIn('GET /v1/nodes failed: database postgresql '
                      '127.0.0.1:%d: OperationalError: ' % self.port,
                      lines[0][1])
        self.assertIn('GET /v1/nodes works again after ', lines[1][1])
        self.assertIn('(5 failures)', lines[1][1])

    def test_the_healthcheck_polled_is_logged_once(self):
        restore = self.database_down()
        for _ in range(5):
            self.assertEqual(503, self.app.get('/healthcheck',
                                               status='*').status_int)
        restore()
        self.assertEqual(200, self.app.get('/healthcheck').status_int)
        lines = self.lines('reserveapi.db.healthcheck')
        self.assertEqual(['WARNING', 'INFO'], [level for level, _ in lines])
        self.assertIn('Healthcheck failed: database postgresql '
                      '127.0.0.1:%d: OperationalError: ' % self.port,
                      lines[0][1])
        self.assertNotIn('Traceback', self.log.output)
