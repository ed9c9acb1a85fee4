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

"""Release 1.0.0 and this checkout side by side, on one machine and one
database server, in alternating rounds.

Usage (see tools/bench/README.rst, "Releases side by side")::

    python -m tools.bench.releases --nodes 100000 --rounds 3
    python -m tools.bench.releases --nodes 10000          # what CI runs

The old release is built from git with HEAD's pins
(reserveapi_testing/old_version.py, cached). Each release gets a
database of its own on the same server, created by its own
``reserveapi-dbsync upgrade`` (the schema it was released with) and
loaded by its own ``reserveapi-manage sync-nodes`` from the same
inventory file: one initial sync each, nothing else, then VACUUM ANALYZE
of both. Then, round after round, each release's API (``gunicorn -w
--workers``, one at a time, the order swapped every round) is measured
by the same clients: POST and DELETE p50 of one client, the concurrent
clients' reservations/s, and the CPU the gunicorn processes (master and
workers, from /proc) spent per reservation under concurrency.

Prints a table per round, then HEAD/1.0.0 ratios, the median over the
rounds. Exits 0 when every round ran and every correctness check held,
1 otherwise; the ratios never change the exit code. Everything talks to
127.0.0.1 and every step has a timeout; ``--time-limit`` bounds the
whole run.
"""

import argparse
import contextlib
import datetime
import json
import os
import pathlib
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import time

from reserveapi_testing import old_version
from tools.bench import benchdb
from tools.bench import benchload
from tools.bench import run

