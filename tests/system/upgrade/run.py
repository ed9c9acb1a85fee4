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

"""A rolling upgrade under load, as grenade runs one: the previous
version serves reservation clients, the schema is expanded and migrated
under it, this version's API and worker join it, the old ones stop, the
schema is contracted; the clients never stop. See README.rst.

    python -m tests.system.upgrade.run        # from 1.0.0: PostgreSQL, MariaDB
    python -m tests.system.upgrade.run --galera --noop-backends postgresql
    python -m tests.system.upgrade.run --from HEAD --backends mysql  # a no-op

The second is what ``tox -e upgrade`` runs.

The previous version ("N-1", ``--from``) is built from git into a
virtualenv of its own (``reserveapi_testing/old_version.py``, cached);
this version ("N") is the environment this runs in. Exits 1 if any check
failed in any run.
"""

import argparse
import collections
import json
import logging
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import sqlalchemy as sa

from reserveapi import version
from reserveapi_testing import galera
from reserveapi_testing import loopback
from reserveapi_testing import observer
from reserveapi_testing import old_version
from tests.system.soak import run as soak_run
from tests.system.soak import soakload
from tests.system.soak import soakservices
from tests.system.upgrade import checks
from tests.system.upgrade import front as front_module
from tests.system.upgrade import load

HERE = pathlib.Path(__file__).resolve().parent
OLD_CLIENT = str(HERE / 'old_client.py')
DEFAULT_FROM = 'd005916'
DEFAULT_FROM_VERSION = '1.0.0'
API_WORKERS = 2
SYNC_INTERVAL = 2
"""Seconds between the workers' inventory syncs, and between two
rewrites of the inventory file: every sync has nodes to write."""
MIGRATE_BATCH = 200
MIGRATE_PASSES = 30
STOP_GRACE = 2.0
"""Seconds after an API stopped within which a connection error still
counts as its stop's."""
COMMAND_TIMEOUT = 300
LIVE = sa.text(
    'SELECT r.uuid, n.uuid FROM reservations r '
    'JOIN nodes n ON n.id = r.node_id '
    "WHERE r.state IN ('reserved', 'active')")
STATUS_CODES = {0: 'Success', 1: 'Warning', 2: 'Failure'}
SERVICES = sa.text('SELECT * FROM services')  # "release" is a MySQL word


def config(run_dir, database_url, log_name, inventory_path):
    return '\n'.join(soak_run.common_config(run_dir, database_url, log_name,
                                            False) + [
        '[inventory]', 'file = %s' % inventory_path,
        'sync_interval = %d' % SYNC_INTERVAL,
        # No Placement in this run: nothing for the mirror to reconcile.
        '[mirror]', 'reconcile_interval = 0',
        '[reservations]', 'reserved_ttl = 0', '',
    ])


def start_databases(backend, run_dir):
    """The database server(s) and the URL each role uses: ``old`` (N-1's
    API and worker, and the checks), ``new`` (N's), ``admin`` (the
    schema commands). On Galera, each role has its own node."""
    if backend == 'galera':
        cluster = galera.GaleraCluster(root_dir=run_dir)
        cluster.setUp()
        urls = [cluster.url(index) + '?charset=utf8mb4'
                for index in range(3)]
        return cluster, dict(zip(('old', 'new', 'admin'), urls,
                                 strict=True))
    server, url = soak_run.start_database(backend, run_dir)
    return server, dict.fromkeys(('old', 'new', 'admin'), url)


def status_lines(output):
    """A line per check of ``reserveapi-status upgrade check --json``;
    the output as it is if it holds no report."""
    for line in output.splitlines():
        if line.startswith('{'):
            try:
                report = json.loads(line)
            except ValueError:
                break
            return '\n'.join('%s: %s. %s' % (
                check['check'], STATUS_CODES.get(check['result'],
                                                 check['result']),
                check['details']) for check in report['checks'])
    return output


