#!/usr/bin/env python3
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

"""Benchmark reservations: sync time, single-client latency, concurrent
throughput and the floor of the API's own SQL, per database backend.

Usage (see tools/bench/README.rst)::

    tox -e bench                                   # 100,000 nodes
    tox -e bench -- --nodes 5000 --requests 200    # a quick check
    python -m tools.bench.run --backends sqlite,postgresql,mysql

For each backend: a throwaway database (SQLite: a temporary file), a
config file, ``reserveapi-dbsync upgrade``, ``reserveapi-manage
sync-nodes`` (initial, then nothing changed, then unless
``--no-bulk-syncs`` every node changed, 10 % of them removed, and back
to the first document: MariaDB's bulk syncs are judged against
PostgreSQL's in the same run), ANALYZE (unless ``--no-analyze``), then

1. one client POSTing reservations over HTTP to ``gunicorn -w 1``;
2. on PostgreSQL and MySQL, ``--threads`` clients against ``gunicorn -w
   2`` (reservations/s, statuses, nodes given twice);
3. on PostgreSQL and MySQL, the floor: as many threads reserve with
   the very statements the API sends (captured by api_statements.py),
   its reads, then its reservation's INSERT, as raw SQL
   (reservations/s): the API's own database work;
4. with ``--metrics both``, the single client and (PostgreSQL, MySQL)
   the concurrent clients again, against two servers at once, one with
   ``[metrics] enabled`` off and one on (gunicorn with
   reserveapi.wsgi.gunicorn_config, /metrics scraped every second), the
   load alternating between them: what metrics cost the hot path.

Prints a table with PASS/FAIL against the targets of issue 25 and writes
the results as JSON to tools/bench/out/.  Exits 0 when every phase ran
and every correctness check held (targets missed do not change the exit
code unless ``--fail-on-target``), 1 otherwise, 3 when only a target
was missed under ``--fail-on-target``.
"""

import argparse
import contextlib
import datetime
import json
import os
import pathlib
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from tools.bench import benchdb
from tools.bench import benchload

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
GENERATOR = REPO / 'tools' / 'generate_inventory.py'

# Issue 25's targets, at 100,000 nodes.
TARGET_VS_API_SQL = 0.9       # concurrent / the API's SQL replayed
TARGET_API_CPU_MS = 2.5       # API CPU per concurrent reservation
TARGET_SYNC_INITIAL_S = 20.0
TARGET_SYNC_NO_CHANGE_S = 2.0
# At a million nodes (issue 25), against the 100,000-node reference
# measured in the same run: the sync's seconds and peak RSS, and the
# single client's POST p50 as a multiple of the reference's.
MILLION = 1000000
TARGET_SYNC_INITIAL_S_1M = 150.0
TARGET_SYNC_NO_CHANGE_S_1M = 10.0
TARGET_SYNC_PEAK_RSS_MB_1M = 1024.0
# Issue 37: MariaDB's bulk syncs (BULK_SYNCS) within this factor of
# PostgreSQL's, at the same size in the same run.
TARGET_MYSQL_VS_POSTGRESQL = 1.5
DROP_PERCENT = 10
TARGET_POST_P50_VS_REFERENCE = 1.5
REFERENCE_NODES = 100000
# Backends whose single-client latency and sync time issue 25 sets
# targets for.
LATENCY_TARGET_BACKENDS = ('sqlite', 'postgresql')
# Backends whose concurrent throughput issue 25 sets targets for.
THROUGHPUT_TARGET_BACKENDS = ('postgresql',)
# Issue 34: with metrics on, the single client's POST p50 and the
# concurrent throughput within this fraction of metrics off.
TARGET_METRICS_COST = 0.05
METRICS_SETTINGS = 'python:reserveapi.wsgi.gunicorn_config'


