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

"""The load: request specs, the gunicorn server, and the three phases.

Everything talks to 127.0.0.1 only and every wait has a timeout.
"""

import collections
import ctypes
import datetime
import http.client
import json
import math
import os
import pathlib
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

from reserveapi_testing import loopback

IMAGE_ID = '7f1c2f51-8a0e-4a6e-9b7e-3e2b1d6b9c10'

# name: (resource class as stored, request_spec). Both match nodes that
# tools/generate_inventory.py makes in quantity (about 1 node in 8).
SPECS = {
    # A modern bare metal flavor: one custom resource class, standard
    # classes switched off, so no sizing; a trait, a capability, the
    # image's architecture.
    'baremetal': ('CUSTOM_BAREMETAL_SILVER', {
        'memory_mb': 65536, 'vcpus': 16, 'vcpu_weight': None,
        'root_gb': 200, 'ephemeral_gb': 0, 'swap': 0, 'rxtx_factor': 1.0,
        'extra_specs': {
            'resources:CUSTOM_BAREMETAL_SILVER': '1',
            'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
            'resources:DISK_GB': '0',
            'trait:HW_CPU_X86_AVX2': 'required',
            'capabilities:boot_mode': 'uefi',
        },
        'image': {'id': IMAGE_ID,
                  'properties': {'hw_architecture': 'x86_64'}},
    }),
    # An older flavor that still sizes: best fit on memory, cpus, disk;
    # a flavor trait, an image trait, a capability with an operator.
    'sized': ('CUSTOM_BAREMETAL_GOLD', {
        'memory_mb': 131072, 'vcpus': 32, 'vcpu_weight': None,
        'root_gb': 400, 'ephemeral_gb': 0, 'swap': 0, 'rxtx_factor': 1.0,
        'extra_specs': {
            'resources:CUSTOM_BAREMETAL_GOLD': '1',
            'trait:CUSTOM_RAID': 'required',
            'capabilities:boot_mode': '<in> uefi',
        },
        'image': {'id': IMAGE_ID,
                  'properties': {'hw_architecture': 'x86_64',
                                 'trait:HW_CPU_X86_AVX2': 'required'}},
    }),
}

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>

# What each phase reports, by HTTP status.
OK_CREATED = 201
OK_DELETED = 204


# Statistics

def summarize(seconds):
    """Latency summary in milliseconds; nearest-rank percentiles."""
    if not seconds:
        return None
    ordered = sorted(seconds)
    count = len(ordered)

    def percentile(q):
        return round(ordered[max(0, math.ceil(q * count) - 1)] * 1000, 2)

    return {'count': count, 'min_ms': round(ordered[0] * 1000, 2),
            'p50_ms': percentile(0.50), 'p90_ms': percentile(0.90),
            'p99_ms': percentile(0.99),
            'mean_ms': round(statistics.fmean(ordered) * 1000, 2),
            'max_ms': round(ordered[-1] * 1000, 2)}


def status_class(status):
    if status is None:
        return 'error'
    if status >= 500:
        return '5xx'
    return str(status)


# Processes: CPU and peak memory, from /proc (Linux)

CLOCK_TICKS = os.sysconf('SC_CLK_TCK') if hasattr(os, 'sysconf') else 100