class UpgradeRun:
    """One rolling upgrade from ``old`` (an ``OldVersion``) to this
    version on one kind of database."""

    def __init__(self, name, backend, old, settings, run_dir):
        self.name = name
        self.backend = backend
        self.old = old
        self.settings = settings
        self.dir = run_dir
        self.recorder = load.Recorder()
        self.stop_load = threading.Event()
        self.steps = []
        self.schema_steps = []
        self.mixed_status = None
        self.stop_windows = []
        self.stop_exits = {}
        self.old_client = {'exit': None, 'error': 'never ran'}
        self.expanded_at = None
        self.threads = []
        self._cleanups = []
        self.started = time.monotonic()

    def log(self, message):
        print('[%s %6.1fs] %s' % (self.name, time.monotonic()
                                  - self.started, message), flush=True)

    def step(self, label):
        self.steps.append((round(time.monotonic() - self.started, 1), label))
        self.log(label)

    def command(self, name, *args, bin_dir=soakservices.BIN_DIR):
        """A console script (N's, or of ``bin_dir``) run with the admin
        config to the end: (exit code, its output); the output goes to
        commands.log too."""
        result = subprocess.run(
            [soakservices.tool(name, bin_dir), '--config-file',
             self.configs['admin']] + list(args), capture_output=True,
            text=True, check=False, cwd=self.dir, timeout=COMMAND_TIMEOUT)
        output = (result.stdout + result.stderr).strip()
        with open(os.path.join(self.dir, 'commands.log'), 'a') as log:
            log.write('$ %s %s\n%s\nexit %d\n' % (
                name, ' '.join(args), output, result.returncode))
        return result.returncode, output

    def old_command(self, name, *args):
        code, output = self.command(name, *args, bin_dir=self.old.bin_dir)
        if code:
            raise soakservices.ServiceError('N-1 %s %s exited %d: %s' % (
                name, ' '.join(args), code, output[-2000:]))

    def setup(self):
        """The database, N-1's schema and inventory, N-1's API and worker
        behind the front."""
        database, self.urls = start_databases(self.backend, self.dir)
        self._cleanups.append(database.cleanUp)
        self.engine = observer.engine(self.urls['old'], pool_pre_ping=True)
        self._cleanups.append(self.engine.dispose)
        self.inventory = os.path.join(self.dir, 'nodes.json')
        load.write(self.inventory, self.settings['nodes'], 0)
        self.configs = {}
        for name, role in (('old-api', 'old'), ('old-worker', 'old'),
                           ('new-api', 'new'), ('new-worker', 'new'),
                           ('admin', 'admin')):
            self.configs[name] = os.path.join(self.dir, name + '.conf')
            with open(self.configs[name], 'w') as stream:
                stream.write(config(self.dir, self.urls[role],
                                    name + '.log', self.inventory))
        self.old_command('reserveapi-dbsync', 'upgrade')
        self.old_command('reserveapi-manage', 'sync-nodes')
        self.old_api = soakservices.Gunicorn(
            self.configs['old-api'], loopback.free_port(), API_WORKERS,
            os.path.join(self.dir, 'old-gunicorn.log'),
            bin_dir=self.old.bin_dir, cwd=self.dir)
        self._cleanups.append(self.old_api.stop)
        self.old_worker = soakservices.WorkerDaemon(
            self.configs['old-worker'],
            os.path.join(self.dir, 'old-worker.log'),
            bin_dir=self.old.bin_dir)
        self._cleanups.append(self.old_worker.stop)
        self.front = front_module.Front([('N-1', self.old_api.port)])
        self._cleanups.append(self.front.stop)
        self.log('set up: %s; N-1 (%s) API %s behind the front %s' % (
            self.urls['old'], self.old.version, self.old_api.url,
            self.front.url))

    def start_load(self):
        logger = logging.getLogger('keystoneauth.session')
        logger.addHandler(self.recorder)
        self._cleanups.append(lambda: logger.removeHandler(self.recorder))
        self.clients = [load.Client(self.front.url, 'compute-%d' % index,
                                    self.recorder, self.stop_load)
                        for index in range(self.settings['clients'])]
        self.monitor = soakload.Monitor(self.urls['old'], self.recorder,
                                        self.stop_load)
        self.mutator = soak_run.Mutator(
            self.inventory, self.settings['nodes'], self.stop_load,
            interval=SYNC_INTERVAL, write=load.write)
        self.counter_watch = load.CounterWatch(self.urls['old'],
                                               self.stop_load, self.started)
        self._cleanups.append(self.counter_watch.engine.dispose)
        self.threads = self.clients + [self.monitor, self.mutator,
                                       self.counter_watch]
        for thread in self.threads:
            thread.start()

    def roll(self):
        """The upgrade's steps, in order, the load running throughout."""
        phase = self.settings['phase']
        self.step('load on N-1 alone: %d clients' % len(self.clients))
        time.sleep(phase)
        self.step("expand (N's reserveapi-dbsync) while N-1 serves")
        self.schema_step('expand')
        self.expanded_at = time.monotonic()
        time.sleep(phase / 2)
        self.step('migrate, in batches of %d' % MIGRATE_BATCH)
        self.migrate()
        self.step("N's API (gunicorn -w %d) and worker start beside N-1's"
                  % API_WORKERS)
        self.new_api = soakservices.Gunicorn(
            self.configs['new-api'], loopback.free_port(), API_WORKERS,
            os.path.join(self.dir, 'new-gunicorn.log'))
        self._cleanups.append(self.new_api.stop)
        self.new_worker = soakservices.WorkerDaemon(
            self.configs['new-worker'],
            os.path.join(self.dir, 'new-worker.log'))
        self._cleanups.append(self.new_worker.stop)
        self.front.set_backends([('N-1', self.old_api.port),
                                 ('N', self.new_api.port)])
        self.step('the front relays to N-1 and N')
        time.sleep(phase / 2)
        code, output = self.command(
            'reserveapi-status', 'upgrade', 'check', '--json')
        self.mixed_status = {'exit': code, 'output': status_lines(output)}
        self.log('reserveapi-status upgrade check, both versions '
                 'serving: exit %d' % code)
        time.sleep(phase / 2)
        self.step("N-1's worker stops (SIGTERM)")
        self.old_worker.stop()
        self.stop_exits["N-1's worker"] = self.old_worker.process.returncode
        time.sleep(phase / 3)
        self.step("N-1's API stops (SIGTERM: requests under way finish)")
        began = time.monotonic()
        self.old_api.stop()
        self.stop_exits["N-1's API"] = self.old_api.process.returncode
        self.front.set_backends([('N', self.new_api.port)])
        self.stop_windows.append((began, time.monotonic() + STOP_GRACE))
        self.step("N-1's API stopped in %.1fs; the front relays to N "
                  'alone' % (time.monotonic() - began))
        self.step('contract')
        self.schema_step('contract')
        time.sleep(phase / 2)
        self.step("N-1's client reserves and releases through N's API")
        self.old_client = self.run_old_client()
        self.step('load stops')
        self.stop_load.set()
        for thread in self.threads:
            thread.join(120)

    def schema_step(self, step):
        code, output = self.command('reserveapi-dbsync', step)
        self.schema_steps.append({'step': step, 'exit': code,
                                  'output': output})
        self.log('%s: exit %d' % (step, code))

    def migrate(self):
        """``migrate`` until it says nothing is left (exit 0): exit 1
        means more batches are due."""
        passes = 0
        while passes < MIGRATE_PASSES:
            passes += 1
            code, output = self.command('reserveapi-dbsync', 'migrate',
                                        '--max-count', str(MIGRATE_BATCH))
            if code != 1:
                break
        self.schema_steps.append({'step': 'migrate', 'exit': code,
                                  'passes': passes, 'output': output})
        self.log('migrate: exit %d after %d passes' % (code, passes))

    def run_old_client(self):
        """N-1's client, in N-1's interpreter, through the front."""
        spec = 0
        result = subprocess.run(
            [self.old.python, '-I', OLD_CLIENT, self.front.url,
             'compute-old-client', json.dumps(load.SPECS[spec])],
            capture_output=True, text=True, check=False, cwd=self.dir,
            timeout=COMMAND_TIMEOUT)
        try:
            done = json.loads(result.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            done = {'error': result.stderr[-2000:]}
        done.update(exit=result.returncode, spec=spec)
        self.log("N-1's client: exit %d, node %s" % (
            result.returncode, done.get('reserved', {}).get('node_uuid')))
        return done

    def check(self):
        """Every check; the details the report shows."""
        status_code, status_output = self.command(
            'reserveapi-status', 'upgrade', 'check', '--json')
        status_output = status_lines(status_output)
        self.log('reserveapi-status upgrade check: exit %d' % status_code)
        with self.engine.connect() as connection:
            live = dict(connection.execute(LIVE).all())
            try:
                services = sorted(
                    '%s pid %s: %s' % (row.kind, row.pid, row.release)
                    for row in connection.execute(SERVICES))
            except sa.exc.DBAPIError as exc:
                services = 'not readable: %s' % exc.orig
        reader = self.clients[0].client
        capacity = soakload.attempt(self.recorder, 'capacity',
                                    reader.capacity)
        final = self.counter_watch.compare()
        nodes = load.read(self.inventory)
        old_instances = checks.reserved_in_log(
            os.path.join(self.dir, 'old-api.log'))
        new_instances = checks.reserved_in_log(
            os.path.join(self.dir, 'new-api.log'))
        grant_checks, grants = checks.grants(
            self.recorder, nodes, self.expanded_at, old_instances,
            new_instances)
        results = (
            checks.answers(self.recorder, [
                os.path.join(self.dir, name)
                for name in ('old-api.log', 'new-api.log')])
            + checks.connection_errors(self.front, self.recorder,
                                       self.stop_windows, self.started)
            + checks.holds(self.recorder, self.monitor, self.clients,
                           time.monotonic())
            + checks.kept_reservations(reader, self.clients, live)
            + grant_checks
            + checks.counters(self.counter_watch, final)
            + checks.capacity(capacity, nodes, live.values())
            + checks.old_client(self.old_client, self.old, nodes,
                                new_instances)
            + checks.derived_repairs(self.schema_steps, os.path.join(
                self.dir, 'new-worker.log'))
            + checks.graceful_stops(self.stop_exits)
            + checks.commands(self.schema_steps, self.mixed_status, {
                'exit': status_code, 'output': status_output}))
        return results, {
            'grants': grants, 'services': services,
            'status_output': status_output,
            'requests': dict(sorted(self.recorder.statuses.items())),
            'front': {'served': dict(self.front.served),
                      'redispatched': _tally(self.front.redispatched),
                      'failed': _tally(self.front.failed)},
            'inventory_rewrites': self.mutator.rounds,
        }

    def teardown(self):
        self.stop_load.set()
        for thread in self.threads:
            thread.join(30)
        for cleanup in reversed(self._cleanups):
            try:
                cleanup()
            except Exception as exc:  # noqa: BLE001 - keep tearing down
                print('teardown: %r' % exc, file=sys.stderr)


def _tally(events):
    """How many of the front's events of each backend and reason."""
    return dict(collections.Counter('%s: %s' % (event['backend'],
                                                event['reason'])
                                    for event in events))


def upgrade(name, backend, old, settings, root):
    """One run, set up, rolled, checked and torn down: its report."""
    run_dir = tempfile.mkdtemp(prefix='upgrade-%s-' % backend, dir=root)
    run = UpgradeRun(name, backend, old, settings, run_dir)
    report = {'name': name, 'from': '%s (%s)' % (old.commit[:12],
                                                 old.version)}
    try:
        run.setup()
        run.start_load()
        run.roll()
        report['checks'], details = run.check()
        report.update(details)
    except Exception:  # noqa: BLE001 - reported as a failed check
        report['checks'] = [('the run completed', False,
                             [traceback.format_exc()])]
    finally:
        run.teardown()
    report['steps'] = run.steps
    report['seconds'] = round(time.monotonic() - run.started, 1)
    return report


def print_report(report):
    print('\n== %s: upgrade from %s to this version (%s), %ss' % (
        report['name'], report['from'],
        version.version_string(), report['seconds']))
    for at, label in report['steps']:
        print('   %6.1fs %s' % (at, label))
    for key in ('requests', 'front', 'grants', 'services',
                'inventory_rewrites'):
        if key in report:
            print('   %s: %s' % (key.replace('_', ' '), report[key]))
    if 'status_output' in report:
        print('   reserveapi-status upgrade check:\n      %s' % (
            report['status_output'].replace('\n', '\n      ')))
    for name, ok, problems in report['checks']:
        print('   [%s] %s%s' % ('PASS' if ok else 'FAIL', name,
                               '' if ok else ': %s' % problems))


SETTINGS = {
    'full': {'nodes': 600, 'clients': 4, 'phase': 6.0},
    # Galera: a three-node cluster is the machine's heaviest part.
    'short': {'nodes': 300, 'clients': 3, 'phase': 3.0},
}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--from', dest='from_', default=DEFAULT_FROM,
                        help='The previous version\'s commit (default: '
                             '%s, version %s). HEAD makes a no-op upgrade.'
                             % (DEFAULT_FROM, DEFAULT_FROM_VERSION))
    parser.add_argument('--from-version',
                        help='The version it is installed as (default: '
                             '%s for %s, else this version\'s).'
                             % (DEFAULT_FROM_VERSION, DEFAULT_FROM))
    parser.add_argument('--backends', default='postgresql,mysql',
                        help='Comma-separated: postgresql, mysql (private '
                             'servers); empty for none.')
    parser.add_argument('--galera', action='store_true',
                        help='Also a short run on a private three-node '
                             'Galera cluster: N-1 through node 1, N '
                             'through node 2, the schema commands through '
                             'node 3.')
    parser.add_argument('--noop-backends', default='',
                        help='Then the no-op upgrade, from HEAD, on these '
                             '(comma-separated: postgresql, mysql, '
                             'galera).')
    parser.add_argument('--clients', type=int,
                        help='Reservation clients (default: 4; 3 on '
                             'Galera).')
    parser.add_argument('--nodes', type=int,
                        help='Nodes in the inventory (default: 600; 300 '
                             'on Galera).')
    parser.add_argument('--phase', type=float,
                        help='Seconds of load in each phase of the roll '
                             '(default: 6; 3 on Galera).')
    parser.add_argument('--cache-dir', default=str(old_version.DEFAULT_CACHE),
                        help='Where the previous versions\' virtualenvs '
                             'are built and kept.')
    parser.add_argument('--keep', action='store_true',
                        help='Keep the logs even when every check passed.')
    parser.add_argument('--seed', type=int,
                        help='Seed of the clients\' random choices '
                             '(default: a new one, printed).')
    args = parser.parse_args(argv)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2 ** 32)
    return args


