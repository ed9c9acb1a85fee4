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

"""Lost races across three Galera writers: how long do they take?

Starts a private three-node MariaDB Galera cluster on loopback and one
``reserveapi-api`` per node (``reserveapi_testing/galera.py``), then runs two
races, each round three requests released together, one through each
API:

* ``DELETE /v1/reservations/{uuid}`` of one reservation (made through
  the first API and readable through all three before the round);
* ``PUT /v1/aggregates/{uuid}/hosts/{host}`` of one new membership.

A writer that loses on another node fails certification at COMMIT and
is retried; the report gives each race's answers and latency (p50, p95,
max) and, per API log, the ERROR lines and oslo.utils' "Original
exception being dropped" tracebacks.

Then, with ``--sync-nodes N`` (0 leaves it out), the sync phase: an
initial sync of N generated nodes (``tools/generate_inventory.py``)
through the first node while the APIs of the other two make and release
reservations, one client each; timed against the same document synced
into a database of the single MariaDB server on 127.0.0.1 in the same
run (target: at most ``SYNC_TARGET_X`` times its time), the cluster's
nodes given that server's InnoDB buffer pool and redo log sizes, with
the reservations' answers and p50/p99 (target: no 5xx). Last, the same
sync through the first node into a second database of the cluster while
no one serves: Galera's own share of the time, apart from the load.

Usage (from the top of the tree, where reserveapi is installed; root
or not, the cluster runs as the ``mysql`` user when root)::

    python -m tools.bench.galera_races [--rounds 60] [--sync-nodes 100000]
"""

import argparse
import collections
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import requests
import sqlalchemy as sa

from reserveapi_testing import deployment
from reserveapi_testing import examples
from reserveapi_testing import galera
from reserveapi_testing import inventory
from tools.bench import benchdb

WRITERS = 3
TIMEOUT = 60
SYNC_TARGET_X = 2.0
"""Issue 37: the Galera sync within this factor of one MariaDB's."""
SYNC_GCACHE = '512M'
"""Each node's Galera cache in the sync phase: the sync's write set
whole, rather than spilled to page files."""
QUIET_DATABASE = 'reserveapi_quiet'
"""The cluster's second database, synced while no one serves."""
GENERATOR = pathlib.Path(__file__).resolve().parents[1] / (
    'generate_inventory.py')


def race(sessions, calls):
    """Send ``calls`` (one (method, url) per API) at once; each answer's
    (status, seconds)."""
    barrier = threading.Barrier(len(calls))
    results = [None] * len(calls)

    def send(index, method, url):
        barrier.wait()
        started = time.monotonic()
        response = sessions[index].request(method, url, timeout=TIMEOUT)
        results[index] = (response.status_code,
                          time.monotonic() - started)

    threads = [threading.Thread(target=send, args=(index,) + call)
               for index, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def report(name, results):
    seconds = [elapsed for _, elapsed in results]
    statuses = collections.Counter(status for status, _ in results)
    print('%-24s %4d requests  answers %s' % (
        name, len(results), dict(sorted(statuses.items()))))
    print('%-24s p50 %6.0f ms   p95 %6.0f ms   max %6.0f ms' % (
        '', 1000 * statistics.median(seconds),
        1000 * percentile(seconds, 0.95), 1000 * max(seconds)))


def reserve(session, endpoint):
    response = session.post(endpoint + '/v1/reservations', json={
        'instance_uuid': str(uuid.uuid4()), 'host': 'compute-1',
        'request_spec': examples.REQUEST_SPEC}, timeout=TIMEOUT)
    response.raise_for_status()
    return response.json()['uuid']


def wait_visible(sessions, endpoints, path):
    """Until every API reads ``path``: the race starts from a row all
    three nodes have."""
    for session, endpoint in zip(sessions, endpoints, strict=True):
        deadline = time.monotonic() + TIMEOUT
        while session.get(endpoint + path,
                          timeout=TIMEOUT).status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError('%s never visible on %s' % (path,
                                                               endpoint))
            time.sleep(0.01)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rounds', type=int, default=60,
                        help='rounds of each race (default 60)')
    parser.add_argument('--logs', metavar='DIR',
                        help='copy each API\'s log (api-N.log) here')
    parser.add_argument('--debug', action='store_true',
                        help='the APIs log at DEBUG (each retry)')
    parser.add_argument('--sync-nodes', type=int, default=0,
                        help='nodes of the sync phase (default 0: none)')
    args = parser.parse_args()

    served = [inventory.node('node-%d' % index)
              for index in range(max(args.rounds + 10, 200))]
    document, sizes = None, None
    if args.sync_nodes:
        document = sync_document(served, args.sync_nodes)
        single_s, sizes = single_server_sync(served, document)
    cluster = galera.GaleraCluster(size=WRITERS, sizes=sizes)
    apis = galera.GaleraAPIs(
        cluster, served,
        config={'mirror': {'inline_timeout': '0'},
                'DEFAULT': {'debug': str(args.debug).lower()}})
    failed = False
    cluster.setUp()
    try:
        apis.setUp()
        try:
            run(apis, args.rounds)
            if document:
                failed = sync_phase(apis, document, args.sync_nodes,
                                    single_s)
                quiet_cluster_sync(cluster, served, document, single_s)
            if args.logs:
                os.makedirs(args.logs, exist_ok=True)
                for index in range(WRITERS):
                    with open(os.path.join(args.logs, 'api-%d.log'
                                           % (index + 1)), 'w') as copy:
                        copy.write(apis.logs(index))
        finally:
            apis.cleanUp()
    finally:
        cluster.cleanUp()
        if document:
            os.unlink(document)
    return 1 if failed else 0