DEFAULT_FROM = 'd005916'
DEFAULT_FROM_VERSION = '1.0.0'
HEAD = 'HEAD'
ROUND_MARGIN = 1.25
"""A round starts only with this many times the last round's seconds
left before --time-limit."""
# (name, how it reads, whether a larger HEAD/old ratio is better)
RATIOS = (
    ('post_p50_ms', 'POST p50 (ms), 1 client', False),
    ('delete_p50_ms', 'DELETE p50 (ms), 1 client', False),
    ('reservations_per_s', 'concurrent reservations/s', True),
    ('cpu_ms_per_reservation', 'API CPU ms / reservation', False),
)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument('--nodes', type=int, default=100000,
                        help='Inventory size.')
    parser.add_argument('--rounds', type=int, default=3,
                        help='Rounds; each measures both releases.')
    parser.add_argument('--backend', default='postgresql',
                        choices=benchdb.CONCURRENT_BACKENDS,
                        help='Database server (127.0.0.1).')
    parser.add_argument('--from', dest='from_', default=DEFAULT_FROM,
                        help='The old release\'s commit.')
    parser.add_argument('--from-version', default=DEFAULT_FROM_VERSION,
                        help='The version it is installed as.')
    parser.add_argument('--cache-dir',
                        default=str(old_version.DEFAULT_CACHE),
                        help='Where old releases are built and kept.')
    parser.add_argument('--seed', type=int, default=1,
                        help='Inventory seed (same seed, same nodes).')
    parser.add_argument('--spec', choices=sorted(benchload.SPECS),
                        default='baremetal',
                        help='Request spec to reserve with.')
    parser.add_argument('--requests', type=int, default=200,
                        help='Single-client POSTs (each then DELETEd) '
                             'measured per release and round.')
    parser.add_argument('--warmup', type=int, default=20,
                        help='Unmeasured POSTs and DELETEs first.')
    parser.add_argument('--concurrent-requests', type=int,
                        help='Reservations POSTed by the concurrent '
                             'clients per release and round. Default: '
                             'nodes/20, between 200 and 1000.')
    parser.add_argument('--threads', type=int, default=8,
                        help='Concurrent client threads.')
    parser.add_argument('--workers', type=int, default=2,
                        help='gunicorn workers, for both releases.')
    parser.add_argument('--step-timeout', type=float, default=600,
                        help='Seconds allowed for each step.')
    parser.add_argument('--request-timeout', type=float, default=30,
                        help='Seconds allowed for one HTTP request.')
    parser.add_argument('--time-limit', type=float, default=1800,
                        help='Seconds for the whole run, the build of the '
                             'old release included: a round that would '
                             'not fit is not started (a note); a step '
                             'still under way is stopped at it (a '
                             'problem).')
    parser.add_argument('--output-dir', default=str(run.HERE / 'out'),
                        help='Where releases-<timestamp>.json goes.')
    parser.add_argument('--keep', action='store_true',
                        help='Keep the work directory and the databases.')
    args = parser.parse_args(argv)
    for name in ('nodes', 'rounds', 'requests', 'threads', 'workers'):
        if getattr(args, name) < 1:
            parser.error('--%s must be at least 1' % name.replace('_', '-'))
    if args.concurrent_requests is None:
        args.concurrent_requests = min(1000, max(200, args.nodes // 20))
    return args


class Side:
    """One release: how to run its commands and its API, its database."""

    def __init__(self, name, bin_dir, python, workdir):
        self.name = name
        self.bin_dir = bin_dir
        self.python = python
        self.workdir = workdir
        self.config = workdir / 'reserveapi.conf'
        self.backend = None
        self.record = {'rounds': []}

    def command(self, script, *arguments):
        return [os.path.join(self.bin_dir, script), '--config-file',
                str(self.config), *arguments]

    @property
    def env(self):
        """The environment of its commands: nothing that would put this
        checkout on an old release's import path."""
        env = dict(os.environ)
        if self.name != HEAD:
            env.pop('PYTHONPATH', None)
        return env


def build_sides(args, workdir):
    """The old release (built, or reused from the cache) and HEAD."""
    started = time.monotonic()
    old = old_version.build(args.from_, args.from_version, args.cache_dir)
    run.log('%s: %s in %s, ready in %.1fs' % (
        old.version, old.commit[:12], old.path,
        time.monotonic() - started))
    sides = []
    for name, bin_dir, python in (
            (old.version, old.bin_dir, old.python),
            (HEAD, os.path.dirname(run.script('reserveapi-dbsync')),
             sys.executable)):
        directory = workdir / name
        directory.mkdir()
        sides.append(Side(name, bin_dir, python, directory))
    return sides, {'commit': old.commit, 'version': old.version,
                   'build_s': round(time.monotonic() - started, 1)}


def load(side, args, inventory, stack, deadline):
    """The side's database: its own schema, then one initial sync of the
    inventory and VACUUM ANALYZE, the same work for every side."""
    side.backend = stack.enter_context(benchdb.Backend(
        args.backend, str(side.workdir), keep=args.keep))
    run.write_config(side.config, side.workdir, side.backend, inventory)
    timeout = _remaining(deadline, args.step_timeout)
    usage, _ = run.run_step('%s: dbsync upgrade' % side.name,
                            side.command('reserveapi-dbsync', 'upgrade'),
                            timeout, env=side.env)
    side.record['dbsync_s'] = usage['wall_s']
    usage, stdout = run.run_step(
        '%s: sync-nodes (initial)' % side.name,
        side.command('reserveapi-manage', 'sync-nodes'),
        _remaining(deadline, args.step_timeout), env=side.env)
    side.record['sync_s'] = usage['wall_s']
    total = run.sync_counts(stdout).get('added', 0)
    if total != args.nodes:
        raise run.StepFailed('%s: sync-nodes loaded %d nodes of %d: %s'
                             % (side.name, total, args.nodes, stdout))
    start = time.perf_counter()
    side.backend.analyze(vacuum=True)
    side.record.update(database=side.backend.name,
                       server=side.backend.version,
                       vacuum_analyze_s=round(time.perf_counter() - start, 2),
                       pool={'nodes': total})


def _remaining(deadline, step_timeout):
    left = deadline - time.monotonic()
    if left <= 0:
        raise run.StepFailed('--time-limit reached')
    return min(step_timeout, left)


def _cpu_s(usage):
    """CPU seconds of gunicorn's master and workers, by pid."""
    found = {pid: each['cpu_s'] for pid, each in usage['workers'].items()}
    if usage['master'] is not None:
        found['master'] = usage['master']['cpu_s']
    return found


def _cpu_spent(before, after):
    """CPU seconds spent between two ``Gunicorn.usage()`` readings; a
    worker started in between counts whole."""
    start, end = _cpu_s(before), _cpu_s(after)
    return sum(cpu - start.get(pid, 0.0) for pid, cpu in end.items())


def _rollbacks(backend):
    """Transactions the database rolled back so far (PostgreSQL), the
    lost races among them; None elsewhere."""
    if backend.kind != 'postgresql':
        return None
    (count,), = backend.execute(
        'SELECT xact_rollback FROM pg_stat_database '
        'WHERE datname = current_database()')
    return count


def _max_version(address, timeout):
    """The API's newest microversion, from ``GET /v1``."""
    status, body, _ = benchload.request(address, 'GET', '/v1',
                                        timeout=timeout)
    if status != 200:
        return None
    found = [json.loads(body)]
    while found:
        value = found.pop()
        if isinstance(value, dict):
            if 'max_version' in value:
                return value['max_version']
            found.extend(value.values())
        elif isinstance(value, list):
            found.extend(value)
    return None


def measure(side, args, number, deadline):
    """One round of one release: its API up, the single client, the
    concurrent clients, its API down, the reservations cleared."""
    _resource_class, spec = benchload.SPECS[args.spec]
    run.log('round %d: %s' % (number, side.name))
    load_before = benchload.loadavg()
    rollbacks = _rollbacks(side.backend)
    with benchload.Gunicorn(
            str(side.config), args.workers,
            str(side.workdir / 'gunicorn.log'), python=side.python,
            cwd=str(side.workdir)) as server:
        result = {'round': number, 'release': side.name,
                  'max_version': _max_version(server.address,
                                              args.request_timeout)}
        phase_deadline = time.monotonic() + _remaining(deadline,
                                                       args.step_timeout)
        before = server.usage()
        single = benchload.single_client(
            server.address, spec, args.requests, args.warmup, True,
            phase_deadline, args.request_timeout)
        middle = server.usage()
        pairs = args.warmup + args.requests
        result['single'] = single
        result['cpu_ms_per_post_delete'] = round(
            1000 * _cpu_spent(before, middle) / pairs, 3)
        concurrent = benchload.concurrent_clients(
            server.address, spec, args.concurrent_requests, args.threads,
            phase_deadline, args.request_timeout)
        after = server.usage()
    created = concurrent['statuses'].get(str(benchload.OK_CREATED), 0)
    cpu_s = _cpu_spent(middle, after)
    concurrent['api_cpu_s'] = round(cpu_s, 3)
    concurrent['api_master_cpu_s'] = round(
        (after['master'] or {}).get('cpu_s', 0.0)
        - (middle['master'] or {}).get('cpu_s', 0.0), 3)
    if rollbacks is not None:
        # The servers are gone: their sessions' statistics are in.
        result['rollbacks'] = _rollbacks(side.backend) - rollbacks
    load_after = benchload.loadavg()
    # The API lists and releases what the round holds, once the
    # sessions' statistics are in.
    with benchload.Gunicorn(
            str(side.config), 1, str(side.workdir / 'gunicorn-release.log'),
            python=side.python, cwd=str(side.workdir)) as server:
        concurrent['db_check'] = benchload.release_all(
            server.address, args.request_timeout)
    result.update(
        concurrent=concurrent, load=[load_before, load_after],
        post_p50_ms=(single['post'] or {}).get('p50_ms'),
        delete_p50_ms=(single['delete'] or {}).get('p50_ms'),
        reservations_per_s=concurrent['reservations_per_s'],
        cpu_ms_per_reservation=(round(1000 * cpu_s / created, 3)
                                if created else None))
    return result


def problems_of(result):
    """What went wrong in one release's round: unexpected answers, a
    phase cut short, a node given twice."""
    found = []
    name = '%s round %d' % (result['release'], result['round'])
    single, concurrent = result['single'], result['concurrent']
    if not (single['completed'] and concurrent['completed']):
        found.append('%s: stopped by a timeout' % name)
    bad = {status: count for status, count
           in single['post_statuses'].items() if status != '201'}
    bad.update({'DELETE ' + status: count for status, count
                in single['delete_statuses'].items() if status != '204'})
    bad.update({'concurrent ' + status: count for status, count
                in concurrent['statuses'].items()
                if status not in ('201', '409')})
    if bad:
        found.append('%s: unexpected answers %s' % (name, bad))
    census = concurrent['db_check']
    if (concurrent['nodes_given_twice_in_responses']
            or census['nodes_held_twice']
            or census['live_reservations']
            != concurrent['statuses'].get('201', 0)):
        found.append('%s: a node given twice, or the database disagrees '
                     'with the answers: %s' % (name, census))
    return found


def ratios(old_rounds, head_rounds):
    """HEAD/old per figure: each round's ratio, and their median."""
    found = {}
    for name, _label, _higher_is_better in RATIOS:
        each = [head[name] / old[name]
                for old, head in zip(old_rounds, head_rounds, strict=False)
                if old.get(name) and head.get(name) is not None]
        found[name] = {'rounds': [round(value, 3) for value in each],
                       'median': (round(statistics.median(each), 3)
                                  if each else None)}
    return found


def _figure(value, digits=2):
    return 'n/a' if value is None else '%.*f' % (digits, value)


def round_table(number, old, head, order):
    """One round: a figure per line, each release, HEAD/old."""
    lines = ['round %d (in this order: %s)' % (number, ', '.join(order)),
             '  %-30s %12s %12s %10s' % ('', old['release'], HEAD,
                                         'HEAD/old')]
    extra = (('cpu_ms_per_post_delete', 'API CPU ms / POST+DELETE'),)
    for name, label in [(name, label) for name, label, _ in RATIOS] + list(
            extra):
        mine, theirs = old.get(name), head.get(name)
        ratio = (theirs / mine if mine and theirs is not None else None)
        lines.append('  %-30s %12s %12s %10s' % (
            label, _figure(mine), _figure(theirs), _figure(ratio, 3)))
    lines.append('  %-30s %12s %12s' % (
        'rollbacks (lost races)', old.get('rollbacks', 'n/a'),
        head.get('rollbacks', 'n/a')))
    lines.append('  %-30s %12s %12s' % (
        'load 1 min before -> after',
        '%.2f->%.2f' % (old['load'][0][0], old['load'][1][0]),
        '%.2f->%.2f' % (head['load'][0][0], head['load'][1][0])))
    return '\n'.join(lines)


def summary_table(results):
    old_name = results['old_release']['version']
    rounds = results['sides']
    lines = ['HEAD/%s, median over %d rounds (each release\'s median '
             'figure beside it)' % (old_name, len(results['ratios'][
                 'post_p50_ms']['rounds'])),
             '  %-30s %12s %12s %10s  %s' % ('', old_name, HEAD,
                                             'HEAD/old', 'better is')]
    for name, label, higher_is_better in RATIOS:
        medians = []
        for side in (old_name, HEAD):
            figures = [each[name] for each in rounds[side]['rounds']
                       if each.get(name) is not None]
            medians.append(statistics.median(figures) if figures else None)
        lines.append('  %-30s %12s %12s %10s  %s' % (
            label, _figure(medians[0]), _figure(medians[1]),
            _figure(results['ratios'][name]['median'], 3),
            'higher' if higher_is_better else 'lower'))
    return '\n'.join(lines)


def _microversion(results, name):
    """The newest microversion the release's API announced: proof that
    each side ran the code it is named after."""
    rounds = results['sides'].get(name, {}).get('rounds') or [{}]
    return rounds[0].get('max_version') or '?'


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGTERM, run._terminate)
    signal.signal(signal.SIGHUP, run._terminate)
    started = datetime.datetime.now(datetime.timezone.utc)
    deadline = time.monotonic() + args.time_limit
    results = {
        'started_at': started.isoformat(timespec='seconds'),
        'args': {key: value for key, value in vars(args).items()
                 if key != 'output_dir'},
        'spec': benchload.SPECS[args.spec][1],
        'environment': {
            'git': run.git_revision(), 'python': platform.python_version(),
            'platform': platform.platform(), 'cpus': os.cpu_count(),
            'load_at_start': benchload.loadavg()},
        'sides': {},
    }
    problems, notes = [], []
    workdir = pathlib.Path(tempfile.mkdtemp(prefix='reserveapi-releases-'))
    try:
        with contextlib.ExitStack() as stack:
            sides, results['old_release'] = build_sides(args, workdir)
            inventory = workdir / 'nodes.json'
            run.run_step('generate_inventory %d nodes' % args.nodes, [
                sys.executable, str(run.GENERATOR), '--count',
                str(args.nodes), '--seed', str(args.seed), '--output',
                str(inventory), '--format', 'json'],
                _remaining(deadline, args.step_timeout))
            for side in sides:
                results['sides'][side.name] = side.record
                load(side, args, inventory, stack, deadline)
            last_round_s = 0.0
            for number in range(1, args.rounds + 1):
                # A round that would not fit is not started: a bounded
                # run (CI's) ends with fewer rounds, not a cut one.
                if deadline - time.monotonic() < ROUND_MARGIN * last_round_s:
                    (notes if number > 1 else problems).append(
                        '--time-limit: %d of %d rounds ran'
                        % (number - 1, args.rounds))
                    break
                started_round = time.monotonic()
                order = sides if number % 2 else sides[::-1]
                measured = {}
                for side in order:
                    measured[side.name] = measure(side, args, number,
                                                  deadline)
                    side.record['rounds'].append(measured[side.name])
                    problems.extend(problems_of(measured[side.name]))
                print(round_table(number, measured[sides[0].name],
                                  measured[HEAD],
                                  [side.name for side in order]),
                      flush=True)
                last_round_s = time.monotonic() - started_round
    except KeyboardInterrupt:
        problems.append('interrupted')
        run.log('Interrupted; cleaning up.')
    except (run.StepFailed, old_version.OldVersionError, RuntimeError,
            OSError, ValueError) as exc:
        problems.append(str(exc))
        run.log('FAILED: %s' % exc)
    finally:
        if args.keep:
            run.log('Kept the work directory %s' % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    old_name = results.get('old_release', {}).get('version')
    if old_name in results['sides'] and HEAD in results['sides']:
        results['ratios'] = ratios(results['sides'][old_name]['rounds'],
                                   results['sides'][HEAD]['rounds'])
    results['problems'] = problems
    results['notes'] = notes
    results['finished_at'] = datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec='seconds')
    results['environment']['load_at_end'] = benchload.loadavg()
    output = benchload.write_results(args.output_dir, 'releases', started,
                                     results)

    print()
    print('reserveapi %s (%s, API up to %s) beside HEAD (git %s, API up '
          'to %s): %d nodes on %s, spec %r, %d single-client POST+DELETE, '
          '%d concurrent (%d threads), gunicorn -w %d' % (
              old_name, results.get('old_release', {}).get('commit', '?')[
                  :12], _microversion(results, old_name),
              results['environment']['git'], _microversion(results, HEAD),
              args.nodes, args.backend, args.spec, args.requests,
              args.concurrent_requests, args.threads, args.workers))
    if results.get('ratios', {}).get('post_p50_ms', {}).get('rounds'):
        print(summary_table(results))
    print('load average at start / end: %s / %s on %s CPUs' % (
        results['environment']['load_at_start'],
        results['environment']['load_at_end'], os.cpu_count()))
    for note in notes:
        print('NOTE: %s' % note)
    for problem in problems:
        print('PROBLEM: %s' % problem)
    print('Results: %s' % output)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
