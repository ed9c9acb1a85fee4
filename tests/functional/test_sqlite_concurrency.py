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

"""The embedded default under concurrency: the demo configuration
(``etc/reserveapi/reserveapi-demo.conf``: SQLite, no Keystone, no
Placement) served by ``reserveapi-api``, whose threads write at once.

SQLite lets one writer in at a time; a write that finds another in
flight must wait for it, never fail: a compute host that gets a 500 for
its DELETE leaks its node, an aggregate change that fails is a Nova
change never stored. Concurrent reservations, releases and aggregate
changes get only 2xx (or 409, for a pool that ran out) and leave
nothing behind.
"""

import concurrent.futures
import configparser
import http.client
import json
import os
import uuid

from oslotest import base

from reserveapi_testing import deployment
from reserveapi_testing import examples
from reserveapi_testing import inventory

DEMO_CONFIG = os.path.join(os.path.dirname(__file__), '..', '..', 'etc',
                           'reserveapi', 'reserveapi-demo.conf')
POOL_SIZE = 16
THREADS = 16
HOSTS = ['compute-%d' % index for index in range(12)]


class TestSQLiteDemoUnderConcurrency(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.deployment = self.useFixture(deployment.Deployment(
            [inventory.node('node-%02d' % index)
             for index in range(POOL_SIZE)]))
        self._use_demo_configuration()
        self.deployment.migrate()
        synced = self.deployment.run('reserveapi-manage', 'sync-nodes')
        self.assertEqual(0, synced.returncode, synced.stderr)
        self.log = self.deployment.start_api()

    def _use_demo_configuration(self):
        """The demo's options; only the paths and the port are ours."""
        demo = configparser.ConfigParser(interpolation=None)
        demo.read(DEMO_CONFIG)
        ours = self.deployment.config
        for section in demo.sections():
            values = dict(demo[section])
            values.pop('state_path', None)
            values.pop('port', None)
            values.pop('file', None)
            ours.setdefault(section, {}).update(values)
        self.assertNotIn('database', demo.sections())  # SQLite by default
        # No Placement runs beside the demo: its changes stay pending.
        self.assertEqual('none', demo['placement']['auth_type'])
        self.deployment.config['database'] = {
            'connection': self.deployment.database_url}
        self.deployment.write_config()

    def call(self, method, path, body=None):
        connection = http.client.HTTPConnection(
            '127.0.0.1', self.deployment.port, timeout=120)
        try:
            connection.request(
                method, path, body=None if body is None else json.dumps(body),
                headers={'Content-Type': 'application/json'})
            response = connection.getresponse()
            return (method, path, response.status,
                    json.loads(response.read() or b'null'))
        finally:
            connection.close()

    def all_at_once(self, calls):
        with concurrent.futures.ThreadPoolExecutor(THREADS) as executor:
            return list(executor.map(lambda call: self.call(*call), calls))

    def assertOnly(self, statuses, results):
        wrong = [result for result in results if result[2] not in statuses]
        self.assertEqual([], wrong)

    def reserve_call(self, host):
        return ('POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'host': host,
            'request_spec': examples.REQUEST_SPEC})

    def test_writes_wait_for_each_other(self):
        aggregate = str(uuid.uuid4())
        # More requests than nodes, and the aggregate's hosts joining,
        # all at once.
        results = self.all_at_once(
            [self.reserve_call(HOSTS[index % len(HOSTS)])
             for index in range(POOL_SIZE + 8)]
            + [('PUT', '/v1/aggregates/%s/hosts/%s' % (aggregate, host))
               for host in HOSTS])
        self.assertOnly({200, 201, 202, 409}, results)
        granted = [body for method, _p, status, body in results
                   if method == 'POST' and status == 201]
        self.assertEqual(POOL_SIZE, len(granted))
        self.assertEqual(POOL_SIZE,
                         len({body['node_uuid'] for body in granted}))
        members = self.call('GET', '/v1/aggregates/%s' % aggregate)[3]
        self.assertEqual(sorted(HOSTS), sorted(
            row['host'] for row in members['hosts'] if row['member']))

        # Every release and every host leaving, at once.
        results = self.all_at_once(
            [('DELETE', '/v1/reservations/%s' % body['uuid'])
             for body in granted]
            + [('DELETE', '/v1/aggregates/%s/hosts/%s' % (aggregate, host))
               for host in HOSTS])
        self.assertOnly({200, 202, 204}, results)

        self.assertEqual([], self.call('GET', '/v1/reservations')[3][
            'reservations'])
        nodes = self.call('GET', '/v1/nodes?reserved=true')[3]['nodes']
        self.assertEqual([], nodes)
        members = self.call('GET', '/v1/aggregates/%s' % aggregate)[3]
        self.assertEqual([], [row['host'] for row in members['hosts']
                              if row['member']])
        with open(self.log) as log:
            errors = [line for line in log if ' ERROR ' in line
                      or 'Traceback' in line]
        self.assertEqual([], errors)
