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

"""A fleet of compute hosts' periodic capacity report, on PostgreSQL.

One throwaway PostgreSQL database, the schema from ``reserveapi-dbsync
upgrade``, nodes seeded in SQL as ``candidate_scale.py`` seeds them
(the summary's triggers count each statement's rows), grown in steps
(``--sizes``). Every node is in one of ten shards; one node in ten is
held by a live reservation of one of the hosts. At each size, through
the real WSGI app in this process (webtest), ``--hosts`` simulated
compute hosts (default 100, ``compute-N`` in shard ``shard-N%10``) make
their periodic call:

* ours: ``GET /v1/capacity?host=H&shard=S`` at microversion 1.2, one
  request;
* the old way, what the driver did before 1.2: ``GET
  /v1/capacity?host=H`` at 1.0 and every page of ``GET /v1/nodes``
  (``--old-hosts`` of them, up to ``--old-up-to`` nodes: it is slow).

It reports the API's CPU (``time.process_time`` of this process around
the calls: the WSGI app and the database driver, not the database
server) per host periodic and, with a ``--period`` (60 s) periodic, the
fleet's share of one core; and the summary's SQL alone
(``db.nodes.get_capacity``)::

    python -m tools.bench.fleet
    python -m tools.bench.fleet --sizes 10000,100000 --old-hosts 2

Results also go to tools/bench/out/fleet-<timestamp>.json.
"""

import argparse
import datetime
import functools
import json
import pathlib
import shutil
import sys
import tempfile
import time

from tools.bench import benchdb
from tools.bench import benchload
from tools.bench import candidate_scale

HERE = pathlib.Path(__file__).resolve().parent
SHARDS = 10
SUMMARY = {'OpenStack-API-Version': 'baremetal-reservation 1.2'}
# The partition and the reservations the fleet holds: node i is in
# shard-(i % 10) and, one in ten, held by compute-(i % 100), whose
# shard it is in. The nodes' derived flags are the product's to set.
PARTITION_NODES = """
UPDATE nodes SET shard = 'shard-' || (id %% 10)
WHERE id BETWEEN %(start)s AND %(stop)s
"""
HOLD_NODES = """
INSERT INTO reservations (uuid, instance_uuid, host, node_id, state,
                          active_node_id, active_instance_uuid, created_at)
SELECT md5('r' || id)::uuid::text, md5('i' || id)::uuid::text,
       'compute-' || (id %% 100), id, 'active', id,
       md5('i' || id)::uuid::text, now()
FROM nodes WHERE id BETWEEN %(start)s AND %(stop)s AND id %% 10 = 0
"""
def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument('--sizes', default='10000,100000,1000000',
                        help='Comma-separated inventory sizes, growing.')
    parser.add_argument('--hosts', type=int, default=100,
                        help='Compute hosts, each one periodic call.')
    parser.add_argument('--rounds', type=int, default=3,
                        help='Periodics of the whole fleet measured.')
    parser.add_argument('--old-hosts', type=int, default=1,
                        help='Hosts measured the old way (every node '
                             'listed: slow).')
    parser.add_argument('--old-up-to', type=int, default=100000,
                        help='The largest size measured the old way too '
                             '(listing a million nodes takes minutes a '
                             'host).')
    parser.add_argument('--period', type=float, default=60.0,
                        help='Seconds between a host\'s periodics.')
    parser.add_argument('--output-dir', default=str(HERE / 'out'))
    args = parser.parse_args(argv)
    args.sizes = sorted(int(size) for size in args.sizes.split(','))
    return args


def seed(backend, start, stop):
    """candidate_scale's nodes ``start``..``stop``, then their shards and
    the fleet's reservations of them, then ANALYZE."""
    candidate_scale.seed(backend, start, stop)
    connection = backend.connect()
    try:
        cursor = connection.cursor()
        for statement in (PARTITION_NODES, HOLD_NODES):
            cursor.execute(statement, {'start': start, 'stop': stop})
        connection.commit()
    finally:
        connection.close()
    candidate_scale.refresh_flags(start, stop)
    backend.analyze()


def _cpu_and_wall(call):
    cpu, wall = time.process_time(), time.perf_counter()
    call()
    return time.process_time() - cpu, time.perf_counter() - wall


def _host(index):
    return 'compute-%d' % index, 'shard-%d' % (index % SHARDS)


