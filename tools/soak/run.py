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

"""A bounded soak with faults: reservations and aggregate changes from
concurrent clients while API workers, the reserveapi worker and the
database server are killed or restarted. See README.rst.

    python tools/soak/run.py                    # the short form CI runs
    python tools/soak/run.py --duration 600     # ten minutes per database

For each database (a private PostgreSQL and a private MariaDB): a server
of its own, ``reserveapi-dbsync``, the real Placement in its own process,
an inventory of ``--nodes`` nodes, ``gunicorn -w 2`` and the
``reserveapi-worker`` daemon; ``--clients`` clients reserve, confirm and
release through ``reserveapi.client`` while the faults are inflicted in
turn. Then one ``reserveapi-worker --once`` pass, and the checks. Exits 1
if any check failed on any database.
"""

import argparse
import datetime
import json
import os
import pathlib
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))

import soakchecks  # noqa: E402
import soakload  # noqa: E402
import soakservices  # noqa: E402
import sqlalchemy as sa  # noqa: E402

from tests.fixtures import dbservers  # noqa: E402

BACKENDS = {'postgresql': dbservers.PostgreSQLServer,
            'mysql': dbservers.MariaDBServer}
FAULTS = ('api-worker-kill', 'worker-kill-mid-sync', 'database-restart',
          'worker-kill-mid-mirror', 'placement-pause', 'database-crash')
NAMESPACE = uuid.UUID('0b7f0a52-8c5a-4b8e-9a4e-5c0d3f1e2a77')
CLAIM_TIMEOUT = 3
BACKOFF_MAX = 2


def node(index, round_):
    """An eligible node; ``round_`` changes with every rewrite of the
    inventory, so that each sync has every node to update."""
    name = 'soak-%04d' % index
    return {
        'uuid': str(uuid.uuid5(NAMESPACE, name)), 'name': name,
        'resource_class': 'baremetal-soak',
        'properties': {'memory_mb': 8192, 'cpus': 8, 'local_gb': 100,
                       'cpu_arch': 'x86_64',
                       'capabilities': 'boot_mode:uefi,soak_round:%d'
                                       % round_},
        'traits': ['CUSTOM_RAID'], 'provision_state': 'available',
        'power_state': 'power off', 'maintenance': False, 'retired': False,
        'instance_uuid': None, 'conductor_group': '', 'owner': None,
        'lessee': None,
    }


def write_inventory(path, count, round_):
    """Replace the file at once, so a sync never reads half of it."""
    partial = path + '.partial'
    with open(partial, 'w') as stream:
        json.dump({'nodes': [node(index, round_)
                             for index in range(count)]}, stream)
    os.replace(partial, path)


def config(run_dir, database_url, placement_url, log_name, debug):
    return '\n'.join([
        '[DEFAULT]',
        'debug = %s' % debug,
        'log_file = %s' % os.path.join(run_dir, log_name),
        'state_path = %s' % run_dir,
        '[api]', 'auth_strategy = noauth',
        '[database]', 'connection = %s' % database_url,
        '[inventory]', 'file = %s' % os.path.join(run_dir, 'nodes.json'),
        'sync_interval = 1',
        '[mirror]', 'inline_timeout = 1', 'retry_interval = 1',
        'backoff_base = 1', 'backoff_max = %d' % BACKOFF_MAX,
        'claim_timeout = %d' % CLAIM_TIMEOUT, 'reconcile_interval = 2',
        'resolve_hosts_via_nova = false',
        '[placement]', 'auth_type = admin_token',
        'endpoint = %s' % placement_url,
        'token = %s' % soakservices.PLACEMENT_TOKEN,
        '[reservations]', 'reserved_ttl = 0', '',
    ])


class Mutator(threading.Thread):
    """Rewrites the inventory every ``interval`` seconds."""

    def __init__(self, path, count, stop, interval=2.0):
        super().__init__(name='inventory', daemon=True)
        self.path, self.count, self.stop = path, count, stop
        self.interval = interval
        self.rounds = 0

    def run(self):
        while not self.stop.wait(self.interval):
            self.rounds += 1
            write_inventory(self.path, self.count, self.rounds)


