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
directory. The database server comes from ``tests.fixtures.dbservers``.
"""

import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid

import requests

BIN_DIR = os.path.dirname(sys.executable)
HERE = os.path.dirname(os.path.abspath(__file__))
START_TIMEOUT = 60
PLACEMENT_TOKEN = 'admin:soak'
PLACEMENT_VERSION = 'placement 1.20'


class ServiceError(Exception):
    """A child process did not start or misbehaved."""


def tool(name):
    """A console script of this environment (reserveapi-worker, ...)."""
    return os.path.join(BIN_DIR, name)


def run_tool(log_path, *command):
    """Run a command to completion, its output appended to ``log_path``."""
    with open(log_path, 'ab') as log:
        result = subprocess.run(command, stdout=log, stderr=log,
                                check=False)
    if result.returncode:
        raise ServiceError('%s exited %d; see %s'
                           % (' '.join(command[:2]), result.returncode,
                              log_path))


def _stop(process, timeout=10):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_for_port(url, process, log_path, timeout=START_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServiceError('%s exited %d; see %s' % (
                process.args[0], process.returncode, log_path))
        try:
            requests.get(url, timeout=2)
            return
        except requests.RequestException:
            time.sleep(0.1)
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


def _no_control_socket():
    """Recent gunicorn opens ~/.gunicorn/gunicorn.ctl, one socket for
    every gunicorn of the user: keep ours to ourselves."""
    usage = subprocess.run([tool('gunicorn'), '--help'], capture_output=True,
                           text=True, check=False).stdout
    return ['--no-control-socket'] if '--no-control-socket' in usage else []


class Gunicorn:
    """``gunicorn -w N reserveapi.wsgi.api:application`` on loopback."""

    def __init__(self, config_file, port, workers, log_path):
        self.url = 'http://127.0.0.1:%d' % port
        self.workers = workers
        self.log_path = log_path
        env = dict(os.environ, RESERVEAPI_CONFIG_FILE=config_file)
        with open(log_path, 'ab') as log:
            self.process = subprocess.Popen(
                [tool('gunicorn'), '-w', str(workers), '-b',
                 '127.0.0.1:%d' % port, '--timeout', '60']
                + _no_control_socket() + ['reserveapi.wsgi.api:application'],
                stdout=log, stderr=log, env=env)
        wait_for_port(self.url + '/', self.process, log_path)
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

    def kill_worker(self):
        """SIGKILL one busy API worker; seconds until it is replaced."""
        pid = random.choice(sorted(self.worker_pids()))
        os.kill(pid, signal.SIGKILL)
        return self._wait_workers({pid})

    def stop(self):
        _stop(self.process, timeout=30)


class WorkerDaemon:
    """``reserveapi-worker`` running its periodic jobs, restarted after
    each kill as a service manager would.

    The daemon logs ``Running JOB`` / ``Finished JOB`` at DEBUG; a kill
    aimed at a job waits for the job to start and kills at once, and
    counts as landing mid-job if the job had not finished.
    """

    def __init__(self, config_file, log_path):
        self.config_file = config_file
        self.log_path = log_path
        self.process = None
        self.start()

    def start(self):
        with open(self.log_path + '.out', 'ab') as out:
            self.process = subprocess.Popen(
                [tool('reserveapi-worker'), '--config-file',
                 self.config_file], stdout=out, stderr=out)

    def _log_size(self):
        try:
            return os.path.getsize(self.log_path)
        except FileNotFoundError:
            return 0

    def _read_from(self, offset):
        with open(self.log_path, 'rb') as log:
            log.seek(offset)
            return log.read().decode(errors='replace')

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

    def stop(self):
        _stop(self.process)