class StepFailed(Exception):
    pass


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument('--backends', default='sqlite,postgresql',
                        help='Comma-separated: %s.'
                        % ', '.join(benchdb.BACKENDS))
    parser.add_argument('--nodes', type=int, default=100000,
                        help='Inventory size.')
    parser.add_argument('--reference-nodes', type=int,
                        help='With --nodes above it, every backend is first '
                             'measured at this size too, in the same run, '
                             'for the targets at scale (POST p50 at most '
                             '%g x the reference\'s). Default: %d when '
                             '--nodes is larger, else none; 0: none.'
                        % (TARGET_POST_P50_VS_REFERENCE, REFERENCE_NODES))
    parser.add_argument('--seed', type=int, default=1,
                        help='Inventory seed (same seed, same nodes).')
    parser.add_argument('--spec', choices=sorted(benchload.SPECS),
                        default='baremetal',
                        help='Request spec to reserve with (see '
                             'benchload.SPECS).')
    parser.add_argument('--holds', type=int, default=0,
                        help='Holds of the spec admitted before the '
                             'reservations, one a day from two days on: '
                             'every reservation of the class then keeps '
                             'them.')
    parser.add_argument('--hold-amount', type=int, default=10,
                        help='Nodes each of the --holds promises.')
    parser.add_argument('--requests', type=int, default=500,
                        help='Single-client POSTs measured.')
    parser.add_argument('--warmup', type=int, default=20,
                        help='Single-client POSTs (and DELETEs) before '
                             'measuring.')
    parser.add_argument('--no-delete', dest='delete', action='store_false',
                        help='Keep each single-client reservation instead '
                             'of deleting it right after.')
    parser.add_argument('--no-bulk-syncs', dest='bulk_syncs',
                        action='store_false',
                        help='Leave out the syncs that change every node, '
                             'remove %d percent of them and restore them.'
                        % DROP_PERCENT)
    parser.add_argument('--sync-only', action='store_true',
                        help='Only the syncs: no requests.')
    parser.add_argument('--no-analyze', dest='analyze', action='store_false',
                        help='Do not ANALYZE after the sync: measure with '
                             'whatever statistics the database has (none, '
                             'on PostgreSQL with autovacuum off).')
    parser.add_argument('--threads', type=int, default=8,
                        help='Client threads (and SQL connections) of the '
                             'concurrent and floor phases.')
    parser.add_argument('--workers', type=int, default=2,
                        help='gunicorn workers of the concurrent phase.')
    parser.add_argument('--worker-class', default='sync',
                        choices=('sync', 'gthread'),
                        help="gunicorn's worker class (sync closes every "
                             'connection; gthread keeps them alive).')
    parser.add_argument('--worker-threads', type=int, default=1,
                        help='Threads per gunicorn worker (gthread).')
    parser.add_argument('--keep-alive', action='store_true',
                        help='Clients reuse their connection while the '
                             'server keeps it open.')
    parser.add_argument('--concurrent-requests', type=int,
                        help='Reservations POSTed by the concurrent phase, '
                             'and made as raw SQL by the floor. Default: '
                             'nodes/20, between 200 and 2000, well under '
                             'the matching pool.')
    parser.add_argument('--pick-among', type=int, default=10,
                        help='The floor: a reservation takes one of the '
                             'first N nodes the API\'s read finds, at '
                             'random, as [matcher] subset_size does.')
    parser.add_argument('--step-timeout', type=float, default=1800,
                        help='Seconds allowed for each step (generate, '
                             'migrate, sync, each measured phase).')
    parser.add_argument('--request-timeout', type=float, default=30,
                        help='Seconds allowed for one HTTP request.')
    parser.add_argument('--output-dir', default=str(HERE / 'out'),
                        help='Where results-<timestamp>.json goes.')
    parser.add_argument('--keep', action='store_true',
                        help='Keep the work directory and the databases '
                             '(for profiling); print where they are.')
    parser.add_argument('--fail-on-target', action='store_true',
                        help='Exit 3 when a target is missed.')
    parser.add_argument('--metrics', choices=('off', 'on', 'both'),
                        default='off',
                        help='[metrics] enabled for the phases (on: under '
                             'gunicorn -c %s); both: the phases with them '
                             'off, then single and concurrent clients '
                             'against a server with them off and one with '
                             'them on at once, /metrics scraped every '
                             'second.' % METRICS_SETTINGS)
    parser.add_argument('--metrics-rounds', type=int, default=3,
                        help='Rounds with --metrics both; each mode\'s '
                             'figure is the median of its rounds.')
    args = parser.parse_args(argv)
    args.backends = [name.strip() for name in args.backends.split(',')
                     if name.strip()]
    unknown = set(args.backends) - set(benchdb.BACKENDS)
    if unknown or not args.backends:
        parser.error('--backends: choose among %s'
                     % ', '.join(benchdb.BACKENDS))
    for name in ('nodes', 'requests', 'threads', 'workers', 'pick_among',
                 'worker_threads', 'metrics_rounds'):
        if getattr(args, name) < 1:
            parser.error('--%s must be at least 1' % name.replace('_', '-'))
    if args.concurrent_requests is None:
        args.concurrent_requests = min(2000, max(200, args.nodes // 20))
    if args.reference_nodes is None:
        args.reference_nodes = (REFERENCE_NODES
                                if args.nodes > REFERENCE_NODES else 0)
    if args.reference_nodes >= args.nodes:
        args.reference_nodes = 0
    return args


def sync_targets(nodes):
    """``(initial s, no change s, peak RSS MB or None)`` at ``nodes``."""
    if nodes >= MILLION:
        return (TARGET_SYNC_INITIAL_S_1M, TARGET_SYNC_NO_CHANGE_S_1M,
                TARGET_SYNC_PEAK_RSS_MB_1M)
    return TARGET_SYNC_INITIAL_S, TARGET_SYNC_NO_CHANGE_S, None


# Steps

def script(name):
    """A console script of this Python's environment."""
    candidate = pathlib.Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise StepFailed('%s not found: is reserveapi installed in this '
                         'environment?' % name)
    return found


def run_step(label, command, timeout, env=None):
    """Run a command; ``(usage, stdout)``, usage holding its wall and CPU
    seconds, peak RSS and the load average before and after; StepFailed
    on error.
    """
    log('  %s ...' % label)
    load_before = loadavg()
    returncode, stdout, stderr, usage = benchload.run_measured(
        command, timeout, env=env, cwd=str(REPO))
    usage['load'] = {'before': load_before, 'after': loadavg()}
    if returncode is None:
        raise StepFailed('%s: no result after %ss' % (label, timeout))
    if returncode != 0:
        raise StepFailed('%s failed (exit %s):\n%s%s' % (
            label, returncode, stdout[-2000:], stderr[-2000:]))
    return usage, stdout


def write_config(path, workdir, backend, inventory, metrics=False):
    connection = backend.connection_url.replace('$', '$$')
    path.write_text(
        '# Written by tools/bench/run.py for one benchmark run.\n'
        '[DEFAULT]\n'
        'state_path = %(state)s\n'
        '\n[api]\n'
        'host_ip = 127.0.0.1\n'
        'auth_strategy = noauth\n'
        '\n[database]\n'
        'connection = %(connection)s\n'
        '\n[inventory]\n'
        'source = file\n'
        'file = %(inventory)s\n'
        '\n[metrics]\n'
        'enabled = %(metrics)s\n'
        % {'state': workdir / ('state-' + backend.kind),
           'connection': connection, 'inventory': inventory,
           'metrics': metrics})


_COUNTS = re.compile(r'(\d+) (added|updated|unchanged|removed)')


def sync_counts(stdout):
    return {word: int(number) for number, word in _COUNTS.findall(stdout)}


loadavg = benchload.loadavg


class Phase:
    """Records the load average before and after a phase, and, given a
    gunicorn, its processes' CPU seconds spent in the phase and their
    peak RSS, in ``record[name]``.
    """

    def __init__(self, record, name, server=None):
        self.record = record.setdefault('phases', {}).setdefault(name, {})
        self.server = server
        self._usage = None

    def __enter__(self):
        self.record['load_before'] = loadavg()
        if self.server is not None:
            self._usage = self.server.usage()
        return self

    def __exit__(self, *exc_info):
        self.record['load_after'] = loadavg()
        if self.server is None:
            return
        before, after = self._usage, self.server.usage()
        workers = []
        for pid, end in sorted(after['workers'].items()):
            # A worker gunicorn started during the phase counts whole.
            start = before['workers'].get(pid, {'cpu_s': 0.0})
            workers.append({'cpu_s': round(end['cpu_s'] - start['cpu_s'], 2),
                            'peak_rss_mb': end['peak_rss_mb']})
        self.record['api_workers'] = workers
        self.record['api_master_peak_rss_mb'] = (
            after['master'] or {}).get('peak_rss_mb')
        self.record['api_cpu_s'] = round(sum(worker['cpu_s']
                                             for worker in workers), 2)


def log(text):
    print(text, file=sys.stderr, flush=True)


# One backend

BULK_SYNCS = ('initial', 'changed', 'removed')
"""The syncs MariaDB must do within TARGET_MYSQL_VS_POSTGRESQL of
PostgreSQL's time, in the same run."""


def sync_steps(nodes, inventory):
    """(name, document, expected counts) of each timed sync, in order:
    the first, one that finds nothing changed, then (given the changed
    documents) one that changes every node, one that finds DROP_PERCENT
    of them gone, and one back to the first document."""
    steps = [('initial', 'original', {'added': nodes}),
             ('no_change', 'original', {'unchanged': nodes})]
    if 'changed' in inventory:
        dropped = nodes * DROP_PERCENT // 100
        steps += [('changed', 'changed', {'updated': nodes}),
                  ('removed', 'removed', {'removed': dropped,
                                          'unchanged': nodes - dropped}),
                  ('restore', 'original', {'added': dropped,
                                           'updated': nodes - dropped})]
    return steps


def _use_document(link, document):
    """Point the config's inventory file at ``document``."""
    temporary = link.with_suffix('.next')
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(document)
    temporary.replace(link)


def bench_backend(kind, args, workdir, inventory, record, nodes):
    """Run every phase on one backend at ``nodes`` nodes (the documents
    ``inventory``, by name: see sync_steps), filling ``record`` as it
    goes."""
    record.update(kind=kind, nodes=nodes)
    resource_class, request_spec = benchload.SPECS[args.spec]
    timeout = args.step_timeout
    with benchdb.Backend(kind, str(workdir), keep=args.keep) as backend:
        record['database'] = {'name': backend.name,
                              'version': backend.version}
        log('%s: database %s (%s)' % (kind, backend.name, backend.version))
        config = workdir / ('reserveapi-%s-%d.conf' % (kind, nodes))
        # The file the config names: each sync links it to its document.
        config_inventory = workdir / ('inventory-%s-%d.json' % (kind, nodes))
        write_config(config, workdir, backend, config_inventory,
                     metrics=args.metrics == 'on')
        settings = METRICS_SETTINGS if args.metrics == 'on' else None
        record['config_file'] = str(config)
        base = [script('reserveapi-dbsync'), '--config-file', str(config)]
        manage = [script('reserveapi-manage'), '--config-file', str(config)]
        usage, _ = run_step('dbsync upgrade', base + ['upgrade'], timeout)
        record['dbsync_s'] = usage['wall_s']

        sync = record['sync'] = {}
        for name, document, expect in sync_steps(nodes, inventory):
            _use_document(config_inventory, inventory[document])
            usage, stdout = run_step('sync-nodes (%s)' % name,
                                     manage + ['sync-nodes'], timeout)
            counts = sync_counts(stdout)
            sync[name] = dict(usage, seconds=usage['wall_s'],
                              counts=counts)
            if any(counts.get(word, 0) != number
                   for word, number in expect.items()):
                raise StepFailed('sync-nodes (%s): expected %s, got %s'
                                 % (name, expect, stdout))
        if args.sync_only:
            return
        if args.analyze:
            start = time.perf_counter()
            backend.analyze()
            record['analyze_s'] = round(time.perf_counter() - start, 2)
        log('  single client: %d POSTs (+%d warm-up), gunicorn -w 1'
            % (args.requests, args.warmup))
        with benchload.Gunicorn(str(config), 1,
                                str(workdir / ('gunicorn-%s-w1.log' % kind)),
                                worker_class=args.worker_class,
                                threads=args.worker_threads,
                                settings=settings) as server:
            eligible = benchload.free_of_class(
                server.address, resource_class, args.request_timeout)
            record['pool'] = {'nodes': nodes, 'spec_resource_class':
                              resource_class, 'free_of_that_class': eligible}
            if args.holds:
                log('  %d holds of %d nodes' % (args.holds, args.hold_amount))
                record['holds'] = benchload.hold_nodes(
                    server.address, request_spec, args.holds,
                    args.hold_amount, args.request_timeout)
            with Phase(record, 'single', server):
                record['single'] = benchload.single_client(
                    server.address, request_spec, args.requests,
                    args.warmup, args.delete, time.monotonic() + timeout,
                    args.request_timeout, args.keep_alive)
            if not args.delete:
                benchload.release_all(server.address, args.request_timeout)

        if kind not in benchdb.CONCURRENT_BACKENDS:
            if args.metrics == 'both':
                record['metrics_cost'] = metrics_cost(
                    kind, args, workdir, backend, inventory['original'],
                    request_spec, nodes, concurrent=False)
            return
        if args.concurrent_requests > eligible // 2:
            log('  NOTE: %d concurrent requests for %d free nodes of the '
                'class: the matching pool may run dry (409s)'
                % (args.concurrent_requests, eligible))
        log('  concurrent: %d POSTs, %d threads, gunicorn -w %d'
            % (args.concurrent_requests, args.threads, args.workers))
        with benchload.Gunicorn(
                str(config), args.workers,
                str(workdir / ('gunicorn-%s-%d-w%d.log'
                               % (kind, nodes, args.workers))),
                worker_class=args.worker_class,
                threads=args.worker_threads, settings=settings) as server:
            # Warm every worker up (connections, caches) before timing:
            # reservations made and deleted again, unmeasured.
            benchload.single_client(
                server.address, request_spec, 0, 4 * args.workers, True,
                time.monotonic() + timeout, args.request_timeout)
            with Phase(record, 'concurrent', server) as phase:
                concurrent = benchload.concurrent_clients(
                    server.address, request_spec, args.concurrent_requests,
                    args.threads, time.monotonic() + timeout,
                    args.request_timeout, args.keep_alive)
            census = benchload.release_all(server.address,
                                           args.request_timeout)
        created = concurrent['statuses'].get('201', 0)
        if created:
            concurrent['api_cpu_ms_per_reservation'] = round(
                1000 * phase.record['api_cpu_s'] / created, 2)
        concurrent['workers'] = args.workers
        concurrent['db_check'] = census
        concurrent['db_matches_responses'] = (
            census['live_reservations'] == created)
        record['concurrent'] = concurrent
        if args.holds:
            # Each reservation moved the holds' guard on from the version
            # it read: replayed, the captured statements would find it
            # moved on and insert nothing.
            log('  the API\'s SQL is not replayed with holds')
            return

        log('  the API\'s SQL replayed: %d reservations, %d threads'
            % (args.concurrent_requests, args.threads))
        _usage, captured = run_step(
            'capture the API\'s SQL',
            [sys.executable, '-m', 'tools.bench.api_statements',
             '--config-file', str(config), '--spec', args.spec], timeout)
        api_query = json.loads(captured)
        record['api_statements'] = api_query
        with Phase(record, 'api_sql'):
            floor = benchload.api_sql_floor(
                backend, api_query, args.concurrent_requests, args.threads,
                args.pick_among, time.monotonic() + timeout)
        # The API lists and releases what the replay reserved.
        with benchload.Gunicorn(str(config), 1,
                                str(workdir / ('gunicorn-%s-release.log'
                                               % kind))) as server:
            floor['db_check'] = benchload.release_all(server.address,
                                                      args.request_timeout)
        record['api_sql'] = floor
        if args.metrics == 'both':
            record['metrics_cost'] = metrics_cost(
                kind, args, workdir, backend, inventory['original'],
                request_spec, nodes, concurrent=True)
        if args.keep:
            log('  kept database %s' % backend.connection_url)


def metrics_cost(kind, args, workdir, backend, inventory, request_spec,
                 nodes, concurrent):
    """The single client's POST p50 and (``concurrent``) the concurrent
    clients' reservations/s with ``[metrics] enabled`` off and on.

    Both servers run at once, on the same database, one with metrics
    off and one with them on (under gunicorn_config, /metrics scraped
    every second), and the load alternates between them: the single
    client sends each POST to one then the other, the concurrent
    clients split in two halves that run at the same time, one per
    server. Whatever else loads the machine then weighs on both alike.
    Each mode's figure is the median of ``--metrics-rounds`` rounds; the
    change is the median of the rounds' on/off ratios (rounds are
    paired, so that a slower round weighs on both modes alike).
    """
    timeout = args.step_timeout
    configs = {}
    for mode in MODES:
        configs[mode] = workdir / ('reserveapi-%s-%d-metrics-%s.conf'
                                   % (kind, nodes, mode))
        write_config(configs[mode], workdir, backend, inventory,
                     metrics=mode == 'on')
    rounds = {mode: [] for mode in MODES}
    for number in range(args.metrics_rounds):
        log('  metrics off and on, round %d: single client%s'
            % (number + 1, ', concurrent' if concurrent else ''))
        measured = _metrics_round(args, workdir, kind, configs, request_spec,
                                  concurrent, timeout)
        for mode in MODES:
            rounds[mode].append(measured[mode])
    figures = {'post_p50_ms': lambda one: one['single']['post']['p50_ms']}
    if concurrent:
        figures['reservations_per_s'] = (
            lambda one: one['concurrent']['reservations_per_s'])
    result = {'rounds': rounds, 'on_vs_off': {}}
    for name, figure in figures.items():
        for mode in MODES:
            result.setdefault(mode, {})[name] = round(statistics.median(
                figure(one) for one in rounds[mode]), 2)
        result['on_vs_off'][name] = round(statistics.median(
            figure(on) / figure(off)
            for off, on in zip(rounds['off'], rounds['on'], strict=True)), 4)
    return result


MODES = ('off', 'on')


def _metrics_round(args, workdir, kind, configs, request_spec, concurrent,
                   timeout):
    """One round of metrics_cost: ``{mode: {'single', 'concurrent',
    'scrapes'}}``."""
    workers = args.workers if concurrent else 1
    with contextlib.ExitStack() as stack:
        servers = {mode: stack.enter_context(benchload.Gunicorn(
            str(configs[mode]), workers,
            str(workdir / ('gunicorn-%s-metrics-%s.log' % (kind, mode))),
            worker_class=args.worker_class, threads=args.worker_threads,
            settings=METRICS_SETTINGS if mode == 'on' else None))
            for mode in MODES}
        scraper = stack.enter_context(benchload.Scraper(
            servers['on'].address))
        single = benchload.alternating_single_client(
            {mode: server.address for mode, server in servers.items()},
            request_spec, args.requests, args.warmup,
            time.monotonic() + timeout, args.request_timeout)
        measured = {mode: {'single': single[mode]} for mode in MODES}
        if concurrent:
            halves = {}
            threads = [threading.Thread(target=lambda mode=mode: halves.update(
                {mode: benchload.concurrent_clients(
                    servers[mode].address, request_spec,
                    args.concurrent_requests // 2,
                    max(1, args.threads // 2), time.monotonic() + timeout,
                    args.request_timeout, args.keep_alive)}))
                for mode in MODES]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            for mode in MODES:
                measured[mode]['concurrent'] = halves[mode]
            benchload.release_all(servers['off'].address,
                                  args.request_timeout)
    measured['on']['scrapes'] = dict(scraper.statuses)
    return measured


# Verdicts

def versus_postgresql(record, records):
    """MariaDB's bulk syncs against PostgreSQL's at the same size in the
    same run: target name -> PASS/FAIL, the ratios in the record."""
    if record.get('kind') != 'mysql':
        return {}
    peer = next((other for other in records.values()
                 if other.get('kind') == 'postgresql'
                 and other.get('nodes') == record.get('nodes')), None)
    targets = {}
    for name in BULK_SYNCS:
        mine = record.get('sync', {}).get(name, {}).get('seconds')
        theirs = ((peer or {}).get('sync', {}).get(name) or {}).get(
            'seconds')
        if mine is None or not theirs:
            continue
        ratio = record.setdefault('ratios', {})[
            'sync_%s_vs_postgresql' % name] = round(mine / theirs, 2)
        targets['sync_%s_vs_postgresql' % name] = (
            'PASS' if ratio <= TARGET_MYSQL_VS_POSTGRESQL else 'FAIL')
    return targets


def verdicts(label, record, reference=None):
    """``(targets, problems, notes)``: target name -> PASS/FAIL/None, the
    correctness problems found (empty when all is well), and remarks.
    ``reference``: the same backend's record at the reference size.
    """
    kind = record.get('kind', label)
    targets, problems, notes = {}, [], []
    if 'error' in record:
        problems.append('%s: %s' % (label, record['error'].splitlines()[0]))
    initial_s, no_change_s, peak_rss_mb = sync_targets(
        record.get('nodes', 0))
    for name, limit in (('initial', initial_s),
                        ('no_change', no_change_s)):
        seconds = record.get('sync', {}).get(name, {}).get('seconds')
        targets['sync_' + name] = (
            None if seconds is None or kind not in LATENCY_TARGET_BACKENDS
            else 'PASS' if seconds <= limit else 'FAIL')
    rss = record.get('sync', {}).get('initial', {}).get('peak_rss_mb')
    if peak_rss_mb is not None and rss is not None:
        targets['sync_peak_rss'] = 'PASS' if rss <= peak_rss_mb else 'FAIL'
    post = ((record.get('single') or {}).get('post') or {}).get('p50_ms')
    reference_post = ((reference or {}).get('single') or {}).get(
        'post') or {}
    if post is not None and reference_post.get('p50_ms'):
        ratio = post / reference_post['p50_ms']
        record.setdefault('ratios', {})['post_p50_vs_reference'] = round(
            ratio, 2)
        targets['post_p50_vs_reference'] = (
            'PASS' if ratio <= TARGET_POST_P50_VS_REFERENCE else 'FAIL')
    single = record.get('single')
    if single:
        if not single['completed']:
            problems.append('%s single client: stopped by --step-timeout'
                            % kind)
        bad = {status: count
               for status, count in single['post_statuses'].items()
               if status != '201'}
        bad.update({'DELETE ' + status: count
                    for status, count in single['delete_statuses'].items()
                    if status != '204'})
        if bad:
            problems.append('%s single client: unexpected answers %s'
                            % (kind, bad))
    concurrent = record.get('concurrent')
    if concurrent:
        if not concurrent['completed']:
            problems.append('%s concurrent: stopped by --step-timeout'
                            % kind)
        statuses = concurrent['statuses']
        bad = {status: count for status, count in statuses.items()
               if status not in ('201', '409')}
        if bad:
            problems.append('%s concurrent: answers other than 201/409: %s'
                            % (kind, bad))
        if (concurrent['nodes_given_twice_in_responses']
                or concurrent['db_check']['nodes_held_twice']
                or not concurrent['db_matches_responses']):
            problems.append('%s concurrent: a node was given twice or the '
                            'database disagrees with the responses: %s'
                            % (kind, concurrent['db_check']))
        if statuses.get('409'):
            notes.append('%s concurrent: %d requests got 409 (pool too '
                            'small, or too many lost races)'
                            % (kind, statuses['409']))
    floor = record.get('api_sql')
    if floor:
        if not floor['completed'] or floor['pool_empty']:
            problems.append("%s the API's SQL replayed: incomplete (%d "
                            'reservations, %d found no free node)' % (
                                kind, floor['reserved'], floor['pool_empty']))
        if (floor['nodes_reserved_twice']
                or floor['db_check']['nodes_held_twice']):
            problems.append("%s the API's SQL replayed: a node was reserved "
                            'twice' % kind)
    judged = kind in THROUGHPUT_TARGET_BACKENDS
    if concurrent and floor and floor['reservations_per_s']:
        ratio = (concurrent['reservations_per_s']
                 / floor['reservations_per_s'])
        record['concurrent_vs_api_floor'] = round(ratio, 3)
        targets['concurrent_vs_api_floor'] = (
            None if not judged
            else 'PASS' if ratio >= TARGET_VS_API_SQL else 'FAIL')
    cpu = (concurrent or {}).get('api_cpu_ms_per_reservation')
    if cpu is not None:
        targets['api_cpu'] = (None if not judged else 'PASS'
                              if cpu <= TARGET_API_CPU_MS else 'FAIL')
    cost = record.get('metrics_cost')
    if cost:
        problems.extend(_metrics_round_problems(kind, cost))
        ratios = record.setdefault('ratios', {})
        ratios['metrics_post_p50'] = cost['on_vs_off']['post_p50_ms']
        targets['metrics_post_p50'] = (
            'PASS' if ratios['metrics_post_p50'] <= 1 + TARGET_METRICS_COST
            else 'FAIL')
        if 'reservations_per_s' in cost['on_vs_off']:
            ratios['metrics_throughput'] = cost['on_vs_off'][
                'reservations_per_s']
            targets['metrics_throughput'] = (
                'PASS' if ratios['metrics_throughput']
                >= 1 - TARGET_METRICS_COST else 'FAIL')
    return targets, problems, notes


def _metrics_round_problems(kind, cost):
    """What went wrong in the metrics rounds: answers other than 201
    (single and concurrent) and 204, a scrape that failed."""
    found = []
    for mode, rounds in cost['rounds'].items():
        for number, measured in enumerate(rounds, 1):
            single = measured['single']
            statuses = dict(single['post_statuses'])
            statuses.update({'DELETE ' + status: count for status, count
                             in single['delete_statuses'].items()})
            statuses.update({'concurrent ' + status: count
                             for status, count in measured.get(
                                 'concurrent', {}).get('statuses',
                                                       {}).items()})
            statuses.update({'scrape ' + status: count for status, count
                             in measured.get('scrapes', {}).items()})
            bad = {status: count for status, count in statuses.items()
                   if status.rpartition(' ')[2] not in ('201', '204')
                   and status != 'scrape 200'}
            if bad or not single['completed']:
                found.append('%s metrics %s round %d: %s' % (
                    kind, mode, number, bad or 'stopped by --step-timeout'))
    return found


# Output

def _cell(value, verdict=None, digits=1):
    if value is None:
        return 'n/a'
    text = ('%.*f' % (digits, value) if isinstance(value, float)
            else str(value))
    return text + (' ' + verdict if verdict else '')


def table(results):
    """Metrics down, backends across, the target in the last column."""
    kinds = list(results['backends'])
    rows = []

    def row(label, target, getter):
        cells = []
        for kind in kinds:
            record = results['backends'][kind]
            try:
                cells.append(getter(record))
            except (KeyError, TypeError, ZeroDivisionError):
                cells.append('n/a')
        rows.append([label] + cells + [target])

    def verdict(record, name):
        return record.get('targets', {}).get(name)

    def phase(record, name):
        return record['phases'][name]

    def load(record, name):
        found = phase(record, name)
        return '%.2f -> %.2f' % (found['load_before'][0],
                                 found['load_after'][0])

    def rss(record, name):
        return ' / '.join('%.0f' % worker['peak_rss_mb']
                          for worker in phase(record, name)['api_workers'])

    row('nodes / free of the class', '', lambda r: '%d / %d' % (
        r['pool']['nodes'], r['pool']['free_of_that_class']))
    sizes = sorted({record.get('nodes', 0)
                    for record in results['backends'].values()})

    def sync_target(index):
        return ' / '.join('<= %g' % sync_targets(size)[index]
                          for size in sizes)

    row('sync-nodes initial (s)', sync_target(0),
        lambda r: _cell(r['sync']['initial']['seconds'],
                        verdict(r, 'sync_initial'), digits=2))
    row('  CPU s / peak RSS MB', '', lambda r: '%.1f / %.0f' % (
        r['sync']['initial']['cpu_s'], r['sync']['initial']['peak_rss_mb']))
    if any(sync_targets(size)[2] for size in sizes):
        row('  peak RSS MB at 10^6', '<= %g' % TARGET_SYNC_PEAK_RSS_MB_1M,
            lambda r: _cell(r['sync']['initial']['peak_rss_mb'],
                            verdict(r, 'sync_peak_rss'), digits=0)
            if verdict(r, 'sync_peak_rss') else '')
    row('  load 1 min before -> after', '', lambda r: '%.2f -> %.2f' % (
        r['sync']['initial']['load']['before'][0],
        r['sync']['initial']['load']['after'][0]))
    row('sync-nodes no change (s)', sync_target(1),
        lambda r: _cell(r['sync']['no_change']['seconds'],
                        verdict(r, 'sync_no_change'), digits=2))
    row('  CPU s / peak RSS MB', '', lambda r: '%.1f / %.0f' % (
        r['sync']['no_change']['cpu_s'],
        r['sync']['no_change']['peak_rss_mb']))
    for name, label in (('changed', 'every node changed'),
                        ('removed', '%d %% removed' % DROP_PERCENT),
                        ('restore', 'back to the first document')):
        row('sync-nodes %s (s)' % label, '', lambda r, name=name: _cell(
            r['sync'][name]['seconds'], digits=2))
    for name in BULK_SYNCS:
        row('  %s: MariaDB / PostgreSQL' % name,
            '<= %g' % TARGET_MYSQL_VS_POSTGRESQL,
            lambda r, name=name: _cell(
                r['ratios']['sync_%s_vs_postgresql' % name],
                verdict(r, 'sync_%s_vs_postgresql' % name), digits=2)
            if r.get('kind') == 'mysql' else '')
    row('POST p50 (ms), 1 client', '', lambda r: _cell(
        r['single']['post']['p50_ms']))
    if len(sizes) > 1:
        row('  / at the reference size', '<= %g'
            % TARGET_POST_P50_VS_REFERENCE,
            lambda r: _cell(r['ratios']['post_p50_vs_reference'],
                            verdict(r, 'post_p50_vs_reference'), digits=2)
            if 'post_p50_vs_reference' in r.get('ratios', {}) else '')
    row('POST p99 (ms), 1 client', '', lambda r: _cell(
        r['single']['post']['p99_ms']))
    row('POST mean / max (ms)', '', lambda r: '%.1f / %.1f' % (
        r['single']['post']['mean_ms'], r['single']['post']['max_ms']))
    row('DELETE p50 (ms)', '', lambda r: _cell(
        r['single']['delete']['p50_ms']))
    row('1-client statuses', '', lambda r: _statuses(
        r['single']['post_statuses']))
    row('  API CPU s / worker peak MB', '', lambda r: '%.1f / %s' % (
        phase(r, 'single')['api_cpu_s'], rss(r, 'single')))
    row('  load 1 min before -> after', '', lambda r: load(r, 'single'))
    row('concurrent reservations/s', '', lambda r: _cell(
        r['concurrent']['reservations_per_s']))
    row('  201/409/5xx/other', '', lambda r: _statuses(
        r['concurrent']['statuses'], ('201', '409', '5xx')))
    row('  POST p50 / p99 (ms)', '', lambda r: '%.1f / %.1f' % (
        r['concurrent']['latency']['p50_ms'],
        r['concurrent']['latency']['p99_ms']))
    row('  nodes given twice', '0', lambda r: str(
        r['concurrent']['nodes_given_twice_in_responses']
        + r['concurrent']['db_check']['nodes_held_twice']))
    row('  API CPU ms / reservation', '<= %g' % TARGET_API_CPU_MS,
        lambda r: _cell(r['concurrent']['api_cpu_ms_per_reservation'],
                        verdict(r, 'api_cpu'), digits=2))
    row('  worker peak RSS (MB)', '', lambda r: rss(r, 'concurrent'))
    row('  load 1 min before -> after', '', lambda r: load(r, 'concurrent'))
    row("the API's SQL replayed (reservations/s)", '', lambda r: _cell(
        r['api_sql']['reservations_per_s']))
    row('  lost races retried', '', lambda r: str(
        r['api_sql']['conflicts_retried']))
    row('  load 1 min before -> after', '', lambda r: load(r, 'api_sql'))
    row("concurrent / the API's SQL", '>= %.2f' % TARGET_VS_API_SQL,
        lambda r: _cell(r['concurrent_vs_api_floor'],
                        verdict(r, 'concurrent_vs_api_floor'), digits=2))
    if any('metrics_cost' in record
           for record in results['backends'].values()):
        row('metrics off / on: POST p50 (ms)',
            '<= +%d %%' % (100 * TARGET_METRICS_COST),
            lambda r: _cost(r, 'post_p50_ms', 'metrics_post_p50'))
        row('metrics off / on: concurrent res/s',
            '>= -%d %%' % (100 * TARGET_METRICS_COST),
            lambda r: _cost(r, 'reservations_per_s', 'metrics_throughput'))
    if any('error' in record for record in results['backends'].values()):
        row('error', '', lambda r: r['error'].splitlines()[0][:40]
            if 'error' in r else '')
    # A phase no backend ran (--sync-only, say) is left out.
    rows = [line for line in rows
            if any(cell not in ('n/a', '') for cell in line[1:-1])]
    header = ['metric'] + kinds + ['target']
    widths = [max(len(str(line[column])) for line in rows + [header])
              for column in range(len(header))]
    lines = ['  '.join(str(cell).ljust(width) for cell, width
                       in zip(line, widths, strict=True)).rstrip()
             for line in [header] + rows]
    lines.insert(1, '  '.join('-' * width for width in widths))
    return '\n'.join(lines)


def _cost(record, name, target):
    """``12.1 / 12.4 (+2.5 %) PASS``: off, on (medians), the change (the
    rounds' median), the verdict."""
    cost = record['metrics_cost']
    return '%.1f / %.1f (%+.1f %%) %s' % (
        cost['off'][name], cost['on'][name],
        100 * (cost['on_vs_off'][name] - 1), record['targets'][target])


def _statuses(statuses, order=('201',)):
    shown = [str(statuses.get(status, 0)) for status in order]
    other = sum(count for status, count in statuses.items()
                if status not in order)
    return '/'.join(shown + [str(other)])


def git_revision():
    try:
        head = subprocess.run(  # noqa: S603
            ['git', 'rev-parse', '--short', 'HEAD'],  # noqa: S607
            cwd=str(REPO), capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(  # noqa: S603
            ['git', 'status', '--porcelain', '--untracked-files=no'],  # noqa: S607
            cwd=str(REPO), capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode:
        return None
    return head.stdout.strip() + ('-dirty' if dirty.stdout.strip() else '')


# Main

def _terminate(signum, frame):
    raise KeyboardInterrupt('signal %d' % signum)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    started = datetime.datetime.now(datetime.timezone.utc)
    results = {
        'started_at': started.isoformat(timespec='seconds'),
        'args': {key: value for key, value in vars(args).items()
                 if key != 'output_dir'},
        'spec': benchload.SPECS[args.spec][1],
        'environment': {
            'git': git_revision(), 'python': platform.python_version(),
            'platform': platform.platform(), 'cpus': os.cpu_count(),
            'load_at_start': loadavg(),
        },
        'targets': {'concurrent_vs_api_floor': TARGET_VS_API_SQL,
                    'api_cpu_ms_per_reservation': TARGET_API_CPU_MS,
                    'sync_initial_s': TARGET_SYNC_INITIAL_S,
                    'sync_no_change_s': TARGET_SYNC_NO_CHANGE_S,
                    'sync_initial_s_1m': TARGET_SYNC_INITIAL_S_1M,
                    'sync_no_change_s_1m': TARGET_SYNC_NO_CHANGE_S_1M,
                    'sync_peak_rss_mb_1m': TARGET_SYNC_PEAK_RSS_MB_1M,
                    'post_p50_vs_reference': TARGET_POST_P50_VS_REFERENCE},
        'backends': {},
    }
    workdir = pathlib.Path(tempfile.mkdtemp(prefix='reserveapi-bench-'))
    problems, notes = [], []
    try:
        sizes = [size for size in (args.reference_nodes, args.nodes) if size]
        inventories = {}
        for size in sizes:
            documents = {'original': []}
            if args.bulk_syncs:
                documents.update(changed=['--changed'], removed=[
                    '--changed', '--drop-percent', str(DROP_PERCENT)])
            inventories[size] = {}
            for name, options in documents.items():
                path = inventories[size][name] = workdir / (
                    'nodes-%d-%s.json' % (size, name))
                log('Generating %d nodes (seed %d, %s) in %s'
                    % (size, args.seed, name, path))
                usage, _ = run_step(
                    'generate_inventory',
                    [sys.executable, str(GENERATOR), '--count', str(size),
                     '--seed', str(args.seed), '--output', str(path),
                     '--format', 'json'] + options, args.step_timeout)
                results.setdefault('generate_s', {})[
                    '%d %s' % (size, name)] = usage['wall_s']
        for kind in args.backends:
            for size in sizes:
                label = kind if len(sizes) == 1 else '%s@%d' % (kind, size)
                record = results['backends'][label] = {}
                try:
                    bench_backend(kind, args, workdir, inventories[size],
                                  record, size)
                except (StepFailed, RuntimeError, OSError,
                        ValueError) as exc:
                    record['error'] = str(exc)
                    log('%s: FAILED: %s' % (label, exc))
                except Exception as exc:  # a driver error: report, go on
                    record['error'] = '%s: %s' % (type(exc).__name__, exc)
                    log('%s: FAILED: %s' % (label, record['error']))
    except KeyboardInterrupt:
        problems.append('interrupted')
        log('Interrupted; cleaning up.')
    except StepFailed as exc:
        problems.append(str(exc))
        log('FAILED: %s' % exc)
    finally:
        if args.keep:
            log('Kept the work directory %s' % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    missed = []
    for kind, record in results['backends'].items():
        reference = None
        if args.reference_nodes and record.get('nodes') == args.nodes:
            reference = results['backends'].get(
                '%s@%d' % (record['kind'], args.reference_nodes))
        targets, found, remarks = verdicts(kind, record, reference)
        targets.update(versus_postgresql(record, results['backends']))
        record['targets'] = targets
        problems.extend(found)
        notes.extend(remarks)
        missed.extend('%s %s' % (kind, name)
                      for name, verdict in targets.items()
                      if verdict == 'FAIL')
    finished = datetime.datetime.now(datetime.timezone.utc)
    results['finished_at'] = finished.isoformat(timespec='seconds')
    results['environment']['load_at_end'] = loadavg()
    results['environment']['runner_peak_rss_mb'] = round(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    results['problems'] = problems
    results['notes'] = notes
    results['targets_missed'] = missed

    output = benchload.write_results(args.output_dir, 'results', started,
                                     results)

    print()
    print('reserveapi benchmark: %s nodes, spec %r, %d single-client '
          'requests, %d concurrent (%d threads, %d %s workers x %d '
          'threads, keep-alive %s); git %s'
          % (' and '.join(str(size) for size in (args.reference_nodes,
                                                 args.nodes) if size),
             args.spec, args.requests, args.concurrent_requests,
             args.threads, args.workers, args.worker_class,
             args.worker_threads, 'on' if args.keep_alive else 'off',
             results['environment']['git']))
    print(table(results))
    print('load average at start / end: %s / %s on %s CPUs; the runner '
          'peaked at %.0f MB RSS'
          % (results['environment']['load_at_start'],
             results['environment']['load_at_end'], os.cpu_count(),
             results['environment']['runner_peak_rss_mb']))
    for note in notes:
        print('NOTE: %s' % note)
    for problem in problems:
        print('PROBLEM: %s' % problem)
    print('Results: %s' % output)
    if problems:
        return 1
    if missed and args.fail_on_target:
        return 3
    return 0


if __name__ == '__main__':
    sys.exit(main())
