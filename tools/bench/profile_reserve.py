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

"""Profile ``POST /v1/reservations`` in-process, without HTTP.

Run the benchmark with ``--keep`` first, then point this at the config
file it kept (a database with the inventory synced)::

    python -m tools.bench.run --backends postgresql --nodes 5000 \\
        --requests 50 --keep
    python -m tools.bench.profile_reserve \\
        --config-file /tmp/reserveapi-bench-XXXX/reserveapi-postgresql.conf

It drives the full WSGI application (middleware, pecan, matching, SQL)
through webtest, counts the SQL statements and the time spent in the
database driver per request, and prints cProfile's top functions.
Each reservation is deleted again (not profiled), as in run.py.

First, without the profiler, it times each kind of request (POST, GET
and DELETE of a reservation, and ``GET /v1``, which is the framework
alone) in wall and CPU time, over ``--rounds`` rounds. To compare two
revisions, run it from each in turn, alternating (``PYTHONPATH`` at a
worktree of the other revision), with ``--no-profile``::

    python -m tools.bench.profile_reserve --config-file ... --rounds 5 \
        --no-profile
"""

import argparse
import collections
import cProfile
import pathlib
import pstats
import statistics
import sys
import time

import sqlalchemy as sa
import webtest

from reserveapi.api import app as app_mod
from reserveapi.common import service
import reserveapi.conf
from reserveapi.db import base as db_base
from tools.bench import benchload

CONF = reserveapi.conf.CONF

HERE = pathlib.Path(__file__).resolve().parent


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--config-file', required=True)
    parser.add_argument('--spec', choices=sorted(benchload.SPECS),
                        default='baremetal')
    parser.add_argument('--requests', type=int, default=200)
    parser.add_argument('--warmup', type=int, default=20)
    parser.add_argument('--rounds', type=int, default=1,
                        help='Rounds of unprofiled timing; each figure is '
                             'given as the median and the best round.')
    parser.add_argument('--no-profile', dest='profile',
                        action='store_false',
                        help='Only the unprofiled timing.')
    parser.add_argument('--sort', default='cumulative',
                        help='pstats sort key (cumulative, tottime, ...).')
    parser.add_argument('--limit', type=int, default=40,
                        help='Functions shown.')
    parser.add_argument('--output', default=str(HERE / 'out' /
                                                'reserve.prof'),
                        help='Where the raw profile goes (snakeviz, ...).')
    return parser.parse_args(argv)


class SQLCounter:
    """Statements run, and seconds spent in the driver, since reset();
    ``by_statement`` keeps count and seconds per statement text for good.
    """

    def __init__(self, engine):
        self.statements = 0
        self.seconds = 0.0
        self.by_statement = collections.defaultdict(lambda: [0, 0.0])
        sa.event.listen(engine, 'before_cursor_execute', self._before)
        sa.event.listen(engine, 'after_cursor_execute', self._after)

    def _before(self, conn, cursor, statement, parameters, context,
                executemany):
        conn.info['bench_started'] = time.perf_counter()

    def _after(self, conn, cursor, statement, parameters, context,
               executemany):
        seconds = time.perf_counter() - conn.info.pop(
            'bench_started', time.perf_counter())
        self.statements += 1
        self.seconds += seconds
        if self.recording:
            entry = self.by_statement[' '.join(statement.split())]
            entry[0] += 1
            entry[1] += seconds

    recording = False

    def report(self, requests, width=160):
        """Statements by total time, per request."""
        lines = ['   per POST  ms each  statement']
        for text, (count, seconds) in sorted(
                self.by_statement.items(), key=lambda item: -item[1][1]):
            lines.append('%11.2f %8.2f  %s' % (
                count / requests, 1000 * seconds / count,
                text if len(text) <= width else text[:width - 3] + '...'))
        return '\n'.join(lines)

    def reset(self):
        self.statements = 0
        self.seconds = 0.0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    output = pathlib.Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    # The service logs every reservation: keep that out of the report.
    service.prepare_service([
        '--config-file', args.config_file,
        '--log-file', str(output.with_suffix('.log'))])
    CONF.set_override('auth_strategy', 'noauth', group='api')
    client = webtest.TestApp(app_mod.setup_app())
    counter = SQLCounter(db_base.get_engine())
    _resource_class, spec = benchload.SPECS[args.spec]

    def reserve():
        response = client.post_json(
            '/v1/reservations',
            benchload.reservation_body(spec, 'bench-compute-0'))
        return response.json['uuid']

    def release(uuid):
        client.delete('/v1/reservations/' + uuid)

    for _ in range(args.warmup):
        release(reserve())

    # First without the profiler: what each request costs this process,
    # in wall and CPU time (the database's CPU is not in it).
    rounds = collections.defaultdict(list)

    def timed(totals, kind, call, *arguments):
        wall, cpu = time.perf_counter(), time.process_time()
        result = call(*arguments)
        totals[kind][0] += time.perf_counter() - wall
        totals[kind][1] += time.process_time() - cpu
        return result

    for _round in range(args.rounds):
        totals = collections.defaultdict(lambda: [0.0, 0.0])
        for _ in range(args.requests):
            uuid = timed(totals, 'POST', reserve)
            timed(totals, 'GET', client.get, '/v1/reservations/' + uuid)
            timed(totals, 'DELETE', release, uuid)
            timed(totals, 'GET /v1', client.get, '/v1')
        for kind, (wall, cpu) in totals.items():
            rounds[kind].append((1000 * wall / args.requests,
                                 1000 * cpu / args.requests))
    print('%d rounds of %d requests in-process (no profiler), ms per '
          'request, median (best round):' % (args.rounds, args.requests))
    for kind, figures in rounds.items():
        walls, cpus = zip(*figures, strict=True)
        print('  %-8s wall %.2f (%.2f)  CPU %.2f (%.2f)' % (
            kind, statistics.median(walls), min(walls),
            statistics.median(cpus), min(cpus)))
    if not args.profile:
        return 0

    profiler = cProfile.Profile()
    post_seconds = post_statements = post_sql_seconds = 0.0
    for _ in range(args.requests):
        counter.reset()
        counter.recording = True
        start = time.perf_counter()
        profiler.enable()
        uuid = reserve()
        profiler.disable()
        counter.recording = False
        post_seconds += time.perf_counter() - start
        post_statements += counter.statements
        post_sql_seconds += counter.seconds
        release(uuid)

    count = args.requests
    print('%d POSTs in-process (profiler on): %.2f ms each, %.1f SQL '
          'statements each, %.2f ms each in the database driver'
          % (count, 1000 * post_seconds / count, post_statements / count,
             1000 * post_sql_seconds / count))
    print(counter.report(count))
    print()
    profiler.dump_stats(str(output))
    stats = pstats.Stats(profiler)
    stats.strip_dirs().sort_stats(args.sort).print_stats(args.limit)
    print('Raw profile: %s' % output)
    return 0


if __name__ == '__main__':
    sys.exit(main())
