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

"""How the claim's cost grows with the inventory, on PostgreSQL alone.

No HTTP and no sync: one throwaway PostgreSQL database, the schema from
``reserveapi-dbsync upgrade``, nodes seeded by ``generate_series`` in
SQL (a million in seconds, not the sync's minutes), grown in steps
(``--sizes``, default 10,000, 100,000 and 1,000,000 nodes) and ANALYZEd
after each. At each size, in this process through reserveapi's own
code:

* the candidate query alone: the first batch for the bench's
  ``baremetal`` spec (``db/matching.candidate_batches``);
* a whole reservation and its release without HTTP
  (``reservations.reserve`` then ``reservations.release``);
* the candidate query's plan: EXPLAIN (ANALYZE, BUFFERS) of the same
  SQL with the values inlined (as psycopg2 sends it): buffers touched,
  planning and execution time, the scans.

Flat figures across the sizes mean the claim walks a bounded part of
the best-fit index whatever the inventory::

    python -m tools.bench.candidate_scale
    python -m tools.bench.candidate_scale --sizes 10000,1000000 \\
        --repeat 500

Results also go to tools/bench/out/candidate-scale-<timestamp>.json.
"""

import argparse
import datetime
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

# Five classes, a tenth aarch64, a quarter deployed, one in fifty in
# maintenance, two thirds with the trait, half uefi: about one node in
# twenty matches the spec. (%% is psycopg2's escaped %.) The rows' texts
# of traits and capabilities (reserveapi/db/node_texts.py) say what
# SEED_TRAITS and SEED_CAPABILITIES insert.
SEED_NODES = """
INSERT INTO nodes (uuid, name, resource_class, memory_mb, cpus, local_gb,
                   cpu_arch, provision_state, power_state, maintenance,
                   retired, vanished, schedulable, reserved, created_at,
                   synced_at, traits_text, capabilities_text)
SELECT md5('node' || i)::uuid::text, 'node-' || lpad(i::text, 7, '0'),
       (ARRAY['CUSTOM_BAREMETAL_SILVER', 'CUSTOM_BAREMETAL_GOLD',
              'CUSTOM_BAREMETAL_BRONZE', 'CUSTOM_GPU',
              'CUSTOM_STORAGE'])[1 + i %% 5],
       (ARRAY[32768, 65536, 131072, 262144])[1 + (i / 5) %% 4],
       (ARRAY[8, 16, 32, 64])[1 + (i / 7) %% 4],
       (ARRAY[240, 480, 960])[1 + (i / 11) %% 3],
       CASE WHEN i %% 10 = 3 THEN 'aarch64' ELSE 'x86_64' END,
       CASE WHEN i %% 4 = 1 THEN 'active' ELSE 'available' END,
       'power off', i %% 50 = 7, false, false,
       i %% 4 <> 1 AND i %% 50 <> 7, false, now(), now(),
       CASE WHEN i %% 3 <> 0 THEN %(avx2)s ELSE %(no_traits)s END,
       CASE WHEN i %% 2 = 0 THEN %(uefi)s ELSE %(bios)s END
FROM generate_series(%(start)s, %(stop)s) AS i
"""
SEED_TRAITS = """
INSERT INTO node_traits (node_id, trait)
SELECT id, 'HW_CPU_X86_AVX2' FROM nodes
WHERE id BETWEEN %(start)s AND %(stop)s AND id %% 3 <> 0
"""
SEED_CAPABILITIES = """
INSERT INTO node_capabilities (node_id, key, value)
SELECT id, 'boot_mode', CASE WHEN id %% 2 = 0 THEN 'uefi' ELSE 'bios' END
FROM nodes WHERE id BETWEEN %(start)s AND %(stop)s
"""


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument('--sizes', default='10000,100000,1000000',
                        help='Comma-separated inventory sizes, growing.')
    parser.add_argument('--repeat', type=int, default=300,
                        help='Measured queries and reservations per size.')
    parser.add_argument('--warmup', type=int, default=20)
    parser.add_argument('--output-dir', default=str(HERE / 'out'))
    args = parser.parse_args(argv)
    args.sizes = sorted(int(size) for size in args.sizes.split(','))
    return args


def seed(backend, start, stop):
    """Nodes ``start``..``stop`` (ids equal their number), their trait
    and capability rows, then ANALYZE.
    """
    from reserveapi.db import node_texts

    connection = backend.connect()
    try:
        cursor = connection.cursor()
        params = {
            'start': start, 'stop': stop,
            'avx2': node_texts.traits_text(['HW_CPU_X86_AVX2']),
            'no_traits': node_texts.traits_text([]),
            'uefi': node_texts.capabilities_text({'boot_mode': 'uefi'}),
            'bios': node_texts.capabilities_text({'boot_mode': 'bios'})}
        for statement in (SEED_NODES, SEED_TRAITS, SEED_CAPABILITIES):
            cursor.execute(statement, params)
        connection.commit()
        connection.autocommit = True
        cursor.execute('ANALYZE')
    finally:
        connection.close()


