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

"""What nova-api's aggregate hook adds to ``add_host``, against plain Nova
in the same run.

The harness is the Nova suite's
(``reserveapi_testing/nova/nova_api.py``): real nova-api (Nova's stock
pipeline, and the same with our filter), the real Placement, a stock
Ironic host with a provider per node, and the reservation service
resolving hosts through that nova-api. Each round times
``POST /os-aggregates/{id}/action`` ``add_host`` through both pipelines,
alternately (``remove_host`` through the same pipeline in between,
untimed, so the mirror has work to do each time), with the service up,
stopped (connections refused) and hung (connections accepted, never
answered); plus, with the service up, at microversion 2.1, where the
hook asks Nova for the aggregate's UUID.

Usage (from the top of the tree)::

    tox -e nova-aggregate-bench -- [--rounds 30] [--hung-rounds 5]
        [--nodes 3] [--aggregate-timeout 1.0] [--inline-timeout 5.0]
"""

import argparse
import collections
import functools
import statistics
import sys
import time
import unittest

from reserveapi import client
from reserveapi_testing.nova import nova_api

HOST = 'compute-1'
RESULTS = {}
# The hook's call to the service, per service state.
SERVICE_CALLS = collections.defaultdict(list)
_state = {'label': None}


def _instrument():
    """Time the hook's ``PUT /v1/aggregates/{uuid}/hosts/{host}``."""
    add_host = client.AggregateMirrorClient.add_host

    @functools.wraps(add_host)
    def timed(*args, **kwargs):
        started = time.monotonic()
        try:
            return add_host(*args, **kwargs)
        finally:
            SERVICE_CALLS[_state['label']].append(time.monotonic() - started)
    client.AggregateMirrorClient.add_host = timed


def _p95(values):
    return statistics.quantiles(values, n=20, method='inclusive')[18]


class _Bench(nova_api.AggregateHookTestCase):

    rounds = 30
    hung_rounds = 5

    def runTest(self):
        aggregate_id, _uuid = self.create_aggregate('bench')
        self._measure('up', aggregate_id, self.rounds)
        self._measure('up, 2.1', aggregate_id, self.rounds, '2.1')
        self.reserveapi.stop()
        # Leaving through the hook would only wait for it again.
        self._measure('down', aggregate_id, self.rounds, leave_plain=True)
        with nova_api.HungService(self.reserveapi.port):
            self._measure('hung', aggregate_id, self.hung_rounds,
                          leave_plain=True)

    def _measure(self, label, aggregate_id, rounds, microversion='latest',
                 leave_plain=False):
        """Alternate plain and hooked ``add_host``; record both."""
        times = {'plain': [], 'hook': []}
        _state['label'] = label
        for _ in range(rounds):
            for name, api in (('plain', self.plain_api), ('hook', self.api)):
                started = time.monotonic()
                answer = self.aggregate_action(aggregate_id, 'add_host', HOST,
                                               microversion, api=api)
                times[name].append(time.monotonic() - started)
                self.assertEqual(200, answer.status_code)
                self.assertEqual(200, self.aggregate_action(
                    aggregate_id, 'remove_host', HOST, microversion,
                    api=self.plain_api if leave_plain else api).status_code)
        RESULTS[label] = times


def _case(nodes, timeout, rounds, hung_rounds, inline_timeout):
    attributes = {'NODES': nodes, 'AGGREGATE_TIMEOUT': timeout,
                  'rounds': rounds, 'hung_rounds': hung_rounds,
                  'SERVICE_SECTIONS': {'mirror': {
                      'inline_timeout': inline_timeout}}}
    return type('AggregateBench', (_Bench,), attributes)()


def _ms(values, summary):
    return summary(values) * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rounds', type=int, default=30)
    parser.add_argument('--hung-rounds', type=int, default=5)
    parser.add_argument('--nodes', type=int, default=3,
                        help='Ironic nodes, so providers, of the host')
    parser.add_argument('--aggregate-timeout', type=float, default=1.0)
    parser.add_argument('--inline-timeout', type=float, default=5.0,
                        help="the service's [mirror] inline_timeout; 0 "
                             'answers once the change is stored and '
                             'leaves Placement to the worker')
    args = parser.parse_args()
    if min(args.rounds, args.hung_rounds) < 2:
        parser.error('at least 2 rounds')
    _instrument()
    outcome = unittest.TextTestRunner(verbosity=0).run(_case(
        args.nodes, args.aggregate_timeout, args.rounds, args.hung_rounds,
        args.inline_timeout))
    if not outcome.wasSuccessful():
        return 1
    print('\nadd_host, one host with %d providers, [reserveapi] '
          'aggregate_timeout = %.1f s, the service\'s [mirror] '
          'inline_timeout = %.1f s' % (args.nodes, args.aggregate_timeout,
                                       args.inline_timeout))
    print('%-9s %7s %12s %12s %12s %12s %12s' % (
        'service', 'rounds', 'plain med', 'plain p95', 'hook med',
        'hook p95', 'added med'))
    for label, times in RESULTS.items():
        plain, hook = times['plain'], times['hook']
        print('%-9s %7d %9.1f ms %9.1f ms %9.1f ms %9.1f ms %9.1f ms' % (
            label, len(hook), _ms(plain, statistics.median),
            _ms(plain, _p95), _ms(hook, statistics.median),
            _ms(hook, _p95),
            _ms(hook, statistics.median) - _ms(plain, statistics.median)))
    calls = SERVICE_CALLS['up']
    print('\nOf which the service answering the hook (service up): %.1f ms '
          'median, %.1f ms p95 (%d calls)' % (
              _ms(calls, statistics.median), _ms(calls, _p95), len(calls)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
