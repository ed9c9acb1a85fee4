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

"""What the summary's triggers (migration 0007) cost a bulk change.

On PostgreSQL and MariaDB/MySQL, each in a throwaway database built by
the migrations, with the triggers and with them dropped (the floor),
each timed as one transaction:

* ``insert``: N nodes by one INSERT ... SELECT over a series, then a
  trait for two nodes in three;
* ``update``, ``update back``: one UPDATE flipping ``reserved`` on
  every node, then another flipping it back;
* ``delete``: one DELETE of every node's traits, then one of every
  node, in one transaction, as the sync removes nodes;
* ``counted``: not a time, the free nodes the counters then count
  before the delete (0 without the triggers);
* ``sync add``, ``sync change``, ``sync remove``: node_sync.sync_nodes,
  the product's sync path, adding N nodes, then changing every one
  (memory and traits), then removing them all;
* ``refresh all``, ``longest statement``, ``counter wait``: with
  ``--refresh``, after the insert, every node's ``schedulable`` flag
  made wrong behind the triggers' back, then
  ``nodes.refresh_flags(session)`` (every node) in one transaction: its
  seconds, its longest statement's, and the longest a writer of the
  counters (as reserving is) waited meanwhile: a connection of its own
  locks every capacity counter row, in key order, then commits, again
  and again (issue 37);
* ``reserve+release p50 ms``, ``reserve+release p99 ms``: between the
  change and the removal, ``--reservations`` reservations made and
  released one after the other through reservations.reserve and release
  (in-process, no HTTP): what the counters add to each reservation and
  release.

Each (backend, triggers) pair runs in a process of its own, reserveapi
configured for its database::

    python -m tools.bench.summary_triggers --nodes 100000
"""

import argparse
import functools
import json
import pathlib
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import sqlalchemy as sa

from tools.bench import benchdb
from tools.bench import benchload

# The repository's root, from where tools run as modules.
ROOT = pathlib.Path(__file__).resolve().parents[2]

# The seed, one statement per backend's series of ``i``.
SERIES = {'postgresql': 'generate_series(1, %d) AS s(i)',
          'mysql': '(SELECT seq AS i FROM seq_1_to_%d) s'}