def measure(args, client, size):
    """One size: the fleet's periodics both ways, and the SQL alone."""
    from reserveapi.db import nodes as db_nodes

    def ours(index):
        host, shard = _host(index)
        client.get('/v1/capacity', {'host': host, 'shard': shard},
                   headers=SUMMARY)

    def old_way(index):
        client.get('/v1/capacity', {'host': _host(index)[0]})
        page = client.get('/v1/nodes').json
        while page.get('next'):
            page = client.get(page['next']).json

    ours(0)  # warm up: statements built, connections open
    record = {}
    samples = [_cpu_and_wall(functools.partial(ours, index))
               for _ in range(args.rounds) for index in range(args.hosts)]
    record['ours'] = _summary(samples, args)
    if size <= args.old_up_to:
        samples = [_cpu_and_wall(functools.partial(old_way, index))
                   for index in range(args.old_hosts)]
        record['old_way'] = _summary(samples, args)
    host, shard = _host(1)
    record['summary_sql'] = benchload.summarize([
        _cpu_and_wall(lambda: db_nodes.get_capacity(
            host, shard, None, labels=True))[1] for _ in range(50)])
    return record


def _summary(samples, args):
    """API CPU and wall time per host periodic, and the fleet's share of
    one core."""
    cpu = [sample[0] for sample in samples]
    mean_cpu = sum(cpu) / len(cpu)
    return {'cpu': benchload.summarize(cpu),
            'wall': benchload.summarize([sample[1] for sample in samples]),
            'mean_cpu_ms': round(mean_cpu * 1000, 2),
            'fleet_cpu_s_per_period': round(mean_cpu * args.hosts, 3),
            'fleet_core_percent': round(
                100 * mean_cpu * args.hosts / args.period, 3)}


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    workdir = pathlib.Path(tempfile.mkdtemp(prefix='reserveapi-fleet-'))
    started = datetime.datetime.now(datetime.timezone.utc)
    results = {'started_at': started.isoformat(timespec='seconds'),
               'hosts': args.hosts, 'period_s': args.period, 'sizes': {},
               'load_at_start': benchload.loadavg()}
    try:
        with benchdb.Backend('postgresql', str(workdir)) as backend:
            candidate_scale.prepare_service(backend, workdir)
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
                print('%d nodes seeded and analyzed (%.1f s); measuring'
                      % (size, seed_s), file=sys.stderr, flush=True)
                record = measure(args, client, size)
                record.update(seed_s=seed_s, load_before=load_before,
                              load_after=benchload.loadavg())
                results['sizes'][str(size)] = record
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(results, args)
    output_dir = pathlib.Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    output = output_dir / ('fleet-%s.json'
                           % started.strftime('%Y%m%dT%H%M%SZ'))
    output.write_text(json.dumps(results, indent=2, sort_keys=True) + '\n')
    print('Results: %s' % output)
    return 0


def report(results, args):
    print('\n%d compute hosts, one periodic each %g s, PostgreSQL %s; API '
          'CPU in this process (WSGI app + driver), per host periodic'
          % (args.hosts, args.period, results['database']))
    print('%9s  %-8s %9s %9s %9s %11s  %14s  %s' % (
        'nodes', 'way', 'cpu p50', 'cpu mean', 'wall p50', 'fleet core%',
        'SQL p50 ms', 'load before -> after'))
    for size, record in results['sizes'].items():
        for way in ('ours', 'old way'):
            row = record.get('ours' if way == 'ours' else 'old_way')
            if row is None:
                print('%9s  %-8s %s' % (size, way, 'not measured (above '
                                        '--old-up-to)'))
                continue
            sql = ('%14.2f' % record['summary_sql']['p50_ms']
                   if way == 'ours' else '')
            print('%9s  %-8s %9.2f %9.2f %9.2f %11.3f  %14s  %s -> %s' % (
                size, way, row['cpu']['p50_ms'], row['mean_cpu_ms'],
                row['wall']['p50_ms'], row['fleet_core_percent'], sql,
                record['load_before'][0], record['load_after'][0]))
    print('ours: GET /v1/capacity?host&shard at 1.2 (%d calls a size); the '
          'old way: 1.0 capacity and every page of /v1/nodes (%d host%s a '
          'size). SQL: the summary\'s reads alone.' % (
              args.hosts * args.rounds, args.old_hosts,
              '' if args.old_hosts == 1 else 's'))


if __name__ == '__main__':
    sys.exit(main())
