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

Usage (from the top of the tree, where reserveapi is installed; root
or not, the cluster runs as the ``mysql`` user when root)::

    python -m tools.bench.galera_races [--rounds 60]
"""

import argparse
import collections
import os
import statistics
import threading
import time
import uuid

import requests

from reserveapi_testing import examples
from reserveapi_testing import galera
from reserveapi_testing import inventory

WRITERS = 3
TIMEOUT = 60


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
    args = parser.parse_args()

    cluster = galera.GaleraCluster(size=WRITERS)
    apis = galera.GaleraAPIs(
        cluster, [inventory.node('node-%d' % index)
                  for index in range(args.rounds + 10)],
        config={'mirror': {'inline_timeout': '0'},
                'DEFAULT': {'debug': str(args.debug).lower()}})
    cluster.setUp()
    try:
        apis.setUp()
        try:
            run(apis, args.rounds)
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
    main()