def write_results(directory, prefix, started, results):
    """Write ``results`` as JSON to ``DIRECTORY/PREFIX-<started>.json``
    (made if missing); the path."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / ('%s-%s.json'
                        % (prefix, started.strftime('%Y%m%dT%H%M%SZ')))
    path.write_text(json.dumps(results, indent=2, sort_keys=True,
                               default=str) + '\n')
    return path


def loadavg():
    """The 1, 5 and 15 minute load averages, or None off Linux."""
    try:
        with open('/proc/loadavg') as stream:
            return [float(value) for value in stream.read().split()[:3]]
    except (OSError, ValueError):
        return None


def process_usage(pid):
    """``{'cpu_s', 'peak_rss_mb', 'rss_mb'}`` of a live process, or None
    once it is gone (or off Linux).
    """
    try:
        with open('/proc/%d/stat' % pid) as stream:
            # The command name may hold spaces: fields follow the ')'.
            fields = stream.read().rpartition(')')[2].split()
        with open('/proc/%d/status' % pid) as stream:
            status = dict(line.split(':', 1) for line in stream
                          if ':' in line)
    except OSError:
        return None
    kib = {key: int(status[key].split()[0]) for key in ('VmHWM', 'VmRSS')
           if key in status}
    return {'cpu_s': (int(fields[11]) + int(fields[12])) / CLOCK_TICKS,
            'peak_rss_mb': round(kib.get('VmHWM', 0) / 1024, 1),
            'rss_mb': round(kib.get('VmRSS', 0) / 1024, 1)}


def children(pid):
    """Direct children of ``pid``."""
    found = []
    try:
        tasks = os.listdir('/proc/%d/task' % pid)
    except OSError:
        return found
    for task in tasks:
        try:
            with open('/proc/%d/task/%s/children' % (pid, task)) as stream:
                found.extend(int(child) for child in stream.read().split())
        except OSError:
            continue
    return found


def run_measured(command, timeout, **kwargs):
    """Run ``command`` to its end; ``(returncode, stdout, stderr, usage)``
    where usage holds its wall and CPU seconds and peak RSS, from
    wait4(), which sees the process's own resource usage (not that of
    every child this runner ever had, as getrusage(RUSAGE_CHILDREN)
    would).  Kills it after ``timeout`` seconds (returncode None).
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(  # noqa: S603
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
            **kwargs)
        timed_out = []

        def kill():
            timed_out.append(True)
            process.kill()

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, rusage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode('utf-8', 'replace')
        stderr = err.read().decode('utf-8', 'replace')
    usage = {'wall_s': round(wall, 2),
             'cpu_s': round(rusage.ru_utime + rusage.ru_stime, 2),
             # ru_maxrss is in KiB on Linux.
             'peak_rss_mb': round(rusage.ru_maxrss / 1024, 1)}
    return (None if timed_out else process.returncode), stdout, stderr, usage


# The API server

