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

"""Boot servers through real Nova: the stock Ironic driver on one compute
service against ours on three, in one run.

The harness is the Nova functional suite's
(``reserveapi_testing/nova/base.py``): real nova-api, conductor,
scheduler and Placement in this process, the real Ironic and the
reservation service beside it. For each driver it POSTs
``--servers`` servers at once and reports the time from each POST to
ACTIVE (median, max), boots per minute (ACTIVE servers over the time
until the last one was) and how many ended in ERROR; for ours, also what the
reservation calls (reserve, confirm) add to a spawn, and how long
``prepare_for_spawn`` takes with each driver.

Usage (from the top of the tree)::

    tox -e nova-bench -- [--servers 10] [--nodes 12]
"""

import argparse
import collections
import functools
import statistics
import sys
import time
import unittest

from nova.virt.ironic import driver as stock_driver

from reserveapi import client
from reserveapi.nova import driver as our_driver
from reserveapi_testing.nova import base

TIMINGS = collections.defaultdict(list)


def _timed(name, function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        started = time.monotonic()
        try:
            return function(*args, **kwargs)
        finally:
            TIMINGS[name].append(time.monotonic() - started)
    return wrapper


def _instrument():
    client.ReservationClient.reserve = _timed(
        'reserve', client.ReservationClient.reserve)
    client.ReservationClient.confirm = _timed(
        'confirm', client.ReservationClient.confirm)
    # Ours reserves, then marks the node in Ironic as the stock one does.
    our_driver.IronicDriver.prepare_for_spawn = _timed(
        'prepare_for_spawn', our_driver.IronicDriver.prepare_for_spawn)
    stock_driver.IronicDriver.prepare_for_spawn = _timed(
        'stock_prepare_for_spawn',
        stock_driver.IronicDriver.prepare_for_spawn)


class _Boot:
    """Mixed into a harness: boot ``servers`` at once, time each."""

    servers = 10

    def runTest(self):
        posted = {}
        started = time.monotonic()
        for server in self.boot(self.servers, name='bench'):
            posted[server['id']] = time.monotonic()
        active, failed = {}, {}
        deadline = started + base.WAIT_TIMEOUT
        while len(active) + len(failed) < len(posted):
            for server in self.api.get_servers(search_opts={
                    'status': 'ACTIVE'}):
                active.setdefault(server['id'], time.monotonic())
            for server in self.api.get_servers(search_opts={
                    'status': 'ERROR'}):
                failed.setdefault(server['id'], server['fault']['message'])
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        self.assertTrue(active, 'no server became ACTIVE: %s' % failed)
        took = [active[uuid] - posted[uuid] for uuid in active]
        wall = max(active.values()) - started
        RESULTS[self.label] = {
            'median': statistics.median(took), 'max': max(took),
            'per_minute': len(took) / wall * 60, 'wall': wall,
            'hosts': len(self.HOSTS), 'errors': list(failed.values())}


RESULTS = {}


def _case(label, driver, hosts, servers, nodes):
    attributes = {'label': label, 'COMPUTE_DRIVER': driver,
                  'HOSTS': hosts, 'servers': servers, 'NODES': nodes}
    return type(label, (_Boot, base.IronicTestCase), attributes)()


def _median_ms(name):
    values = TIMINGS.get(name)
    if not values:
        return 'n/a'
    return '%.0f ms median, %.0f ms max (%d calls)' % (
        statistics.median(values) * 1000, max(values) * 1000, len(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--servers', type=int, default=10)
    parser.add_argument('--nodes', type=int, default=12)
    args = parser.parse_args()
    if args.servers > args.nodes:
        parser.error('--servers must not exceed --nodes')
    _instrument()
    suite = unittest.TestSuite([
        _case('stock', 'ironic.IronicDriver', ('compute-1',), args.servers,
              args.nodes),
        _case('reserveapi', 'reserveapi.IronicDriver',
              ('compute-1', 'compute-2', 'compute-3'), args.servers,
              args.nodes)])
    outcome = unittest.TextTestRunner(verbosity=0).run(suite)
    if not outcome.wasSuccessful():
        return 1
    print('\n%d servers at once on %d Ironic nodes (Ironic polled every '
          '%.1f s)' % (args.servers, args.nodes, base.IRONIC_POLL_INTERVAL))
    print('%-11s %6s %7s %12s %9s %14s' % (
        'driver', 'hosts', 'errors', 'median (s)', 'max (s)',
        'boots/minute'))
    for label, result in RESULTS.items():
        print('%-11s %6d %7d %12.2f %9.2f %14.1f' % (
            label, result['hosts'], len(result['errors']), result['median'],
            result['max'], result['per_minute']))
    for label, result in RESULTS.items():
        for error in sorted(set(result['errors'])):
            print('  %s ERROR: %s' % (label, error))
    print('\nWhat the reservation adds to a spawn:')
    print('  POST /v1/reservations: %s' % _median_ms('reserve'))
    print('  PATCH (confirm):       %s' % _median_ms('confirm'))
    print('  prepare_for_spawn, stock: %s'
          % _median_ms('stock_prepare_for_spawn'))
    print('  prepare_for_spawn, ours:  %s' % _median_ms('prepare_for_spawn'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