def _settings(args, short):
    settings = dict(SETTINGS['short' if short else 'full'])
    for name in settings:
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    return settings


def _old_version(revision, version_, cache_dir):
    if version_ is None:
        default = old_version.resolve(DEFAULT_FROM)
        version_ = (DEFAULT_FROM_VERSION
                    if old_version.resolve(revision) == default
                    else version.version_string())
    started = time.monotonic()
    built = old_version.build(revision, version_, cache_dir)
    print('N-1: %s (%s) in %s, ready in %.1fs' % (
        built.commit[:12], built.version, built.path,
        time.monotonic() - started), flush=True)
    return built


def _backends(text):
    return [name for name in text.split(',') if name]


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # Tear the servers down when stopped (timeout, CI): SIGTERM would
    # otherwise skip every ``finally``.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    started = time.monotonic()
    print('seed: %d' % args.seed, flush=True)
    random.seed(args.seed)
    plan = []
    if args.backends or args.galera:
        old = _old_version(args.from_, args.from_version, args.cache_dir)
        plan += [(backend, backend, old, False)
                 for backend in _backends(args.backends)]
        if args.galera:
            plan.append(('galera', 'galera', old, True))
    if args.noop_backends:
        head = _old_version('HEAD', None, args.cache_dir)
        plan += [('%s, no-op' % backend, backend, head, backend == 'galera')
                 for backend in _backends(args.noop_backends)]
    root = tempfile.mkdtemp(prefix='reserveapi-upgrade-')
    reports = [upgrade(name, backend, old, _settings(args, short), root)
               for name, backend, old, short in plan]
    for report in reports:
        print_report(report)
    results = [ok for report in reports for _name, ok, _problems
               in report['checks']]
    passed = all(results)
    if passed and not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print('logs kept in %s' % root)
    print('upgrade: %s in %.0fs\nchecks: %d passed, %d failed' % (
        'PASS' if passed else 'FAIL', time.monotonic() - started,
        results.count(True), results.count(False)))
    return 0 if passed else 1


if __name__ == '__main__':
    sys.exit(main())