class Gunicorn:
    """``gunicorn -w N reserveapi.wsgi.api:application`` on 127.0.0.1.

    Runs in a session of its own so that stopping it stops the master and
    every worker, whatever happened; a context manager.
    """

    def __init__(self, config_file, workers, log_path, startup_timeout=60,
                 worker_timeout=60, worker_class='sync', threads=1,
                 settings=None, python=None, cwd=None):
        """``settings``: gunicorn's ``-c`` (a settings file or
        ``python:module``). ``python`` and ``cwd`` run another
        installation's gunicorn (an old release's virtualenv) from a
        directory where this checkout cannot be imported: gunicorn puts
        its working directory first on the import path."""
        self.python = python or sys.executable
        self.cwd = cwd
        self.config_file = config_file
        self.settings = settings
        self.workers = workers
        self.worker_class = worker_class
        self.threads = threads
        self.log_path = log_path
        self.startup_timeout = startup_timeout
        self.worker_timeout = worker_timeout
        self.port = None
        self.process = None

    @property
    def address(self):
        return ('127.0.0.1', self.port)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc_info):
        self.stop()

    def start(self):
        self.port = loopback.free_port()
        env = dict(os.environ, RESERVEAPI_CONFIG_FILE=self.config_file)
        if self.python != sys.executable:
            env.pop('PYTHONPATH', None)
        command = [self.python, '-m', 'gunicorn']
        if self.settings:
            command += ['-c', self.settings]
        command += ['--workers', str(self.workers),
                    '--worker-class', self.worker_class,
                    '--threads', str(self.threads),
                    '--bind', '127.0.0.1:%d' % self.port,
                    '--timeout', str(self.worker_timeout),
                    '--graceful-timeout', '5',
                    '--log-level', 'warning',
                    'reserveapi.wsgi.api:application']
        with open(self.log_path, 'ab') as log:
            log.write(('\n# %s\n' % ' '.join(command)).encode())
            log.flush()
            self.process = subprocess.Popen(  # noqa: S603
                command, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, env=env, cwd=self.cwd,
                start_new_session=True, preexec_fn=_die_with_parent)
        self._wait_ready()

    def _wait_ready(self):
        deadline = time.monotonic() + self.startup_timeout
        ready = 0
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('gunicorn exited with %s; see %s:\n%s' % (
                    self.process.returncode, self.log_path,
                    tail(self.log_path)))
            status, _, _ = request(self.address, 'GET', '/healthcheck',
                                   timeout=5)
            if status == 200:
                ready += 1
                # Each worker imports the app on its own: a few more
                # answers make it likely that all of them are up.
                if ready >= 2 * self.workers:
                    return
                continue
            time.sleep(0.2)
        raise RuntimeError('gunicorn not ready after %ss; see %s:\n%s' % (
            self.startup_timeout, self.log_path, tail(self.log_path)))

    def usage(self):
        """CPU seconds and peak RSS of the master and of each worker, as
        ``{'master': {...}, 'workers': {pid: {...}, ...}}``.
        """
        if self.process is None:
            return None
        workers = {pid: usage for pid, usage in (
            (pid, process_usage(pid))
            for pid in sorted(children(self.process.pid)))
            if usage is not None}
        return {'master': process_usage(self.process.pid),
                'workers': workers}

    def stop(self):
        """TERM the whole session, then KILL it if it lingers."""
        process, self.process = self.process, None
        if process is None:
            return
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        # Workers left behind by a dead master share its process group.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _prctl():
    """libc's prctl, where there is one (Linux)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def _die_with_parent():
    """Runs in the child before exec: have the kernel TERM gunicorn's
    master should this runner die, even by SIGKILL, which leaves it no
    chance to clean up; the master then stops its workers.
    """
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM)


def tail(path, lines=20):
    try:
        with open(path, 'rb') as stream:
            stream.seek(0, os.SEEK_END)
            stream.seek(max(0, stream.tell() - 8192))
            text = stream.read().decode('utf-8', 'replace')
    except OSError:
        return ''
    return '\n'.join(text.splitlines()[-lines:])


class Scraper:
    """GET ``path`` from the API every ``interval`` seconds in a thread
    while the ``with`` block runs, as Prometheus would (far more often
    than it would), counting the answers."""

    def __init__(self, address, path='/metrics', interval=1.0):
        self.address = address
        self.path = path
        self.interval = interval
        self.statuses = collections.Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='scraper')

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()

    def _run(self):
        while True:
            status, _body, _seconds = request(self.address, 'GET',
                                              self.path)
            self.statuses[status_class(status)] += 1
            if self._stop.wait(self.interval):
                return


# HTTP

HEADERS = {'Content-Type': 'application/json', 'Accept': 'application/json'}


def request(address, method, path, body=None, timeout=30, headers=None):
    """``(status, body bytes, seconds)`` over a connection of its own;
    status None when no answer. ``headers`` are sent beside HEADERS.
    """
    return Client(address, timeout).request(method, path, body, headers)


class Client:
    """HTTP to the API, one client thread's worth.

    Without ``keep_alive`` every request opens its own connection (what
    gunicorn's sync workers do anyway: they close every connection);
    with it, a connection is reused until the server closes it, as
    keystoneauth's pooled session does. The time covers connecting when
    needed, sending and reading the whole response.
    """

    def __init__(self, address, timeout=30, keep_alive=False):
        self.address = address
        self.timeout = timeout
        self.keep_alive = keep_alive
        self._connection = None

    def request(self, method, path, body=None, headers=None):
        payload = None if body is None else json.dumps(body).encode()
        headers = dict(HEADERS, **(headers or {}))
        start = time.perf_counter()
        for attempt in (1, 2):
            reused = self._connection is not None
            if not reused:
                self._connection = http.client.HTTPConnection(
                    *self.address, timeout=self.timeout)
            try:
                self._connection.request(method, path, body=payload,
                                         headers=headers)
                response = self._connection.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                # A kept connection the server closed meanwhile: once
                # more on a new one (nothing was sent that it handled).
                if reused and attempt == 1 and isinstance(
                        exc, (http.client.RemoteDisconnected,
                              BrokenPipeError, ConnectionResetError)):
                    continue
                return None, repr(exc).encode(), time.perf_counter() - start
            if not self.keep_alive or response.will_close:
                self.close()
            return response.status, data, time.perf_counter() - start

    def close(self):
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def reservation_body(request_spec, host):
    return {'instance_uuid': str(uuid.uuid4()), 'host': host,
            'request_spec': request_spec}


def _error_sample(samples, status, data):
    if len(samples) < 5:
        samples.append({'status': status,
                        'body': data[:500].decode('utf-8', 'replace')})


# Phase 1: one client

def single_client(address, request_spec, requests, warmup, delete,
                  deadline, timeout, keep_alive=False):
    """POST one reservation at a time, each for a new instance; with
    ``delete``, DELETE it right after (timed apart), so every POST sees
    the same free pool.
    """
    client = Client(address, timeout, keep_alive)
    posts, deletes = [], []
    post_statuses = collections.Counter()
    delete_statuses = collections.Counter()
    errors = []
    completed = True
    for index in range(warmup + requests):
        if time.monotonic() > deadline:
            completed = False
            break
        measured = index >= warmup
        status, data, seconds = client.request(
            'POST', '/v1/reservations',
            reservation_body(request_spec, 'bench-compute-0'))
        if measured:
            posts.append(seconds)
            post_statuses[status_class(status)] += 1
        if status != OK_CREATED:
            _error_sample(errors, status, data)
            continue
        if not delete:
            continue
        reservation = json.loads(data)['uuid']
        status, data, seconds = client.request(
            'DELETE', '/v1/reservations/' + reservation)
        if measured:
            deletes.append(seconds)
            delete_statuses[status_class(status)] += 1
        if status != OK_DELETED:
            _error_sample(errors, status, data)
    client.close()
    return {
        'completed': completed, 'warmup': warmup, 'deleted_after': delete,
        'keep_alive': keep_alive,
        'post': summarize(posts), 'post_statuses': dict(post_statuses),
        'delete': summarize(deletes),
        'delete_statuses': dict(delete_statuses),
        'error_samples': errors,
    }


def alternating_single_client(addresses, request_spec, requests, warmup,
                              deadline, timeout):
    """``single_client`` (each reservation deleted right after) against
    several servers at once, ``{name: address}``: each POST goes to every
    server in turn, in an order that alternates, so that whatever else
    loads the machine weighs on all of them alike. ``{name: result}``,
    each as ``single_client``'s.
    """
    names = sorted(addresses)
    clients = {name: Client(addresses[name], timeout) for name in names}
    posts = {name: [] for name in names}
    post_statuses = {name: collections.Counter() for name in names}
    delete_statuses = {name: collections.Counter() for name in names}
    errors = []
    completed = True
    for index in range(warmup + requests):
        if time.monotonic() > deadline:
            completed = False
            break
        measured = index >= warmup
        for name in names if index % 2 else reversed(names):
            client = clients[name]
            status, data, seconds = client.request(
                'POST', '/v1/reservations',
                reservation_body(request_spec, 'bench-compute-0'))
            if measured:
                posts[name].append(seconds)
                post_statuses[name][status_class(status)] += 1
            if status != OK_CREATED:
                _error_sample(errors, status, data)
                continue
            status, data, _seconds = client.request(
                'DELETE', '/v1/reservations/' + json.loads(data)['uuid'])
            if measured:
                delete_statuses[name][status_class(status)] += 1
            if status != OK_DELETED:
                _error_sample(errors, status, data)
    for client in clients.values():
        client.close()
    return {name: {'completed': completed, 'post': summarize(posts[name]),
                   'post_statuses': dict(post_statuses[name]),
                   'delete_statuses': dict(delete_statuses[name]),
                   'error_samples': errors}
            for name in names}


# Phase 2: concurrent clients

def _run_threads(threads, total, work, deadline):
    """Run ``work(thread_index)`` on ``threads`` threads, once per
    ticket, until ``total`` tickets are used or the deadline passes.

    Returns ``(results, wall seconds, completed)``.
    """
    tickets = iter(range(total))
    lock = threading.Lock()
    results = []
    barrier = threading.Barrier(threads + 1)
    failures = []

    def next_ticket():
        with lock:
            return next(tickets, None)

    def loop(index):
        try:
            barrier.wait(timeout=60)
            while time.monotonic() < deadline:
                if next_ticket() is None:
                    return
                outcome = work(index)
                with lock:
                    results.append(outcome)
        except Exception as exc:
            failures.append(repr(exc))

    workers = [threading.Thread(target=loop, args=(index,), daemon=True)
               for index in range(threads)]
    for worker in workers:
        worker.start()
    barrier.wait(timeout=60)
    start = time.perf_counter()
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()) + 5)
    wall = time.perf_counter() - start
    if failures:
        raise RuntimeError('client thread failed: %s' % failures[0])
    completed = len(results) >= total and not any(
        worker.is_alive() for worker in workers)
    return list(results), wall, completed


def concurrent_clients(address, request_spec, total, threads, deadline,
                       timeout, keep_alive=False):
    """``threads`` clients POST ``total`` reservations as fast as the API
    answers; nothing is deleted, so the nodes handed out can be checked
    for doubles afterwards.
    """
    errors, conflicts = [], []
    clients = [Client(address, timeout, keep_alive) for _ in range(threads)]

    def work(index):
        status, data, seconds = clients[index].request(
            'POST', '/v1/reservations',
            reservation_body(request_spec, 'bench-compute-%d' % index))
        node = None
        if status == OK_CREATED:
            node = json.loads(data)['node_uuid']
        else:
            _error_sample(conflicts if status == 409 else errors, status,
                          data)
        return status, node, seconds

    results, wall, completed = _run_threads(threads, total, work, deadline)
    for client in clients:
        client.close()
    statuses = collections.Counter(status_class(status)
                                   for status, _, _ in results)
    nodes = [node for _, node, _ in results if node is not None]
    created = statuses.get(str(OK_CREATED), 0)
    return {
        'completed': completed, 'threads': threads, 'requested': total,
        'keep_alive': keep_alive, 'wall_s': round(wall, 3),
        'reservations_per_s': round(created / wall, 1) if wall else None,
        'statuses': dict(statuses),
        'latency': summarize([seconds for _, _, seconds in results]),
        'nodes_given_twice_in_responses': len(nodes) - len(set(nodes)),
        'error_samples': errors, 'conflict_samples': conflicts,
    }


# Phase 3: the floor, the API's own SQL replayed

def api_sql_floor(backend, api_query, total, threads, pick, deadline):
    """``threads`` DB-API connections each reserve nodes with the
    statements the API sent (``api_query``, see Backend.reserve_once),
    one transaction for the reads and one for the reservation, no HTTP
    and no Python matching.
    """
    local = threading.local()
    connections = []
    lock = threading.Lock()

    def work(index):
        if not hasattr(local, 'connection'):
            local.connection = backend.connect()
            local.rng = random.Random()  # noqa: S311
            with lock:
                connections.append(local.connection)
        start = time.perf_counter()
        node, conflicts = backend.reserve_once(
            local.connection, api_query, 'bench-raw-%d' % index, pick,
            local.rng)
        return node, conflicts, time.perf_counter() - start

    try:
        results, wall, completed = _run_threads(threads, total, work,
                                                deadline)
    finally:
        for connection in connections:
            try:
                connection.close()
            except Exception:  # noqa: S110 - closing is best effort
                pass
    nodes = [node for node, _, _ in results if node is not None]
    return {
        'completed': completed, 'threads': threads, 'requested': total,
        'pick_among': pick, 'wall_s': round(wall, 3),
        'reservations_per_s': round(len(nodes) / wall, 1) if wall else None,
        'reserved': len(nodes), 'pool_empty': len(results) - len(nodes),
        'conflicts_retried': sum(conflicts for _, conflicts, _ in results),
        'latency': summarize([seconds for _, _, seconds in results]),
        'nodes_reserved_twice': len(nodes) - len(set(nodes)),
    }


# Between phases, through the API: what is held, then nothing

LIVE = ('reserved', 'active')


def free_of_class(address, resource_class, timeout=30):
    """The free nodes of ``resource_class``, as ``GET /v1/capacity``
    counts them."""
    status, data, _ = request(address, 'GET', '/v1/capacity',
                              timeout=timeout)
    if status != 200:
        raise RuntimeError('GET /v1/capacity: %s %s' % (status, data[:200]))
    return sum(row['available'] for row in json.loads(data)['capacity']
               if row['resource_class'] == resource_class)


HOLDS_VERSION = {'OpenStack-API-Version': 'baremetal-reservation 1.5'}


def hold_nodes(address, request_spec, holds, amount, timeout=30):
    """Admit ``holds`` holds of ``amount`` nodes each matching
    ``request_spec``, one after the other from two days on, so that
    every reservation of the class must keep them: ``{'holds',
    'amount', 'admitted', 'seconds'}`` (the time of each POST)."""
    start = (datetime.datetime.now(datetime.timezone.utc)
             + datetime.timedelta(days=2))
    seconds = []
    for index in range(holds):
        begins = start + datetime.timedelta(days=index)
        status, data, took = request(address, 'POST', '/v1/holds', {
            'project_id': 'bench-hold-%d' % index, 'amount': amount,
            'request_spec': request_spec, 'start': begins.isoformat(),
            'end': (begins + datetime.timedelta(hours=12)).isoformat()},
            timeout, HOLDS_VERSION)
        if status != 201:
            raise RuntimeError('POST /v1/holds: %s %s' % (status,
                                                          data[:300]))
        seconds.append(took)
    return {'holds': holds, 'amount': amount, 'admitted': len(seconds),
            'post': summarize(seconds)}


def release_all(address, timeout=30):
    """DELETE every live reservation ``GET /v1/reservations`` lists,
    so that the next phase starts with every node free; first, what
    they held: ``{'live_reservations', 'distinct_nodes',
    'nodes_held_twice'}``."""
    held, path = [], '/v1/reservations'
    while path:
        status, data, _ = request(address, 'GET', path, timeout=timeout)
        if status != 200:
            raise RuntimeError('GET %s: %s %s' % (path, status, data[:200]))
        page = json.loads(data)
        held += [(item['uuid'], item['node_uuid'])
                 for item in page['reservations'] if item['state'] in LIVE]
        path = None
        if 'next' in page:
            following = urllib.parse.urlsplit(page['next'])
            path = '%s?%s' % (following.path, following.query)
    for reservation, _node in held:
        status, data, _ = request(address, 'DELETE',
                                  '/v1/reservations/' + reservation,
                                  timeout=timeout)
        if status != OK_DELETED:
            raise RuntimeError('DELETE of reservation %s: %s %s'
                               % (reservation, status, data[:200]))
    holders = collections.Counter(node for _reservation, node in held)
    return {'live_reservations': len(held), 'distinct_nodes': len(holders),
            'nodes_held_twice': sum(1 for count in holders.values()
                                    if count > 1)}
