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

"""Concurrent clients against two API processes on one SQLite file,
claiming in the real Ironic: a claim Ironic refuses, or cannot answer, is
undone without a 500 and never leaves a reservation Ironic does not hold.
"""

import concurrent.futures
import http.client
import json
import os
import socket
import subprocess
import sys
import time
import uuid as uuidlib

import fixtures
from testtools import content

from tests import examples
from tests.ironic import base

CLIENTS = 8
START_TIMEOUT = 60
REQUEST_TIMEOUT = 60


def _command(name):
    return os.path.join(os.path.dirname(sys.executable), name)


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class TestConcurrentClaims(base.IronicTestCase):

    def setUp(self):
        super().setUp()
        self.workdir = self.useFixture(fixtures.TempDir()).path
        self.config_file = os.path.join(self.workdir, 'reserveapi.conf')
        with open(self.config_file, 'w') as config:
            config.write(
                '[DEFAULT]\nstate_path = %(dir)s\n'
                '[api]\nauth_strategy = noauth\n'
                '[database]\nconnection = sqlite:///%(dir)s/api.sqlite\n'
                '[inventory]\nsource = ironic\nsync_interval = 0\n'
                '[ironic]\nauth_type = none\nendpoint_override = %(url)s\n'
                'api_max_retries = 0\n'
                % {'dir': self.workdir, 'url': self.ironic.endpoint})
        self.run_command('reserveapi-dbsync', 'upgrade')

    def run_command(self, name, *argv):
        result = subprocess.run(
            [_command(name), '--config-file', self.config_file] + list(argv),
            capture_output=True, text=True, timeout=120)
        self.assertEqual(0, result.returncode, result.stderr)
        return result.stdout

    def start_api(self):
        self.port = _free_port()
        log = open(os.path.join(self.workdir, 'gunicorn.log'), 'w')
        self.addCleanup(log.close)
        self.addOnException(lambda exc_info: self.addDetail(
            'gunicorn.log', content.text_content(open(log.name).read())))
        server = subprocess.Popen(
            [sys.executable, '-m', 'gunicorn', '--workers', '2',
             '--threads', '4', '--bind', '127.0.0.1:%d' % self.port,
             '--timeout', str(REQUEST_TIMEOUT),
             'reserveapi.wsgi.api:application'],
            env=dict(os.environ, RESERVEAPI_CONFIG_FILE=self.config_file),
            stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(self.stop_api, server)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and server.poll() is None:
            try:
                if self.call('GET', '/v1')[0] == 200:
                    return
            except OSError:
                time.sleep(0.2)
        with open(log.name) as output:
            self.fail('gunicorn did not serve: %s' % output.read()[-2000:])

    @staticmethod
    def stop_api(server):
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()

    def call(self, method, path, body=None):
        connection = http.client.HTTPConnection('127.0.0.1', self.port,
                                                timeout=REQUEST_TIMEOUT)
        try:
            connection.request(
                method, path, body=json.dumps(body) if body else None,
                headers={'Content-Type': 'application/json'})
            response = connection.getresponse()
            return response.status, json.loads(response.read() or b'null')
        finally:
            connection.close()

    def reserve_concurrently(self, count):
        """``count`` POSTs from CLIENTS threads: [(instance, status,
        body)]."""
        def reserve(_):
            instance = str(uuidlib.uuid4())
            status, body = self.call('POST', '/v1/reservations', {
                'instance_uuid': instance, 'host': 'compute-1',
                'request_spec': examples.REQUEST_SPEC})
            return instance, status, body

        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            return list(pool.map(reserve, range(count)))

    def live_reservations(self):
        status, body = self.call('GET', '/v1/reservations?state=reserved')
        self.assertEqual(200, status, body)
        return {r['node_uuid']: r['instance_uuid']
                for r in body['reservations']}

    def test_refused_and_failed_claims_leave_nothing_behind(self):
        nodes = self.ironic.seed_nodes(32, **base.GOLD)
        self.run_command('reserveapi-manage', 'sync-nodes')
        # Taken behind our back, after our sync read them free.
        taken = {node: str(uuidlib.uuid4()) for node in nodes[:6]}
        for node, instance in taken.items():
            self.ironic.update_node(node, instance_uuid=instance)
        self.start_api()

        answers = self.reserve_concurrently(16)

        self.assertLessEqual({status for _i, status, _b in answers},
                             {201, 409}, answers)
        given = {body['node_uuid']: instance
                 for instance, status, body in answers if status == 201}
        self.assertGreaterEqual(len(given), 10)
        self.assertEqual(len(given), len([a for a in answers
                                          if a[1] == 201]))
        self.assertEqual(set(), set(given) & set(taken))
        self.assertEqual(given, self.live_reservations())
        in_ironic = {node['uuid']: node['instance_uuid']
                     for node in self.ironic.list_nodes()}
        for node, instance in given.items():
            self.assertEqual(instance, in_ironic[node])
        for node, instance in taken.items():
            self.assertEqual(instance, in_ironic[node])

        self.ironic.stop()
        answers = self.reserve_concurrently(CLIENTS)

        # Racing for the same free node is still a 409; nothing is a 500,
        # nothing is left reserved.
        codes = {(status, body['errors'][0]['code'])
                 for _i, status, body in answers}
        self.assertLessEqual(codes, {(503, 'reserveapi.ironic_unavailable'),
                                     (409, 'reserveapi.no_valid_node')},
                             answers)
        self.assertIn((503, 'reserveapi.ironic_unavailable'), codes)
        self.assertEqual(given, self.live_reservations())