class BackendRun:
    """One soak run on one kind of database server."""

    def __init__(self, backend, args, run_dir):
        self.backend = backend
        self.args = args
        self.dir = run_dir
        self.recorder = soakload.Recorder()
        self.faults = []
        self.stop_load = threading.Event()
        self.hosts = ['compute-%d' % index for index in range(args.clients)]
        # Aggregates span twice as many hosts as there are clients, so a
        # reconcile pass has enough providers to read to be caught in.
        self.aggregate_hosts = ['compute-%d' % index
                                for index in range(2 * args.clients)]
        self._cleanups = []

    def log(self, message):
        print('[%s %6.1fs] %s' % (self.backend, time.monotonic()
                                  - self.started, message), flush=True)

    def setup(self):
        self.started = time.monotonic()
        self.server = BACKENDS[self.backend](root_dir=self.dir)
        self.server.setUp()
        self._cleanups.append(self.server.cleanUp)
        url = self.server.create_database('reserveapi')
        if self.backend == 'mysql':
            url += '?charset=utf8mb4'
        self.engine = sa.create_engine(url, pool_pre_ping=True)
        self._cleanups.append(self.engine.dispose)
        self.placement = soakservices.Placement(self.dir)
        self._cleanups.append(self.placement.stop)
        for host in self.aggregate_hosts:
            self.placement.create_provider(host)
        self.inventory = os.path.join(self.dir, 'nodes.json')
        write_inventory(self.inventory, self.args.nodes, 0)
        self.api_config = self._write_config('api.conf', url, 'api.log',
                                             False)
        self.worker_config = self._write_config('worker.conf', url,
                                                'worker.log', True)
        setup_log = os.path.join(self.dir, 'setup.log')
        soakservices.run_tool(setup_log, soakservices.tool(
            'reserveapi-dbsync'), '--config-file', self.api_config,
            'upgrade')
        soakservices.run_tool(setup_log, soakservices.tool(
            'reserveapi-manage'), '--config-file', self.api_config,
            'sync-nodes')
        self.api = soakservices.Gunicorn(
            self.api_config, dbservers.free_port(), self.args.workers,
            os.path.join(self.dir, 'gunicorn.log'))
        self._cleanups.append(self.api.stop)
        self.worker = soakservices.WorkerDaemon(
            self.worker_config, os.path.join(self.dir, 'worker.log'))
        self._cleanups.append(lambda: self.worker.stop())
        self.log('set up: %s, Placement %s, API %s' % (
            self.server.url(), self.placement.url, self.api.url))

    def _write_config(self, name, database_url, log_name, debug):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as stream:
            stream.write(config(self.dir, database_url, self.placement.url,
                                log_name, debug))
        return path

    def start_load(self):
        logger = soakload.logging.getLogger('keystoneauth.session')
        logger.addHandler(self.recorder)
        self._cleanups.append(lambda: logger.removeHandler(self.recorder))
        self.clients = [soakload.ReservationClient(
            self.api.url, host, self.recorder, self.stop_load)
            for host in self.hosts]
        self.aggregates = soakload.AggregateClient(
            self.api.url, self.aggregate_hosts, self.recorder,
            self.stop_load)
        self.monitor = soakload.Monitor(self.engine.url.render_as_string(
            hide_password=False), self.recorder, self.stop_load)
        self.mutator = Mutator(self.inventory, self.args.nodes,
                               self.stop_load)
        self.threads = self.clients + [self.aggregates, self.monitor,
                                       self.mutator]
        for thread in self.threads:
            thread.start()

    def inflict_faults(self):
        """The faults in turn, evenly spread over ``--duration``."""
        duration = self.args.duration
        count = max(len(FAULTS), int(duration // self.args.fault_interval))
        warmup = min(3.0, duration / 10)
        step = (duration - 2 * warmup) / count
        began = time.monotonic()
        for number in range(count):
            at = began + warmup + number * step
            time.sleep(max(0.0, at - time.monotonic()))
            kind = FAULTS[number % len(FAULTS)]
            detail = self.inflict(kind)
            detail.update(kind=kind, at=round(time.monotonic() - began, 1))
            self.faults.append(detail)
            self.log('fault %s: %s' % (kind, detail))
        time.sleep(max(0.0, began + duration - time.monotonic()))

    def inflict(self, kind):
        if kind == 'api-worker-kill':
            cut_before = self.recorder.counts[
                'connection retries (keystoneauth1)']
            respawned = self.api.kill_worker()
            time.sleep(2)
            return {'respawned_in_s': round(respawned, 2),
                    'client_connection_retries_next_2s': self.recorder.counts[
                        'connection retries (keystoneauth1)'] - cut_before}
        if kind.startswith('worker-kill'):
            return self.kill_worker_in(
                ('inventory-sync',) if kind.endswith('sync')
                else ('mirror-reconcile', 'mirror-retry'))
        if kind == 'placement-pause':
            self.placement.pause(2.0)
            return {'paused_s': 2.0}
        started = time.monotonic()
        if kind == 'database-restart':
            self.server.restart()
        else:
            self.server.kill()
            self.server.start()
        return {'down_s': round(time.monotonic() - started, 2)}

    def kill_worker_in(self, jobs, tries=3):
        """Kill the daemon as one of ``jobs`` starts; again (a new kill)
        if the job was over before the kill, up to ``tries`` kills."""
        kills = []
        for _try in range(tries):
            job, mid = self.worker.kill_during(jobs)
            kills.append(job)
            if mid:
                break
        return {'job': job, 'kills': len(kills), 'landed_mid_job': mid}

    def settle(self):
        """Stop the load, release what a lost answer left, let claims and
        back-offs run out, then one ``reserveapi-worker --once`` pass."""
        self.stop_load.set()
        for thread in self.threads:
            thread.join(120)
        self.lost_found = sum(client.forget_lost() for client in self.clients)
        self.worker.stop()
        time.sleep(max(CLAIM_TIMEOUT, BACKOFF_MAX) + 1)
        started = time.monotonic()
        soakservices.run_tool(
            os.path.join(self.dir, 'worker.log.out'),
            soakservices.tool('reserveapi-worker'), '--config-file',
            self.worker_config, '--once')
        self.final_pass_s = round(time.monotonic() - started, 1)
        self.log('final worker pass: %.1fs' % self.final_pass_s)

    def check(self):
        return (soakchecks.answers(self.recorder,
                                   os.path.join(self.dir, 'api.log'))
                + soakchecks.holds(self.recorder, self.monitor, self.engine)
                + soakchecks.retries(self.recorder)
                + soakchecks.mirror(self.engine, self.placement,
                                    self.aggregates.used)
                + soakchecks.inventory(self.engine, self.inventory)
                + soakchecks.faults(self.faults, FAULTS))

    def report(self, checks):
        faults = {}
        for fault in self.faults:
            summary = faults.setdefault(fault['kind'], {'count': 0})
            summary['count'] += 1
            if 'landed_mid_job' in fault:
                summary['kills'] = summary.get('kills', 0) + fault['kills']
                summary['landed_mid_job'] = summary.get(
                    'landed_mid_job', 0) + fault['landed_mid_job']
        counts = dict(sorted(self.recorder.counts.items()))
        return {
            'backend': self.backend,
            'duration_s': self.args.duration,
            'clients': self.args.clients,
            'api_workers': self.args.workers,
            'nodes': self.args.nodes,
            'requests': sum(self.recorder.statuses.values()),
            'statuses': {str(status): count for status, count in sorted(
                self.recorder.statuses.items())},
            'counts': counts,
            'max_attempts': dict(self.recorder.max_attempts),
            'faults': faults,
            'fault_log': self.faults,
            'inventory_rewrites': self.mutator.rounds,
            'reservations_found_after_lost_answers': self.lost_found,
            'final_worker_pass_s': self.final_pass_s,
            'checks': [{'check': name, 'ok': ok, 'problems': problems}
                       for name, ok, problems in checks],
        }

    def teardown(self):
        for cleanup in reversed(self._cleanups):
            try:
                cleanup()
            except Exception as exc:  # noqa: BLE001 - keep tearing down
                print('teardown: %r' % exc, file=sys.stderr)


def run_backend(backend, args, root):
    run_dir = tempfile.mkdtemp(prefix='soak-%s-' % backend, dir=root)
    run = BackendRun(backend, args, run_dir)
    try:
        run.setup()
        run.start_load()
        run.inflict_faults()
        run.settle()
        result = run.report(run.check())
    finally:
        run.teardown()
    result['logs'] = run_dir
    return result


def print_result(result):
    print('\n== %s: %d requests in %ss, %d faults' % (
        result['backend'], result['requests'], result['duration_s'],
        sum(fault['count'] for fault in result['faults'].values())))
    print('   statuses: %s' % result['statuses'])
    for name, value in result['counts'].items():
        print('   %s: %s' % (name, value))
    for kind, fault in sorted(result['faults'].items()):
        print('   fault %s: %s' % (kind, fault))
    for check in result['checks']:
        print('   [%s] %s%s' % ('PASS' if check['ok'] else 'FAIL',
                               check['check'],
                               '' if check['ok'] else ': %s'
                               % check['problems']))


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--backends', default='postgresql,mysql',
                        help='Comma-separated: postgresql, mysql.')
    parser.add_argument('--duration', type=float, default=40,
                        help='Seconds of load and faults per database.')
    parser.add_argument('--clients', type=int, default=8)
    parser.add_argument('--workers', type=int, default=2,
                        help='gunicorn API workers.')
    parser.add_argument('--nodes', type=int, default=500)
    parser.add_argument('--fault-interval', type=float, default=6.0,
                        help='Seconds between faults (at least one of '
                             'each kind is inflicted).')
    parser.add_argument('--keep', action='store_true',
                        help='Keep the logs even when every check passed.')
    parser.add_argument('--output', default=str(HERE / 'out'),
                        help='Directory for the JSON results.')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # Tear the servers down when stopped (timeout, CI): SIGTERM would
    # otherwise skip every ``finally``.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    root = tempfile.mkdtemp(prefix='reserveapi-soak-')
    results = [run_backend(backend, args, root)
               for backend in args.backends.split(',')]
    for result in results:
        print_result(result)
    passed = all(check['ok'] for result in results
                 for check in result['checks'])
    os.makedirs(args.output, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y%m%dT%H%M%SZ')
    output = os.path.join(args.output, 'soak-%s.json' % stamp)
    with open(output, 'w') as stream:
        json.dump(results, stream, indent=2, default=str)
    if passed and not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print('logs kept in %s' % root)
    print('results: %s\nsoak: %s' % (output, 'PASS' if passed else 'FAIL'))
    return 0 if passed else 1


if __name__ == '__main__':
    sys.exit(main())