AS_TEXT = {'postgresql': 'TEXT', 'mysql': 'CHAR'}
SEED_NODES = """
INSERT INTO nodes (uuid, name, resource_class, memory_mb, cpus, local_gb,
                   cpu_arch, provision_state, power_state, maintenance,
                   retired, vanished, schedulable, reserved, shard,
                   created_at, synced_at)
SELECT CONCAT('00000000-0000-0000-0000-', LPAD(CAST(i AS {text}), 12, '0')),
       CONCAT('node-', CAST(i AS {text})),
       CASE MOD(i, 3) WHEN 0 THEN 'CUSTOM_GOLD' WHEN 1 THEN 'CUSTOM_SILVER'
            ELSE 'CUSTOM_GPU' END,
       65536, 32, 960,
       CASE WHEN MOD(i, 10) = 3 THEN 'aarch64' ELSE 'x86_64' END,
       'available', 'power off', MOD(i, 50) = 7, FALSE, FALSE,
       MOD(i, 50) <> 7, FALSE,
       CONCAT('shard-', CAST(MOD(i, 10) AS {text})),
       CURRENT_TIMESTAMP, CURRENT_TIMESTAMP
FROM {series}
"""
SEED_TRAITS = ("INSERT INTO node_traits (node_id, trait) "
               "SELECT id, 'HW_CPU_X86_AVX2' FROM nodes WHERE MOD(id, 3) <> 0")


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument('--nodes', type=int, default=100000)
    parser.add_argument('--backends', default='postgresql,mysql')
    parser.add_argument('--no-sync', action='store_true',
                        help='Leave out the sync path (and the reservations).')
    parser.add_argument('--refresh', action='store_true',
                        help='Only the insert, then every flag refreshed '
                             '(see refresh all).')
    parser.add_argument('--reservations', type=int, default=200,
                        help='Reservations made and released, timed.')
    parser.add_argument('--one', nargs=2, metavar=('BACKEND', 'TRIGGERS'),
                        help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _timed(results, name, call):
    start = time.perf_counter()
    call()
    results[name] = round(time.perf_counter() - start, 2)
    print('  %s: %.2f s' % (name, results[name]), file=sys.stderr,
          flush=True)


def _drop_triggers(engine):
    with engine.begin() as connection:
        for name, table in connection.exec_driver_sql(
                'SELECT DISTINCT trigger_name, '  # noqa: S608
                'event_object_table FROM '
                'information_schema.triggers WHERE trigger_schema = %s' % (
                    "'public'" if engine.dialect.name == 'postgresql'
                    else 'DATABASE()')).all():
            connection.exec_driver_sql('DROP TRIGGER %s%s' % (
                name, ' ON ' + table
                if engine.dialect.name == 'postgresql' else ''))


def _sql(engine, *statements):
    """Run ``statements`` in one transaction, by the driver alone."""
    connection = engine.raw_connection()
    try:
        cursor = connection.cursor()
        for statement in statements:
            cursor.execute(statement)
        connection.commit()
    finally:
        connection.close()


def _inventory(count, change):
    from reserveapi.inventory import sync as inventory_sync
    nodes = [{
        'uuid': '00000000-0000-0000-0000-%012d' % i, 'name': 'node-%d' % i,
        'resource_class': ('CUSTOM_GOLD', 'CUSTOM_SILVER', 'CUSTOM_GPU')[
            i % 3],
        'memory_mb': 65536 + change, 'cpus': 32, 'local_gb': 960,
        'cpu_arch': 'aarch64' if i % 10 == 3 else 'x86_64',
        'capabilities': {},
        'traits': ['HW_CPU_X86_AVX2'] + (['CUSTOM_%d' % change]
                                         if change else []),
        'provision_state': 'available', 'power_state': 'power off',
        'maintenance': i % 50 == 7, 'retired': False,
        'instance_uuid': None, 'conductor_group': None,
        'shard': 'shard-%d' % (i % 10), 'owner': None, 'lessee': None,
    } for i in range(1, count + 1)]
    return nodes, {node['uuid']: inventory_sync.fingerprint(node)
                   for node in nodes}


def _reservations(results, count):
    """``count`` reserve+release pairs, one after the other."""
    from reserveapi import reservations
    spec = {'memory_mb': 1024, 'vcpus': 1, 'root_gb': 10,
            'extra_specs': {'resources:CUSTOM_GOLD': '1',
                            'trait:HW_CPU_X86_AVX2': 'required'}}
    timings = []
    for _ in range(count):
        start = time.perf_counter()
        reservation, _ = reservations.reserve(
            str(uuid.uuid4()), 'bench-compute-0', None, spec)
        reservations.release(reservation.uuid, lambda _reservation: None)
        timings.append(time.perf_counter() - start)
    summary = benchload.summarize(timings)
    results['reserve+release p50 ms'] = summary['p50_ms']
    results['reserve+release p99 ms'] = summary['p99_ms']


# Every flag made wrong behind the triggers' back: they count nothing.
WRONG_FLAGS = {
    'postgresql': ['ALTER TABLE nodes DISABLE TRIGGER USER',
                   'UPDATE nodes SET schedulable = NOT schedulable',
                   'ALTER TABLE nodes ENABLE TRIGGER USER'],
    'mysql': ['SET @reserveapi_counted_by_statement = 1',
              'UPDATE nodes SET schedulable = NOT schedulable',
              'SET @reserveapi_counted_by_statement = NULL'],
}


def _refresh_all(results, kind, engine):
    """Time refresh_flags over every node, its longest statement, and
    the longest a counter writer waited meanwhile."""
    from reserveapi.db import base as db_base
    from reserveapi.db import nodes as db_nodes
    _sql(engine, *WRONG_FLAGS[kind])
    longest = [0.0]

    def before(conn, *_args):
        conn.info['bench_started'] = time.perf_counter()

    def after(conn, *_args):
        longest[0] = max(longest[0],
                         time.perf_counter() - conn.info['bench_started'])

    def refresh():
        with db_base.writer() as session:
            sa.event.listen(engine, 'before_cursor_execute', before)
            sa.event.listen(engine, 'after_cursor_execute', after)
            try:
                db_nodes.refresh_flags(session)
            finally:
                sa.event.remove(engine, 'before_cursor_execute', before)
                sa.event.remove(engine, 'after_cursor_execute', after)

    done = threading.Event()
    waits = []
    prober = threading.Thread(target=_lock_counters_until,
                              args=(engine, done, waits))
    prober.start()
    try:
        _timed(results, 'refresh all', refresh)
    finally:
        done.set()
        prober.join()
    results['longest statement'] = round(longest[0], 2)
    results['counter wait'] = round(max(waits, default=0.0), 2)


def _lock_counters_until(engine, done, waits):
    """Lock every capacity counter row, as reserving locks one, until
    ``done``; each time's wait into ``waits``."""
    while not done.is_set():
        with engine.connect() as connection:
            start = time.perf_counter()
            connection.exec_driver_sql(
                'SELECT slot FROM capacity_counters ORDER BY shard, '
                'conductor_group, resource_class, slot FOR UPDATE').all()
            waits.append(time.perf_counter() - start)
            connection.rollback()
        done.wait(0.05)


def run_one(kind, triggers, count, sync, reservations, refresh=False):
    """One backend, with or without the triggers: {step: seconds}."""
    results = {}
    with tempfile.TemporaryDirectory(prefix='reserveapi-trig-') as workdir, \
            benchdb.Backend(kind, workdir) as backend:
        config = pathlib.Path(workdir) / 'reserveapi.conf'
        config.write_text('[database]\nconnection = %s\n'
                          % backend.connection_url.replace('$', '$$'))
        from reserveapi.common import service
        from reserveapi.db import base as db_base
        from reserveapi.db import migration
        from reserveapi.db import node_sync
        service.prepare_service(['--config-file', str(config),
                                 '--log-file', workdir + '/log'])
        engine = db_base.get_engine()
        migration.upgrade(engine=engine)
        if triggers == 'none':
            _drop_triggers(engine)
        seed = SEED_NODES.format(text=AS_TEXT[kind],
                                 series=SERIES[kind] % count)
        _timed(results, 'insert', lambda: _sql(engine, seed, SEED_TRAITS))
        if refresh:
            _refresh_all(results, kind, engine)
            results['database'] = backend.version
            return results
        for name in ('update', 'update back'):
            _timed(results, name, lambda: _sql(
                engine, 'UPDATE nodes SET reserved = NOT reserved'))
        with engine.connect() as connection:
            results['counted'] = int(connection.exec_driver_sql(
                'SELECT COALESCE(SUM(available), 0) FROM capacity_counters'
            ).scalar())
        _timed(results, 'delete', lambda: _sql(
            engine, 'DELETE FROM node_traits', 'DELETE FROM nodes'))
        if sync:
            for name, change in (('sync add', 0), ('sync change', 1)):
                inventory = [_inventory(count, change)]
                _timed(results, name, functools.partial(
                    node_sync.sync_nodes, inventory.copy))
            _reservations(results, reservations)
            _timed(results, 'sync remove', lambda: node_sync.sync_nodes(
                lambda: [([], {})]))
        results['database'] = backend.version
    return results


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.one:
        print(json.dumps(run_one(args.one[0], args.one[1], args.nodes,
                                 not args.no_sync, args.reservations,
                                 args.refresh)))
        return 0
    rows = []
    for kind in args.backends.split(','):
        for triggers in ('triggers', 'none'):
            print('%s, %s:' % (kind, triggers), file=sys.stderr, flush=True)
            output = subprocess.run(  # noqa: S603
                [sys.executable, '-m', 'tools.bench.summary_triggers',
                 '--one', kind, triggers, '--nodes', str(args.nodes),
                 '--reservations', str(args.reservations)]
                + (['--no-sync'] if args.no_sync else [])
                + (['--refresh'] if args.refresh else []),
                check=True, stdout=subprocess.PIPE, text=True,
                cwd=ROOT).stdout
            rows.append((kind, triggers, json.loads(output)))
    steps = [step for step in rows[0][2] if step != 'database']
    print('\n%d nodes, seconds per transaction (counted: free nodes '
          'by the counters)' % args.nodes)
    print('| backend | triggers | %s |' % ' | '.join(steps))
    print('|---|---|%s' % ('---|' * len(steps)))
    for kind, triggers, results in rows:
        print('| %s %s | %s | %s |' % (
            kind, results['database'].split(' (')[0].split('-')[0], triggers,
            ' | '.join(str(results[step]) for step in steps)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
