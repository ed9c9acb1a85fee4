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

"""The processes a soak run starts, and the faults it inflicts on them.

Placement, gunicorn serving reserveapi and the ``reserveapi-worker``
daemon, each a child process on loopback with its output in the run's
directory. The database server comes from ``reserveapi_testing.dbservers``,
the real Ironic from ``reserveapi_testing.ironic``.
"""

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid

import requests
import sqlalchemy as sa

from reserveapi_testing import ironic as ironic_fixture
from reserveapi_testing import loopback

BIN_DIR = os.path.dirname(sys.executable)
HERE = os.path.dirname(os.path.abspath(__file__))
START_TIMEOUT = 60
PLACEMENT_TOKEN = 'admin:soak'
PLACEMENT_VERSION = 'placement 1.20'


class ServiceError(Exception):
    """A child process did not start or misbehaved."""


def tool(name, bin_dir=BIN_DIR):
    """A console script of this environment (reserveapi-worker, ...), or
    of the one whose scripts are in ``bin_dir``."""
    return os.path.join(bin_dir, name)


def run_tool(log_path, *command, check=True, cwd=None):
    """Run a command to completion, its output appended to ``log_path``;
    its exit code, which must be 0 when ``check``."""
    with open(log_path, 'ab') as log:
        result = subprocess.run(command, stdout=log, stderr=log,
                                check=False, cwd=cwd)
    if result.returncode and check:
        raise ServiceError('%s exited %d; see %s'
                           % (' '.join(command[:2]), result.returncode,
                              log_path))
    return result.returncode


def _stop(process, timeout=10):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_for_port(url, process, log_path, timeout=START_TIMEOUT):
    """Return once ``url`` answers 200; ServiceError if ``process``
    exits or ``timeout`` passes first."""
    if loopback.wait_until(lambda: loopback.answers(url, timeout=2), timeout,
                           process):
        return
    if process.poll() is not None:
        raise ServiceError('%s exited %d; see %s' % (
            process.args[0], process.returncode, log_path))
    raise ServiceError('%s did not answer within %ds; see %s'
                       % (url, timeout, log_path))