def explain(backend, statement, params):
    """EXPLAIN (ANALYZE, BUFFERS) of ``statement`` with ``params``
    inlined, as psycopg2 sends it: ``{'buffers', 'execution_ms',
    'planning_ms', 'scan', 'plan'}``.
    """
    from sqlalchemy.dialects import postgresql

    sql = str(statement.params(params).compile(
        dialect=postgresql.dialect(), compile_kwargs={'literal_binds': True}))
    (document,), = backend.execute(
        'EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ' + sql.replace('%', '%%'))
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


def measure(args, backend):
    """Time the candidate query and reserve+release at the current size,
    in this process, through reserveapi.
    """
    from reserveapi import reservations
    from reserveapi.db import matching
    from reserveapi.matcher import filters
    from reserveapi.matcher import spec as spec_mod

    request_spec = benchload.SPECS['baremetal'][1]
    spec = spec_mod.parse_request_spec(request_spec)
    context = filters.MatchContext(project_id=None, exact_match=False,
                                   candidate_nodes=None)
    node_filter = reservations._prefilter(spec, context)

    def first_batch():
        return next(matching.candidate_batches(node_filter, 20,
                                               first_batch=20))

    def reserve_and_release():
        reservation, _ = reservations.reserve(
            str(uuid.uuid4()), 'bench-compute-0', None, request_spec)
        reservations.release(reservation.uuid, lambda _reservation: None)

    timings = {}
    for name, call in (('candidate_query', first_batch),
                       ('reserve_and_release', reserve_and_release)):
        for _ in range(args.warmup):
            call()
        seconds = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            call()
            seconds.append(time.perf_counter() - start)
        timings[name] = benchload.summarize(seconds)
    template, params = matching._parameterized(node_filter)
    timings['plan'] = explain(
        backend, matching._candidate_queries(template)[0],
        dict(params, batch_size=20))
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


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    workdir = pathlib.Path(tempfile.mkdtemp(prefix='reserveapi-scale-'))
    started = datetime.datetime.now(datetime.timezone.utc)
    results = {'started_at': started.isoformat(timespec='seconds'),
               'sizes': {}, 'load_at_start': benchload.loadavg()}
    try:
        with benchdb.Backend('postgresql', str(workdir)) as backend:
            prepare_service(backend, workdir)
            results['database'] = backend.version
            seeded = 0
            for size in args.sizes:
                load_before = benchload.loadavg()
                start = time.perf_counter()
                seed(backend, seeded + 1, size)
                seeded = size
                seed_s = round(time.perf_counter() - start, 1)
                print('%d nodes seeded and analyzed (%.1f s); measuring'
                      % (size, seed_s), file=sys.stderr, flush=True)
                record = measure(args, backend)
                record.update(seed_s=seed_s, load_before=load_before,
                              load_after=benchload.loadavg())
                results['sizes'][str(size)] = record
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    print('\ncandidate query and claim vs inventory size, PostgreSQL %s '
          '(%d each, in-process, no HTTP)' % (results['database'],
                                               args.repeat))
    print('%10s  %20s  %23s  %27s  %s' % (
        'nodes', 'candidate p50/p99 ms', 'reserve+release p50/p99',
        'EXPLAIN buffers/plan/run ms', 'load before -> after'))
    for size, record in results['sizes'].items():
        query, claim = record['candidate_query'], record['reserve_and_release']
        plan = record['plan']
        print('%10s  %8.2f / %8.2f  %11.2f / %9.2f  %6d / %5.2f / %5.2f'
              '  %s -> %s' % (
                  size, query['p50_ms'], query['p99_ms'], claim['p50_ms'],
                  claim['p99_ms'], plan['buffers'], plan['planning_ms'],
                  plan['execution_ms'], record['load_before'][0],
                  record['load_after'][0]))
    for size, record in results['sizes'].items():
        print('%10s  plan: %s' % (size, ', '.join(record['plan']['scan'])))
    output_dir = pathlib.Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    output = output_dir / ('candidate-scale-%s.json'
                           % started.strftime('%Y%m%dT%H%M%SZ'))
    output.write_text(json.dumps(results, indent=2, sort_keys=True) + '\n')
    print('Results: %s' % output)
    return 0


if __name__ == '__main__':
    sys.exit(main())
