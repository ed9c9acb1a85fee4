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

"""Reservations and capacity questions against the inventory's size.

On SQLite, PostgreSQL and MariaDB.
No sync: per backend one throwaway database, the schema from
``reserveapi-dbsync upgrade``, nodes seeded a statement per 10,000
(``node_row``: a million in a minute or two, not the sync's minutes;
their derived flags computed by ``db.nodes.refresh_flags``), grown in
steps (``--sizes``, default 100,000 and 1,000,000 nodes) and analyzed
after each. At each size, in one process per backend, through
reserveapi's own code and its own SQL:

* ``POST /v1/candidates`` through the WSGI application (webtest, no
  socket) for CANDIDATES_SPEC (a resource class, two traits and a
  capability, for a project), and beside it, in the same run, its floor:
  the statements that request sent, recorded (api_statements.py) and
  replayed on one DB-API connection, the database's share alone.
  Target: p50 at most 3 x the floor's at every size, and that ratio at
  the largest size at most 1.5 x the smallest's. The same request with
  an operator Python decides (``<in> uefi``) is shown beside it;
* the candidate query alone: the one ``POST /v1/reservations`` sends
  for the bench's ``baremetal`` spec, recorded and replayed;
* a whole reservation and its release without HTTP
  (``reservations.reserve`` then ``reservations.release``);
* on PostgreSQL, the candidate query's plan: EXPLAIN (ANALYZE, BUFFERS)
  of the same statement, as psycopg2 sends it: buffers touched,
  planning and execution time, the scans.

Flat reservation figures across the sizes mean reserving walks a
bounded part of the best-fit index whatever the inventory; a count, a
capacity question's or its floor's, reads every node it counts::

    python -m tools.bench.candidate_scale
    python -m tools.bench.candidate_scale --backends postgresql \\
        --sizes 10000,1000000 --repeat 500

Each backend runs in a process of its own (reserveapi's configuration is
one per process). Results also go to
tools/bench/out/candidate-scale-<timestamp>.json.
"""

import argparse
import contextlib
import copy
import datetime
import hashlib
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

from tools.bench import benchdb
from tools.bench import benchload

HERE = pathlib.Path(__file__).resolve().parent
CANDIDATES_PROJECT = 'project-0'
CANDIDATES_SPEC = {
    'memory_mb': 65536, 'vcpus': 16, 'root_gb': 200,
    'extra_specs': {
        'resources:CUSTOM_BAREMETAL_SILVER': '1', 'resources:VCPU': '0',
        'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0',
        'trait:HW_CPU_X86_AVX2': 'required', 'trait:CUSTOM_RAID': 'required',
        'capabilities:boot_mode': 'uefi'},
}
"""What a capacity dashboard asks: about 3.8 % of the nodes match."""
CANDIDATES_VERSION = {'OpenStack-API-Version': 'baremetal-reservation 1.3'}
FLOOR_RATIO = 3.0
FLAT_RATIO = 1.5

CLASSES = ('CUSTOM_BAREMETAL_SILVER', 'CUSTOM_BAREMETAL_GOLD',
           'CUSTOM_BAREMETAL_BRONZE', 'CUSTOM_GPU', 'CUSTOM_STORAGE')
SEED_CHUNK = 10000
"""Rows per seeding statement: one statement trigger run on PostgreSQL
per chunk, and bounded memory."""
_NODE_COLUMNS = ('id', 'uuid', 'name', 'resource_class', 'memory_mb', 'cpus',
                 'local_gb', 'cpu_arch', 'provision_state', 'power_state',
                 'maintenance', 'retired', 'vanished', 'schedulable',
                 'reserved', 'shard', 'conductor_group', 'owner',
                 'created_at', 'synced_at', 'traits_text',
                 'capabilities_text')


