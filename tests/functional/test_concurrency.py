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

"""Many hosts reserving at once, through several API processes.

gunicorn runs the production WSGI entry point with two worker processes
on loopback; sixteen client threads reserve from a small pool until it is
empty. Every node must be given at most once and every request answered
201 or 409, whatever the interleaving: the guarantee comes from the
database, so it is proven on PostgreSQL and MariaDB.
"""

import concurrent.futures
import http.client
import json
import os
import subprocess
import sys
import uuid

import fixtures

from reserveapi.db import node_sync
from reserveapi.db import reservations as db_reservations
from reserveapi.inventory import sync as inventory_sync
from reserveapi_testing import deployment
from reserveapi_testing import loopback
from tests.functional import base

POOL_SIZE = 12
CLIENTS = 16
REQUESTS_PER_CLIENT = 3
API_WORKERS = 2
START_TIMEOUT = 60
REQUEST_TIMEOUT = 60

SPEC = {
    'memory_mb': 4096, 'vcpus': 4, 'root_gb': 20, 'ephemeral_gb': 0,
    'swap': 0,
    'extra_specs': {'resources:CUSTOM_BAREMETAL_GOLD': '1',
                    'capabilities:boot_mode': 'uefi',
                    'trait:CUSTOM_RAID': 'required'},
    'image': {'id': str(uuid.uuid4()),
              'properties': {'hw_architecture': 'x86_64'}},
}


def _pool_node(index):
    return {
        'uuid': str(uuid.uuid4()), 'name': 'pool-%d' % index,
        'resource_class': 'CUSTOM_BAREMETAL_GOLD', 'memory_mb': 8192,
        'cpus': 8, 'local_gb': 100, 'cpu_arch': 'x86_64',
        'capabilities': {'boot_mode': 'uefi'}, 'traits': ['CUSTOM_RAID'],
        'provision_state': 'available', 'power_state': 'power off',
        'maintenance': False, 'retired': False, 'instance_uuid': None,
        'conductor_group': None, 'shard': None, 'owner': None,
        'lessee': None,
    }


class TestConcurrentReservations(base.DBTestCase):
    scenarios = base.SERVER_BACKENDS

    def setUp(self):
        super().setUp()
        nodes = [_pool_node(index) for index in range(POOL_SIZE)]
        node_sync.sync_nodes(lambda: [(nodes, {
            node['uuid']: inventory_sync.fingerprint(node)
            for node in nodes})])
        self.pool = {node['uuid'] for node in nodes}
        self.port = loopback.free_port()
        self._start_api()

    def _start_api(self):
        workdir = self.useFixture(fixtures.TempDir()).path
        config_file = os.path.join(workdir, 'reserveapi.conf')
        url = self.engine.url.render_as_string(hide_password=False)
        with open(config_file, 'w') as config:
            config.write('[DEFAULT]\nstate_path = %s\n'
                         '[api]\nauth_strategy = noauth\n'
                         '[database]\nconnection = %s\n' % (workdir, url))
        log = open(os.path.join(workdir, 'gunicorn.log'), 'w')
        self.addCleanup(log.close)
        server = subprocess.Popen(
            [sys.executable, '-m', 'gunicorn', '--workers', str(API_WORKERS),
             '--threads', '4', '--bind', '127.0.0.1:%d' % self.port,
             '--timeout', str(REQUEST_TIMEOUT),
             'reserveapi.wsgi.api:application'],
            env=dict(os.environ, RESERVEAPI_CONFIG_FILE=config_file),
            stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(deployment.stop, server)
        self._wait_until_serving(server, log.name)

    def _wait_until_serving(self, server, log_name):
        if loopback.wait_until(
                lambda: loopback.answers('http://127.0.0.1:%d/v1' % self.port),
                START_TIMEOUT, server, interval=0.2):
            return
        with open(log_name) as log:
            self.fail('gunicorn did not serve: %s' % log.read()[-2000:])

    def _call(self, method, path, body=None):
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

    def _reserve(self, client):
        results = []
        for _ in range(REQUESTS_PER_CLIENT):
            results.append(self._call('POST', '/v1/reservations', {
                'instance_uuid': str(uuid.uuid4()),
                'host': 'compute-%d' % client,
                'request_spec': SPEC}))
        return results

    def test_pool_is_shared_out_exactly_once(self):
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as executor:
            results = [result for client_results in executor.map(
                self._reserve, range(CLIENTS)) for result in client_results]

        statuses = [status for status, _body in results]
        self.assertEqual(CLIENTS * REQUESTS_PER_CLIENT, len(results))
        self.assertEqual(set(), set(statuses) - {201, 409}, results)
        granted = [body['node_uuid'] for status, body in results
                   if status == 201]
        self.assertEqual(len(granted), len(set(granted)),
                         'a node was given twice')
        self.assertEqual(self.pool, set(granted))
        refusals = {body['errors'][0]['code'] for status, body in results
                    if status == 409}
        self.assertEqual({'reserveapi.no_valid_node'}, refusals)

        live = db_reservations.list_reservations({'state': 'reserved'})
        self.assertEqual(POOL_SIZE, len(live))
        self.assertEqual(self.pool, {r.node_uuid for r in live})