def sync_document(served, count):
    """A JSON inventory of the APIs' own nodes and ``count`` generated
    ones (seed 1), in a temporary file."""
    with tempfile.TemporaryDirectory() as directory:
        generated = os.path.join(directory, 'generated.json')
        subprocess.run([sys.executable, str(GENERATOR), '--count',
                        str(count), '--seed', '1', '--output', generated],
                       check=True)
        with open(generated) as stream:
            nodes = json.load(stream)['nodes']
    handle, path = tempfile.mkstemp(prefix='galera-sync-', suffix='.json')
    with os.fdopen(handle, 'w') as stream:
        json.dump({'nodes': served + nodes}, stream)
    return path


def _timed_sync(api, document):
    """Seconds of ``reserveapi-manage sync-nodes`` of ``document``
    through ``api`` (a deployment.Deployment)."""
    api.config['inventory']['file'] = document
    api.write_config()
    started = time.monotonic()
    synced = api.run('reserveapi-manage', 'sync-nodes')
    elapsed = time.monotonic() - started
    if synced.returncode:
        raise RuntimeError('sync-nodes failed: %s%s' % (synced.stdout,
                                                        synced.stderr))
    print(synced.stdout.strip().splitlines()[-1])
    return elapsed


def _sync_into(served, url, document):
    """Seconds of the initial sync of ``document`` into the empty
    database at ``url``, migrated first."""
    api = deployment.Deployment(served)
    api.setUp()
    try:
        api.database_url = url
        api.config['database']['connection'] = url
        api.write_config()
        api.migrate()
        return _timed_sync(api, document)
    finally:
        api.cleanUp()


def quiet_cluster_sync(cluster, served, document, single_s):
    """The same sync through the first node into a database of its own
    while no one serves: what Galera's replication costs by itself,
    apart from the reservations sharing the machine with it."""
    url = cluster.nodes[0].create_database(QUIET_DATABASE)
    seconds = _sync_into(served, url, document)
    print('Galera, the same sync through node 1 with no one serving '
          '(database %s): %.1f s, %.2f x one MariaDB server'
          % (QUIET_DATABASE, seconds, seconds / single_s))