def node_row(number, now):
    """Node ``number`` (its id too): five classes, a tenth aarch64, a
    quarter deployed, one in fifty in maintenance, two thirds with
    HW_CPU_X86_AVX2 and four sevenths with CUSTOM_RAID, half uefi, four
    shards and two conductor groups, one in twenty owned by one of three
    projects. The same number is the same node on every backend (its
    uuid as PostgreSQL's ``md5('node' || i)::uuid``). Its derived flags
    are left for the product to compute (``seed``)."""
    from reserveapi.db import node_texts

    i = number
    traits, capabilities = node_traits(i), node_capabilities(i)
    deployed, maintenance = i % 4 == 1, i % 50 == 7
    digest = hashlib.md5(b'node%d' % i, usedforsecurity=False).hexdigest()
    return (i, str(uuid.UUID(digest)), 'node-%07d' % i, CLASSES[i % 5],
            (32768, 65536, 131072, 262144)[(i // 5) % 4],
            (8, 16, 32, 64)[(i // 7) % 4], (240, 480, 960)[(i // 11) % 3],
            'aarch64' if i % 10 == 3 else 'x86_64',
            'active' if deployed else 'available', 'power off',
            maintenance, False, False, False, False,
            'shard-%d' % (i % 4), 'rack-1' if (i // 10) % 2 else None,
            'project-%d' % (i % 3) if i % 20 == 10 else None, now, now,
            node_texts.traits_text(traits),
            node_texts.capabilities_text(capabilities))


def node_traits(number):
    return [trait for trait, has in (
        ('CUSTOM_RAID', number % 7 < 4),
        ('HW_CPU_X86_AVX2', number % 3 != 0)) if has]


def node_capabilities(number):
    return {'boot_mode': 'uefi' if number % 2 == 0 else 'bios'}


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument('--backends', default='sqlite,postgresql,mysql',
                        help='Comma-separated: sqlite, postgresql, mysql.')
    parser.add_argument('--sizes', default='100000,1000000',
                        help='Comma-separated inventory sizes, growing.')
    parser.add_argument('--repeat', type=int, default=300,
                        help='Measured queries and reservations per size.')
    parser.add_argument('--candidates-repeat', type=int, default=30,
                        help='Measured capacity questions (and floors) per '
                             'size.')
    parser.add_argument('--warmup', type=int, default=20)
    parser.add_argument('--output-dir', default=str(HERE / 'out'))
    parser.add_argument('--record', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.sizes = sorted(int(size) for size in args.sizes.split(','))
    args.backends = args.backends.split(',')
    return args


def seed(backend, start, stop):
    """Nodes ``start``..``stop`` (see node_row) with their trait and
    capability rows, a chunk per statement, their derived flags, then
    ANALYZE.
    """
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    connection = backend.connect()
    try:
        cursor = connection.cursor()
        for first in range(start, stop + 1, SEED_CHUNK):
            numbers = range(first, min(first + SEED_CHUNK, stop + 1))
            _insert(backend, cursor, 'nodes', _NODE_COLUMNS,
                    [node_row(i, now) for i in numbers])
            _insert(backend, cursor, 'node_traits', ('node_id', 'trait'),
                    [(i, trait) for i in numbers for trait in node_traits(i)])
            _insert(backend, cursor, 'node_capabilities',
                    ('node_id', 'key', 'value'),
                    [(i, key, value) for i in numbers
                     for key, value in node_capabilities(i).items()])
        if backend.kind == 'postgresql':
            # The ids were given: the next node the service adds follows.
            cursor.execute("SELECT setval(pg_get_serial_sequence('nodes', "
                           "'id'), (SELECT max(id) FROM nodes))")
        connection.commit()
    finally:
        connection.close()
    refresh_flags(start, stop)
    backend.analyze()


def refresh_flags(start, stop):
    """The derived flags of nodes ``start``..``stop``, as the product
    derives them: a copy of its rules here would drift from them."""
    from reserveapi.db import base as db_base
    from reserveapi.db import nodes as db_nodes

    with db_base.writer() as session:
        db_nodes.refresh_flags(session, range(start, stop + 1))


def _insert(backend, cursor, table, columns, rows):
    """One multi-row INSERT of ``rows`` (a statement trigger runs once)."""
    if not rows:
        return
    quote = '`%s`' if backend.kind == 'mysql' else '"%s"'  # ``key``
    names = ', '.join(quote % column for column in columns)
    if backend.kind == 'postgresql':
        from psycopg2 import extras
        extras.execute_values(
            cursor, 'INSERT INTO %s (%s) VALUES %%s'  # noqa: S608 - ours
            % (table, names), rows, page_size=len(rows))
        return
    cursor.executemany(backend.sql(
        'INSERT INTO %s (%s) VALUES (%s)'  # noqa: S608 - our own names
        % (table, names, ', '.join(['%s'] * len(columns)))), rows)


def explain(backend, statement):
    """EXPLAIN (ANALYZE, BUFFERS) of ``statement``, as api_statements.py
    records it and psycopg2 sends it: ``{'buffers', 'execution_ms',
    'planning_ms', 'scan', 'plan'}``.
    """
    connection = backend.connect()
    try:
        cursor = connection.cursor()
        cursor.execute('EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) '
                       + statement['sql'], benchdb.arguments(statement))
        (document,), = cursor.fetchall()
        connection.rollback()
    finally:
        connection.close()
    plan = document[0]
    # A node's buffer counts include its children's.
    top = plan['Plan']
    return {'buffers': top.get('Shared Hit Blocks', 0)
            + top.get('Shared Read Blocks', 0),
            'execution_ms': round(plan['Execution Time'], 3),
            'planning_ms': round(plan.get('Planning Time', 0), 3),
            'scan': _scans(top), 'plan': plan}


def _scans(node):
    """The plan's scans, as 'Index Scan nodes_fit_idx' and the like."""
    scans = []
    if 'Scan' in node['Node Type']:
        scans.append('%s %s' % (node['Node Type'], node.get(
            'Index Name', node.get('Relation Name', ''))))
    for child in node.get('Plans', ()):
        scans.extend(_scans(child))
    return scans


def _p50(call, repeat, warmup):
    for _ in range(warmup):
        call()
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return benchload.summarize(seconds)


def measure(args, backend, client):
    """Time the capacity question beside its floor, the candidate query
    and reserve+release at the current size, in this process, through
    reserveapi.
    """
    from reserveapi import reservations
    from tools.bench import api_statements

    timings = measure_candidates(args, backend, client)
    request_spec = benchload.SPECS['baremetal'][1]
    candidate_query = api_statements.reservation_statements(
        client, request_spec)['reads'][0]

    def reserve_and_release():
        reservation, _ = reservations.reserve(
            str(uuid.uuid4()), 'bench-compute-0', None, request_spec)
        reservations.release(reservation.uuid, lambda _reservation: None)

    with replaying(backend, [candidate_query]) as first_batch:
        timings['candidate_query'] = _p50(first_batch, args.repeat,
                                          args.warmup)
    timings['reserve_and_release'] = _p50(reserve_and_release, args.repeat,
                                          args.warmup)
    if backend.kind == 'postgresql':
        timings['plan'] = explain(backend, candidate_query)
    return timings


@contextlib.contextmanager
def replaying(backend, statements):
    """A call that runs ``statements`` (as api_statements.py records
    them) in one transaction, every row read, on a DB-API connection
    open meanwhile: the database's share of what sent them."""
    connection = backend.connect()
    cursor = connection.cursor()

    def replay():
        for statement in statements:
            if statement['sql'].startswith('BEGIN'):
                # SQLite's: the session ended a transaction and began
                # another here.
                connection.commit()
            cursor.execute(statement['sql'], benchdb.arguments(statement))
            if cursor.description:
                cursor.fetchall()
        connection.commit()

    try:
        yield replay
    finally:
        connection.close()


def measure_candidates(args, backend, client):
    """``POST /v1/candidates`` for CANDIDATES_SPEC, and with an operator
    Python decides, beside the statements it sent replayed, each
    alternating with the floor so that both see the same machine."""
    from tools.bench import api_statements

    def ask(request_spec, explain=True):
        def call():
            client.post_json('/v1/candidates', {
                'request_spec': request_spec, 'explain': explain,
                'project_id': CANDIDATES_PROJECT}, headers=CANDIDATES_VERSION)
        return call

    operator = copy.deepcopy(CANDIDATES_SPEC)
    operator['extra_specs']['capabilities:boot_mode'] = '<in> uefi'
    repeat, warmup = args.candidates_repeat, min(args.warmup, 3)
    ask(CANDIDATES_SPEC)()  # statements built, connections open
    with api_statements.recorded() as sent:
        ask(CANDIDATES_SPEC)()
    with replaying(backend, sent) as floor:
        timings = {
            'floor': _p50(floor, repeat, warmup),
            'candidates': _p50(ask(CANDIDATES_SPEC), repeat, warmup),
            'candidates_operator': _p50(ask(operator), repeat, warmup),
            'counted': _p50(ask(CANDIDATES_SPEC, explain=False), repeat,
                            warmup),
            'floor_after': _p50(floor, repeat, warmup)}
    answer = client.post_json('/v1/candidates', {
        'request_spec': CANDIDATES_SPEC, 'project_id': CANDIDATES_PROJECT},
        headers=CANDIDATES_VERSION).json
    timings['answer'] = {key: answer[key] for key in ('count', 'total')}
    floor_p50 = min(timings['floor']['p50_ms'],
                    timings['floor_after']['p50_ms'])
    timings['ratio'] = round(timings['candidates']['p50_ms'] / floor_p50, 2)
    timings['operator_ratio'] = round(
        timings['candidates_operator']['p50_ms'] / floor_p50, 2)
    timings['counted_ratio'] = round(
        timings['counted']['p50_ms'] / floor_p50, 2)
    return timings


def prepare_service(backend, workdir):
    """reserveapi in this process on ``backend``'s database, its schema
    at head (noauth, logs under ``workdir``)."""
    config = workdir / 'reserveapi.conf'
    config.write_text(
        '[DEFAULT]\nstate_path = %s\n[api]\nauth_strategy = noauth\n'
        '[database]\nconnection = %s\n'
        % (workdir / 'state', backend.connection_url.replace('$', '$$')))
    dbsync = shutil.which('reserveapi-dbsync', path=str(
        pathlib.Path(sys.executable).parent)) or 'reserveapi-dbsync'
    subprocess.run([dbsync, '--config-file', str(config),  # noqa: S603
                    'upgrade'], check=True, capture_output=True)
    from reserveapi.common import service
    service.prepare_service(['--config-file', str(config),
                             '--log-file', str(workdir / 'log')])


def run_backend(args, kind):
    """Every size on one backend, in this process: ``{size: record}``."""
    workdir = pathlib.Path(tempfile.mkdtemp(prefix='reserveapi-scale-'))
    results = {}
    try:
        with benchdb.Backend(kind, str(workdir)) as backend:
            prepare_service(backend, workdir)
            import webtest

            from reserveapi.api import app
            client = webtest.TestApp(app.setup_app())
            results['database'] = backend.version
            seeded = 0
            for size in args.sizes:
                load_before = benchload.loadavg()
                start = time.perf_counter()
                seed(backend, seeded + 1, size)
                seeded = size
                seed_s = round(time.perf_counter() - start, 1)
                print('%s: %d nodes seeded and analyzed (%.1f s); measuring'
                      % (kind, size, seed_s), file=sys.stderr, flush=True)
                record = measure(args, backend, client)
                record.update(seed_s=seed_s, load_before=load_before,
                              load_after=benchload.loadavg())
                results[str(size)] = record
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return results


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.record:
        (kind,) = args.backends
        pathlib.Path(args.record).write_text(json.dumps(run_backend(args,
                                                                    kind)))
        return 0
    started = datetime.datetime.now(datetime.timezone.utc)
    results = {'started_at': started.isoformat(timespec='seconds'),
               'backends': {}, 'load_at_start': benchload.loadavg()}
    with tempfile.TemporaryDirectory() as records:
        for kind in args.backends:
            record = pathlib.Path(records) / kind
            subprocess.run(  # noqa: S603 - this module, one backend
                [sys.executable, '-m', 'tools.bench.candidate_scale',
                 '--backends', kind, '--record', str(record),
                 '--sizes', ','.join(str(size) for size in args.sizes),
                 '--repeat', str(args.repeat),
                 '--candidates-repeat', str(args.candidates_repeat),
                 '--warmup', str(args.warmup)], check=True)
            results['backends'][kind] = json.loads(record.read_text())
    problems = report(results, args)
    output_dir = pathlib.Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    output = output_dir / ('candidate-scale-%s.json'
                           % started.strftime('%Y%m%dT%H%M%SZ'))
    output.write_text(json.dumps(results, indent=2, sort_keys=True) + '\n')
    print('Results: %s' % output)
    return 1 if problems else 0


def _verdict(passed):
    return 'PASS' if passed else 'FAIL'


def report(results, args):
    """Print the tables; the number of missed targets."""
    missed = 0
    print('\nPOST /v1/candidates (a class, two traits, a capability) beside '
          'its own statements replayed (the floor), p50 ms, in-process '
          '(%d each)' % args.candidates_repeat)
    print('%-22s %9s %9s %9s %10s %12s %6s %10s %6s  %s' % (
        'backend@nodes', 'matches', 'floor', 'answer', 'ratio',
        '<in> answer', 'ratio', 'no explain', 'ratio',
        'load before -> after'))
    for kind, sizes in results['backends'].items():
        for size in args.sizes:
            record = sizes[str(size)]
            floor = min(record['floor']['p50_ms'],
                        record['floor_after']['p50_ms'])
            passed = record['ratio'] <= FLOOR_RATIO
            missed += not passed
            print('%-22s %9d %9.2f %9.2f %10s %12.2f %6.2f %10.2f %6.2f'
                  '  %s -> %s' % (
                      '%s@%d' % (kind, size), record['answer']['count'],
                      floor, record['candidates']['p50_ms'],
                      '%.2f %s' % (record['ratio'], _verdict(passed)),
                      record['candidates_operator']['p50_ms'],
                      record['operator_ratio'], record['counted']['p50_ms'],
                      record['counted_ratio'], record['load_before'][0],
                      record['load_after'][0]))
        if len(args.sizes) > 1:
            first, last = (sizes[str(args.sizes[0])],
                           sizes[str(args.sizes[-1])])
            growth = round(last['ratio'] / first['ratio'], 2)
            passed = growth <= FLAT_RATIO
            missed += not passed
            print('%-22s ratio %d -> %d nodes: x %.2f %s (target <= %.1f); '
                  'p50 itself x %.2f, the floor\'s x %.2f' % (
                      kind, args.sizes[0], args.sizes[-1], growth,
                      _verdict(passed), FLAT_RATIO,
                      last['candidates']['p50_ms']
                      / first['candidates']['p50_ms'],
                      last['floor']['p50_ms'] / first['floor']['p50_ms']))
    print('\ncandidate query and reservation vs inventory size (%d each, '
          'in-process, no HTTP)' % args.repeat)
    print('%-22s  %20s  %23s  %s' % (
        'backend@nodes', 'candidate p50/p99 ms', 'reserve+release p50/p99',
        'EXPLAIN buffers/plan/run ms (PostgreSQL)'))
    for kind, sizes in results['backends'].items():
        for size in args.sizes:
            record = sizes[str(size)]
            query, reservation = (record['candidate_query'],
                                  record['reserve_and_release'])
            plan = record.get('plan')
            print('%-22s  %8.2f / %8.2f  %11.2f / %9.2f  %s' % (
                '%s@%d' % (kind, size), query['p50_ms'], query['p99_ms'],
                reservation['p50_ms'], reservation['p99_ms'],
                '%d / %.2f / %.2f; %s' % (
                    plan['buffers'], plan['planning_ms'],
                    plan['execution_ms'], ', '.join(plan['scan']))
                if plan else ''))
    return missed


if __name__ == '__main__':
    sys.exit(main())
