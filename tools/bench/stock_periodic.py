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

"""The stock Nova Ironic driver's periodic cost: Nova's real
``ComputeManager.update_available_resource`` for one compute host running
``ironic.IronicDriver``, at several Ironic sizes.

The peer figure beside our per-host periodic (``tools/bench/fleet.py``).
Nova's functional framework runs conductor, the compute service and the
real Placement in this process (``nova-bench`` tox env); the Ironic is
``fake_ironic.py`` in its own process, answering the node list Nova asks
for (its fields, pages of 1,000) for nodes from
``tools/generate_inventory.py``, every one with a resource class and no
instance, so the one host manages them all. The first pass (at service
start) creates a compute node and a Placement provider per Ironic node;
the next ones are the steady state. For each pass: wall time, this
process's CPU time (compute, conductor and Placement together, as one
process here), the part of it spent inside Placement's WSGI app, its
requests, and the fake Ironic's CPU time.

Usage (from the top of the tree)::

    tox -e stock-periodic-bench -- [--sizes 1000,5000,10000] [--passes 3]
"""

import argparse
import os
import subprocess
import sys
import time
import unittest

import fixtures
from nova import context as nova_context
from nova import test
from nova.compute import manager as compute_manager
from nova.tests.functional import fixtures as func_fixtures
from openstack import proxy as sdk_proxy
from openstack.baremetal.v1 import _proxy as baremetal_proxy
from placement import deploy as placement_deploy

# The repository's root, from where tools run as modules.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# Nova's OpenStackSDKFixture replaces every SDK proxy's get_endpoint with
# a mock; the baremetal proxy gets the real one back (as the Nova harness,
# reserveapi_testing/nova, does).
REAL_GET_ENDPOINT = sdk_proxy.Proxy.get_endpoint

PASSES = []
PLACEMENT = {'cpu': 0.0, 'requests': 0}


def _cpu_seconds(pid):
    with open('/proc/%d/stat' % pid) as stat:
        fields = stat.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


# The measured pass ----------------------------------------------------

def _measured(function):
    def wrapper(self, *args, **kwargs):
        ironic_cpu = _cpu_seconds(FakeIronic.pid)
        placement = dict(PLACEMENT)
        wall, cpu = time.monotonic(), time.process_time()
        try:
            return function(self, *args, **kwargs)
        finally:
            PASSES.append({
                'wall': time.monotonic() - wall,
                'cpu': time.process_time() - cpu,
                'placement_cpu': PLACEMENT['cpu'] - placement['cpu'],
                'placement_requests':
                    PLACEMENT['requests'] - placement['requests'],
                'ironic_cpu': _cpu_seconds(FakeIronic.pid) - ironic_cpu,
                'nodes': len(self.driver.node_cache)})
    return wrapper


def _placement_timed(loadapp):
    def timed_loadapp(*args, **kwargs):
        app = loadapp(*args, **kwargs)

        def timed(environ, start_response):
            started = time.process_time()
            try:
                return app(environ, start_response)
            finally:
                PLACEMENT['cpu'] += time.process_time() - started
                PLACEMENT['requests'] += 1
        return timed
    return timed_loadapp


class FakeIronic:
    """``nova_fake_ironic.py`` as a child process, for one size."""

    pid = None

    def __init__(self, count):
        self.process = subprocess.Popen(  # noqa: S603
            [sys.executable, '-m', 'tools.bench.nova_fake_ironic',
             '--nodes', str(count)], stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL, text=True, cwd=ROOT)
        port = int(self.process.stdout.readline().split()[-1])
        self.endpoint = 'http://127.0.0.1:%d' % port
        FakeIronic.pid = self.process.pid

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


class StockPeriodic(test.TestCase):
    """One nova-compute with the stock driver against ``endpoint``."""

    NUMBER_OF_CELLS = 1
    endpoint = None
    passes = 2

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatchObject(
            baremetal_proxy.Proxy, 'get_endpoint', REAL_GET_ENDPOINT))
        self.flags(compute_driver='ironic.IronicDriver')
        self.flags(group='ironic', auth_type='none',
                   endpoint_override=self.endpoint)
        self.useFixture(func_fixtures.PlacementFixture())
        self.start_service('conductor')

    def runTest(self):
        # Starting the service runs the first pass (pre_start_hook).
        compute = self.start_service('compute', host='compute-1')
        context = nova_context.get_admin_context()
        for _ in range(self.passes - 1):
            compute.manager.update_available_resource(context)


def _run(size, passes):
    ironic = FakeIronic(size)
    try:
        case = type('stock_%d' % size, (StockPeriodic,),
                    {'endpoint': ironic.endpoint, 'passes': passes})()
        del PASSES[:]
        outcome = unittest.TextTestRunner(verbosity=0).run(case)
        if not outcome.wasSuccessful():
            return None
        return list(PASSES)
    finally:
        ironic.stop()


def _command():
    args = ' '.join(sys.argv[1:])
    if os.environ.get('TOX_ENV_NAME') == 'stock-periodic-bench':
        return 'tox -e stock-periodic-bench -- %s' % args
    return 'python -m tools.bench.stock_periodic %s' % args


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sizes', default='1000,5000,10000',
                        help='Ironic node counts, comma separated')
    parser.add_argument('--passes', type=int, default=3,
                        help='update_available_resource passes per size '
                             '(the first at service start)')
    args = parser.parse_args()
    if args.passes < 2:
        parser.error('--passes must be at least 2 (a steady-state pass)')
    # A pass at 10,000 nodes outlasts tox's per-test timeout.
    os.environ['OS_TEST_TIMEOUT'] = '0'
    compute_manager.ComputeManager.update_available_resource = _measured(
        compute_manager.ComputeManager.update_available_resource)
    placement_deploy.loadapp = _placement_timed(placement_deploy.loadapp)
    rows, failed = [], False
    for size in (int(value) for value in args.sizes.split(',')):
        passes = _run(size, args.passes)
        if passes is None:
            failed = True
            rows.append('| %d | failed | | | | | | |' % size)
            continue
        for number, record in enumerate(passes, 1):
            rows.append(
                '| %d | %s | %d | %.2f | %.2f | %.2f (%d) | %.2f | %.1f |' % (
                    size, '1 (start: creates them)' if number == 1
                    else number, record['nodes'], record['wall'],
                    record['cpu'], record['placement_cpu'],
                    record['placement_requests'], record['ironic_cpu'],
                    os.getloadavg()[0]))
        # Sizes take minutes each: what is done so far, meanwhile.
        print('\n'.join(rows[-len(passes):]), file=sys.stderr, flush=True)
    print('\n### Stock Nova Ironic driver: update_available_resource, one '
          'compute host\n\n`%s`\n' % _command())
    print('Ironic: nova_fake_ironic.py (own process), every node managed by '
          'the host. CPU: this process (nova-compute, conductor and '
          'Placement in one).\n')
    print('| Ironic nodes | pass | compute nodes | wall s | process CPU s '
          '| of it Placement s (requests) | fake Ironic CPU s | load 1 min |')
    print('|' + '---|' * 8)
    print('\n'.join(rows))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
