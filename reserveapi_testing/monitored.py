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

"""reserveapi deployed as an operator runs it, watched by a real
Prometheus: gunicorn serving the API (two workers, whose metrics one
scrape sums), ``reserveapi-worker``, a private PostgreSQL server, the
real Placement on loopback, and Prometheus scraping the API and the
worker every second.

``tests/prometheus`` asserts on it and ``tools/capacity_graph.py`` draws
from it, with the same storm of reservations and releases (``STORM``):
the graph in the admin guide shows the numbers the test checks.
"""

import collections
import os
import signal
import subprocess
import sys
import time
import uuid

import fixtures
import requests

from reserveapi_testing import dbservers
from reserveapi_testing import examples
from reserveapi_testing import inventory
from reserveapi_testing import loopback
from reserveapi_testing import placement as placement_fixture
from reserveapi_testing import prometheus

GOLD = 'CUSTOM_BAREMETAL_GOLD'
SILVER = 'CUSTOM_BAREMETAL_SILVER'
SHARDS = ('east', 'west')
NODES = {GOLD: 60, SILVER: 20}
"""Nodes per class: gold split between the two shards, silver in none."""
HOSTS = ('compute-1', 'compute-2', 'compute-3')

STORM = (
    ('reserve', GOLD, 24),
    ('reserve', SILVER, 8),
    ('release', GOLD, 10),
    ('reserve', GOLD, 20),
    ('reserve', SILVER, 6),
    ('release', SILVER, 14),
    ('release', GOLD, 34),
)
"""Waves of reservations (round-robin over HOSTS) and releases (oldest
first), per class."""

API_WORKERS = 2
START_TIMEOUT = 90
REQUEST_TIMEOUT = 30


def storm_plateaus():
    """``[{class: nodes available}]`` before the storm and after each
    wave."""
    available = dict(NODES)
    plateaus = [dict(available)]
    for action, resource_class, count in STORM:
        available[resource_class] += -count if action == 'reserve' else count
        plateaus.append(dict(available))
    return plateaus


def _spec(resource_class):
    """The example request spec, asking for ``resource_class``, sizing
    off."""
    spec = dict(examples.REQUEST_SPEC)
    spec['extra_specs'] = {'resources:%s' % resource_class: '1',
                           'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
                           'resources:DISK_GB': '0'}
    return spec


def _nodes():
    nodes = []
    for index in range(NODES[GOLD]):
        nodes.append(inventory.node('gold-%03d' % index,
                                    resource_class='baremetal-gold',
                                    shard=SHARDS[index % len(SHARDS)]))
    for index in range(NODES[SILVER]):
        nodes.append(inventory.node('silver-%03d' % index,
                                    resource_class='baremetal-silver'))
    return nodes


def _script(name):
    return os.path.join(os.path.dirname(sys.executable), name)