class Placement:
    """The real Placement in its own process (placement_server.py)."""

    def __init__(self, state_dir):
        self.log_path = os.path.join(state_dir, 'placement.log')
        with open(self.log_path, 'ab') as log:
            self.process = subprocess.Popen(
                [sys.executable, os.path.join(HERE, 'placement_server.py'),
                 state_dir], stdout=subprocess.PIPE, stderr=log)
        line = self.process.stdout.readline().decode()
        if not line.startswith('listening on '):
            raise ServiceError('Placement did not start; see %s'
                               % self.log_path)
        self.url = 'http://127.0.0.1:%d' % int(line.split()[-1])
        self.http = requests.Session()
        self.http.headers.update({'X-Auth-Token': PLACEMENT_TOKEN,
                                  'OpenStack-API-Version': PLACEMENT_VERSION})

    def request(self, method, path, body=None):
        response = self.http.request(method, self.url + path, json=body,
                                     timeout=30)
        if response.status_code >= 300:
            raise ServiceError('Placement %s %s: %d %s' % (
                method, path, response.status_code, response.text))
        return response.json() if response.content else None

    def create_provider(self, name):
        return self.request('POST', '/resource_providers', {
            'name': name, 'uuid': str(uuid.uuid4())})['uuid']

    def providers(self):
        """{name: uuid} of every resource provider."""
        return {rp['name']: rp['uuid'] for rp in self.request(
            'GET', '/resource_providers')['resource_providers']}

    def aggregates(self, rp_uuid):
        return set(self.request('GET', '/resource_providers/%s/aggregates'
                                % rp_uuid)['aggregates'])

    def pause(self, seconds):
        """SIGSTOP for ``seconds``: Placement hangs, as when overloaded."""
        self.process.send_signal(signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            self.process.send_signal(signal.SIGCONT)

    def stop(self):
        self.process.send_signal(signal.SIGCONT)
        _stop(self.process)
        self.http.close()


def _no_control_socket(gunicorn):
    """Recent gunicorn opens ~/.gunicorn/gunicorn.ctl, one socket for
    every gunicorn of the user: keep ours to ourselves."""
    usage = subprocess.run([gunicorn, '--help'], capture_output=True,
                           text=True, check=False).stdout
    return ['--no-control-socket'] if '--no-control-socket' in usage else []


class Gunicorn:
    """``gunicorn -w N reserveapi.wsgi.api:application`` on loopback.

    ``bin_dir`` and ``cwd`` run another installation's gunicorn (an older
    version's virtualenv) from a directory where no other reserveapi can
    be imported: gunicorn puts its working directory first on the import
    path.
    """

    def __init__(self, config_file, port, workers, log_path,
                 bin_dir=BIN_DIR, cwd=None):
        self.config_file = config_file
        self.port = port
        self.url = 'http://127.0.0.1:%d' % port
        self.workers = workers
        self.log_path = log_path
        self.gunicorn = tool('gunicorn', bin_dir)
        self.cwd = cwd
        self.start()

    def start(self):
        env = dict(os.environ, RESERVEAPI_CONFIG_FILE=self.config_file)
        with open(self.log_path, 'ab') as log:
            self.process = subprocess.Popen(
                [self.gunicorn, '-w', str(self.workers), '-b',
                 '127.0.0.1:%d' % self.port, '--timeout', '60']
                + _no_control_socket(self.gunicorn)
                + ['reserveapi.wsgi.api:application'],
                stdout=log, stderr=log, env=env, cwd=self.cwd)
        wait_for_port(self.url + '/', self.process, self.log_path)
        self._wait_workers(set())

    def worker_pids(self):
        path = '/proc/%d/task/%d/children' % (self.process.pid,
                                              self.process.pid)
        with open(path) as children:
            return {int(pid) for pid in children.read().split()}

    def _wait_workers(self, gone, timeout=30):
        """Seconds until ``workers`` workers run, none of them in ``gone``.
        """
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            pids = self.worker_pids()
            if len(pids) == self.workers and not pids & gone:
                return time.monotonic() - started
            time.sleep(0.05)
        raise ServiceError('gunicorn did not respawn a worker in %ds'
                           % timeout)

    def kill_worker(self, pid=None):
        """SIGKILL one busy API worker (``pid``, or one at random);
        seconds until it is replaced."""
        if pid is None:
            pid = random.choice(sorted(self.worker_pids()))
        os.kill(pid, signal.SIGKILL)
        return self._wait_workers({pid})

    def kill_workers(self):
        """SIGKILL every API worker at once, the arbiter left running;
        their pids, for ``wait_replaced``."""
        pids = self.worker_pids()
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        return pids

    def wait_replaced(self, pids):
        """Seconds until gunicorn replaced the workers ``pids``."""
        return self._wait_workers(pids)

    def kill_worker_logging(self, pattern, app_log, timeout=30):
        """SIGKILL the API worker as soon as it logs a line matching
        ``pattern`` to ``app_log`` (oslo.log's lines carry the pid).

        Returns ``(line, seconds from the line appearing to the kill)``,
        or ``(None, None)`` if no worker logged it within ``timeout``.
        """
        line_re = re.compile(r'^\S+ \S+ (\d+) .*%s.*$' % pattern, re.M)
        offset = os.path.getsize(app_log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(app_log, 'rb') as log:
                log.seek(offset)
                data = log.read()
            data = data[:data.rfind(b'\n') + 1]  # whole lines only
            offset += len(data)
            for match in line_re.finditer(data.decode(errors='replace')):
                pid = int(match.group(1))
                if pid in self.worker_pids():
                    seen = time.monotonic()
                    os.kill(pid, signal.SIGKILL)
                    delay = time.monotonic() - seen
                    self._wait_workers({pid})
                    return match.group(0), delay
            time.sleep(0.001)
        return None, None

    def kill_all(self):
        """SIGKILL the arbiter and every worker, as a host crash would."""
        pids = self.worker_pids()
        self.process.kill()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()

    def stop(self):
        _stop(self.process, timeout=30)


class WorkerDaemon:
    """``reserveapi-worker`` running its periodic jobs, restarted after
    each kill as a service manager would.

    The daemon logs ``Running JOB`` / ``Finished JOB`` at DEBUG; a kill
    aimed at a job waits for the job to start and kills at once, and
    counts as landing mid-job if the job had not finished.
    """

    def __init__(self, config_file, log_path, bin_dir=BIN_DIR):
        self.config_file = config_file
        self.log_path = log_path
        self.worker = tool('reserveapi-worker', bin_dir)
        self.process = None
        self.start()

    def start(self):
        with open(self.log_path + '.out', 'ab') as out:
            self.process = subprocess.Popen(
                [self.worker, '--config-file', self.config_file],
                stdout=out, stderr=out)

    def _log_size(self):
        try:
            return os.path.getsize(self.log_path)
        except FileNotFoundError:
            return 0

    def _read_from(self, offset):
        try:
            with open(self.log_path, 'rb') as log:
                log.seek(offset)
                return log.read().decode(errors='replace')
        except FileNotFoundError:
            return ''  # a daemon just started has not logged yet

    def kill_during(self, jobs, timeout=30):
        """SIGKILL as soon as one of ``jobs`` starts, then restart.

        Returns ``(job, landed_mid_job)``, or ``(None, False)`` if none
        started within ``timeout``.
        """
        offset = self._log_size()
        started = re.compile(r'Running (%s)\b' % '|'.join(
            re.escape(job) for job in jobs))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self._read_from(offset)
            match = started.search(text)
            if match:
                self.process.kill()
                self.process.wait()
                job = match.group(1)
                after = text[match.end():] + self._read_from(
                    offset + len(text.encode()))
                self.start()
                return job, not re.search(r'Finished %s\b' % re.escape(job),
                                          after)
            time.sleep(0.001)
        return None, False

    def kill_holding(self, lease_holder, timeout=30):
        """SIGKILL the daemon while it holds a lease, then restart it.

        ``lease_holder()`` reads the lease's holder from the database;
        the daemon holds it when the holder names its pid. Returns
        ``(holder, holder_after_kill)``: what the lease named when the
        daemon was killed (None if it never held it within ``timeout``)
        and what it names just after, which is the dead daemon if the
        kill landed while it held the lease.
        """
        pid_token = re.compile(r'(?<![0-9])%d(?![0-9])' % self.process.pid)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            holder = lease_holder()
            if holder and pid_token.search(holder):
                self.process.kill()
                self.process.wait()
                after = lease_holder()
                self.start()
                return holder, after
            time.sleep(0.002)
        return None, None

    def stop(self):
        _stop(self.process)


class Ironic:
    """The real Ironic 39 of ``reserveapi_testing.ironic`` (SQLite,
    fake-hardware, noauth, no message bus) with ``count`` nodes
    ``available`` and powered off, each matching the soak's request
    spec. Its logs are copied to ``run_dir`` when it stops.
    """

    NODE = {
        'resource_class': 'baremetal-soak',
        'properties': {'memory_mb': 8192, 'cpus': 8, 'local_gb': 100,
                       'cpu_arch': 'x86_64'},
    }

    def __init__(self, run_dir, count):
        self.run_dir = run_dir
        self.fixture = ironic_fixture.IronicFixture()
        self.fixture.setUp()
        # Written to Ironic's database as they would be once enrolled,
        # managed, provided and powered off: much faster on a busy host.
        self.node_uuids = self.fixture.seed_nodes(
            count, name=lambda index: 'soak-%04d' % index,
            traits=['CUSTOM_RAID'], **self.NODE)

    @property
    def endpoint(self):
        return self.fixture.endpoint

    def claims(self):
        """``{node uuid: instance_uuid or None}`` of every node, in one
        read (``fields=allocation_uuid`` would be a 500 in Ironic 39)."""
        return {node['uuid']: node['instance_uuid']
                for node in self.fixture.list_nodes(
                    fields='uuid,instance_uuid')}

    def claim_of(self, node_uuid):
        """The node's ``instance_uuid`` as Ironic has it now."""
        return self.fixture.get_node(
            node_uuid, fields='uuid,instance_uuid')['instance_uuid']

    def set_claim(self, node_uuid, instance_uuid):
        """Claim (or, with None, unclaim) a node as another tool would:
        one PATCH of ``instance_uuid``; True if Ironic accepted it."""
        return self.fixture.update_node(
            node_uuid, expected=(200, 409),
            instance_uuid=instance_uuid).status_code == 200

    def pause(self, seconds):
        """SIGSTOP Ironic's processes for ``seconds``: it hangs."""
        self.fixture.freeze()
        try:
            time.sleep(seconds)
        finally:
            self.fixture.thaw()

    def crash(self):
        """SIGKILL Ironic and start it again on the same port and
        database; seconds it was down."""
        started = time.monotonic()
        self.fixture.stop(kill=True)
        self.fixture.start()
        return time.monotonic() - started

    def stop(self):
        for path in (self.fixture.log_path, self.fixture.output_path):
            if os.path.exists(path):
                shutil.copy(path, self.run_dir)
        self.fixture.cleanUp()


def terminate_connections(engine, database):
    """Cut every connection to ``database`` but this one, as a database
    failover or an operator would; how many were cut."""
    with engine.connect() as connection:
        if engine.dialect.name == 'postgresql':
            return connection.execute(sa.text(
                'SELECT count(pg_terminate_backend(pid)) FROM '
                'pg_stat_activity WHERE datname = :db '
                'AND pid <> pg_backend_pid()'), {'db': database}).scalar()
        ids = connection.execute(sa.text(
            'SELECT id FROM information_schema.processlist '
            'WHERE db = :db AND id <> CONNECTION_ID()'),
            {'db': database}).scalars().all()
        for id_ in ids:
            try:
                connection.execute(sa.text('KILL CONNECTION %d' % id_))
            except sa.exc.DBAPIError:
                pass  # gone meanwhile
        return len(ids)


IRONIC_READ_ERRORS = (requests.RequestException,
                      ironic_fixture.IronicFixtureError)
"""What a read of Ironic raises while it is down, hung or restarting."""