def single_server_sync(served, document):
    """The same initial sync into a database of the one MariaDB server on
    127.0.0.1: the floor the cluster is judged against. Returns its
    seconds and the server's InnoDB sizes, which the cluster's nodes
    are given, so that the two differ by Galera only."""
    with tempfile.TemporaryDirectory() as workdir, benchdb.Backend(
            'mysql', workdir) as backend:
        engine = sa.create_engine(backend.connection_url,
                                  poolclass=sa.pool.NullPool)
        with engine.connect() as connection:
            buffer_pool, log_file = connection.exec_driver_sql(
                'SELECT @@innodb_buffer_pool_size, '
                '@@innodb_log_file_size').one()
        engine.dispose()
        seconds = _sync_into(served, backend.connection_url, document)
    print('single MariaDB server: initial sync %.1f s (InnoDB buffer pool '
          '%d MB, redo log %d MB; the cluster\'s nodes get the same, and '
          'a Galera cache of %s)' % (seconds, buffer_pool >> 20,
                                      log_file >> 20, SYNC_GCACHE))
    return seconds, {'buffer_pool': str(buffer_pool),
                     'log_file': str(log_file), 'gcache': SYNC_GCACHE}


def sync_phase(apis, document, count, single_s):
    """The sync through the first API's node while the other two serve
    reservations; True when a target is missed."""
    sessions = [requests.Session() for _ in apis.endpoints]
    answers, stop = [], threading.Event()

    def serve(index):
        endpoint = apis.endpoints[index]
        while not stop.is_set():
            started = time.monotonic()
            response = sessions[index].post(
                endpoint + '/v1/reservations', json={
                    'instance_uuid': str(uuid.uuid4()), 'host': 'compute-1',
                    'request_spec': examples.REQUEST_SPEC}, timeout=TIMEOUT)
            answers.append((response.status_code,
                            time.monotonic() - started))
            if response.status_code == 201:
                started = time.monotonic()
                deleted = sessions[index].delete(
                    endpoint + '/v1/reservations/' + response.json()['uuid'],
                    timeout=TIMEOUT)
                answers.append((deleted.status_code,
                                time.monotonic() - started))

    clients = [threading.Thread(target=serve, args=(index,))
               for index in range(1, len(apis.endpoints))]
    for client in clients:
        client.start()
    started = time.monotonic()
    try:
        seconds = _timed_sync(apis.deployments[0], document)
    except RuntimeError as error:
        seconds = None
        print('Galera, %d nodes through node 1 while nodes 2 and 3 serve: '
              'FAIL after %.1f s: %s' % (count, time.monotonic() - started,
                                          str(error).strip().splitlines()[-1]))
    finally:
        stop.set()
        for client in clients:
            client.join()
    server_errors = sum(1 for status, _ in answers if status >= 500)
    ratio = None if seconds is None else seconds / single_s
    if ratio is not None:
        print('Galera, %d nodes synced through node 1 while nodes 2 and 3 '
              'serve: %.1f s, %.2f x one MariaDB server (target <= %g: %s)'
              % (count, seconds, ratio, SYNC_TARGET_X,
                 'PASS' if ratio <= SYNC_TARGET_X else 'FAIL'))
    report('reservations meanwhile', answers)
    seconds_sorted = [elapsed for _, elapsed in answers]
    print('%-24s p99 %6.0f ms   5xx %d (target 0: %s)' % (
        '', 1000 * percentile(seconds_sorted, 0.99), server_errors,
        'PASS' if server_errors == 0 else 'FAIL'))
    return ratio is None or ratio > SYNC_TARGET_X or server_errors > 0


def run(apis, rounds):
    endpoints = apis.endpoints
    sessions = [requests.Session() for _ in endpoints]
    deletes, puts = [], []
    for _ in range(rounds):
        reservation = reserve(sessions[0], endpoints[0])
        path = '/v1/reservations/' + reservation
        wait_visible(sessions, endpoints, path)
        deletes.extend(race(sessions, [('DELETE', endpoint + path)
                                       for endpoint in endpoints]))
    for _ in range(rounds):
        path = '/v1/aggregates/%s/hosts/compute-1' % uuid.uuid4()
        puts.extend(race(sessions, [('PUT', endpoint + path)
                                    for endpoint in endpoints]))
    print('%d writers (one reserveapi-api per Galera node), %d rounds'
          % (len(endpoints), rounds))
    report('DELETE reservation', deletes)
    report('PUT aggregate host', puts)
    for index in range(len(endpoints)):
        log = apis.logs(index)
        print('API %d log: %d ERROR lines, %d "Original exception being '
              'dropped"' % (index + 1, log.count(' ERROR '),
                            log.count('Original exception being dropped')))


if __name__ == '__main__':
    sys.exit(main())