class MonitoredDeployment(fixtures.Fixture):
    """The deployment above; ``api=False`` leaves gunicorn out (a worker
    alone, for its logs). The API logs in JSON (``[DEFAULT] use_json``),
    as a log shipper reads them; the worker in plain lines, as an
    operator reads them."""

    def __init__(self, api=True, root_dir=None):
        super().__init__()
        self.with_api = api
        self.root_dir = root_dir

    def _setUp(self):
        self.path = self.useFixture(fixtures.TempDir(
            rootdir=self.root_dir)).path
        self.database = self.useFixture(dbservers.PostgreSQLServer(
            root_dir=self.path))
        database_url = self.database.create_database('reserveapi')
        self.placement = self.useFixture(
            placement_fixture.PlacementFixture())
        self.providers = {host: self.placement.create_provider(host)
                          for host in HOSTS}
        self.api_port = loopback.free_port()
        self.worker_port = loopback.free_port()
        self.worker_config = self._write_config('worker', database_url,
                                                use_json=False)
        self.api_config = self._write_config('api', database_url,
                                             use_json=True)
        self._run('reserveapi-dbsync', self.worker_config, 'upgrade')
        self._run('reserveapi-manage', self.worker_config, 'sync-nodes')
        targets = {'reserveapi-worker': ['127.0.0.1:%d' % self.worker_port]}
        if self.with_api:
            self.api_log = os.path.join(self.path, 'api.log')
            self.gunicorn = self._start(
                [_script('gunicorn'), '-c',
                 'python:reserveapi.wsgi.gunicorn_config', '--workers',
                 str(API_WORKERS), '--bind', '127.0.0.1:%d' % self.api_port,
                 '--access-logfile', '-', 'reserveapi.wsgi.api:application'],
                self.api_log, {'RESERVEAPI_CONFIG_FILE': self.api_config})
            self._wait_for('%s/v1' % self.api_url, self.api_log)
            targets['reserveapi-api'] = ['127.0.0.1:%d' % self.api_port]
        self.worker_log = os.path.join(self.path, 'worker.log')
        self.worker = self._start(
            [_script('reserveapi-worker'), '--config-file',
             self.worker_config], self.worker_log)
        self._wait_for('http://127.0.0.1:%d/metrics' % self.worker_port,
                       self.worker_log)
        self.prometheus = self.useFixture(prometheus.PrometheusServer(
            targets, root_dir=self.path))
        self.http = requests.Session()
        self.addCleanup(self.http.close)
        self.sent = collections.Counter()
        self.live = {resource_class: collections.deque()
                     for resource_class in NODES}
        self.request_ids = {}

    @property
    def api_url(self):
        return 'http://127.0.0.1:%d' % self.api_port

    def api_workers(self):
        """The pids of gunicorn's workers."""
        path = '/proc/%d/task/%d/children' % (self.gunicorn.pid,
                                              self.gunicorn.pid)
        with open(path) as children:
            return {int(pid) for pid in children.read().split()}

    def replace_api_worker(self):
        """SIGKILL one of gunicorn's workers; return once gunicorn runs
        a new one in its place."""
        workers = self.api_workers()
        killed = min(workers)
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            now = self.api_workers()
            if killed not in now and len(now) == API_WORKERS:
                return killed
            time.sleep(0.1)
        raise RuntimeError('gunicorn did not replace worker %d' % killed)

    def _write_config(self, name, database_url, use_json):
        path = os.path.join(self.path, '%s.conf' % name)
        lines = [
            '[DEFAULT]', 'state_path = %s' % self.path,
            'use_json = %s' % use_json,
            '[api]', 'auth_strategy = noauth',
            '[database]', 'connection = %s' % database_url,
            '[inventory]', 'source = file',
            'file = %s' % inventory.write(self.path, _nodes()),
            'sync_interval = 2',
            '[mirror]', 'inline_timeout = 1', 'retry_interval = 1',
            'backoff_base = 1', 'backoff_max = 2', 'lease_timeout = 5',
            'reconcile_interval = 0',
            # Every job at least every few seconds: a test waits for
            # each one failing in an outage to come back.
            '[holds]', 'tend_interval = 2',
            '[placement]', 'auth_type = admin_token',
            'endpoint = %s' % self.placement.endpoint,
            'token = %s' % placement_fixture.NOAUTH_TOKEN,
            '[reservations]', 'reserved_ttl = 0',
            '[metrics]', 'enabled = true', 'worker_host = 127.0.0.1',
            'worker_port = %d' % self.worker_port, '']
        with open(path, 'w') as stream:
            stream.write('\n'.join(lines))
        return path

    def _run(self, command, config, *args):
        result = subprocess.run(  # noqa: S603
            [_script(command), '--config-file', config] + list(args),
            capture_output=True, text=True, timeout=300, check=False)
        if result.returncode:
            raise RuntimeError('%s %s failed: %s%s' % (
                command, ' '.join(args), result.stdout, result.stderr))

    def _start(self, command, log_path, env=None):
        log = open(log_path, 'ab')  # noqa: SIM115 - closed at cleanup
        self.addCleanup(log.close)
        process = subprocess.Popen(  # noqa: S603
            command, stdout=log, stderr=subprocess.STDOUT,
            env=dict(os.environ, **(env or {})), start_new_session=True)
        self.addCleanup(_stop, process)
        return process

    def _wait_for(self, url, log_path):
        if loopback.wait_until(lambda: loopback.answers(url), START_TIMEOUT,
                               interval=0.2):
            return
        with open(log_path, errors='replace') as log:
            raise RuntimeError('%s did not answer: %s'
                               % (url, log.read()[-3000:]))

    # The load, every request counted by (route template, method, status)

    def request(self, method, template, path=None, body=None):
        response = self.http.request(method, self.api_url + (path or template),
                                     json=body, timeout=REQUEST_TIMEOUT)
        self.sent[(template, method, str(response.status_code))] += 1
        return response

    def reserve(self, resource_class, host):
        instance = str(uuid.uuid4())
        response = self.request('POST', '/v1/reservations', body={
            'instance_uuid': instance, 'host': host,
            'request_spec': _spec(resource_class)})
        if response.status_code != 201:
            raise RuntimeError('reserve: %d %s' % (response.status_code,
                                                   response.text))
        self.request_ids[instance] = response.headers[
            'x-openstack-request-id']
        self.live[resource_class].append((response.json()['uuid'], host))
        return response.json()

    def live_per_host(self):
        """``{host: live reservations}`` of the hosts that hold any."""
        return dict(collections.Counter(
            host for live in self.live.values() for _uuid, host in live))

    def release(self, resource_class):
        reservation, _host = self.live[resource_class].popleft()
        response = self.request('DELETE', '/v1/reservations/'
                                '{reservation_uuid}',
                                '/v1/reservations/' + reservation)
        if response.status_code != 204:
            raise RuntimeError('release: %d %s' % (response.status_code,
                                                   response.text))

    def wave(self, action, resource_class, count):
        """One wave of ``STORM``."""
        for index in range(count):
            if action == 'reserve':
                self.reserve(resource_class, HOSTS[index % len(HOSTS)])
            else:
                self.release(resource_class)

    def join_aggregate(self, aggregate_uuid, host):
        """The mirror's PUT; its status (200 synced, 202 pending)."""
        return self.request(
            'PUT', '/v1/aggregates/{aggregate_uuid}/hosts/{host}',
            '/v1/aggregates/%s/hosts/%s' % (aggregate_uuid, host)
        ).status_code


def _stop(process):
    """TERM the process's session, KILL it if it lingers."""
    if process.poll() is not None:
        return
    for signum, wait in ((15, 15), (9, 5)):
        try:
            os.killpg(process.pid, signum)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue
