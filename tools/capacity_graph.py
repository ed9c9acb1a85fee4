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

"""Draw the admin guide's capacity graph (doc/source/admin/monitoring.rst)
from Prometheus' own graph page.

Runs the deployment and the storm of ``tests/prometheus``
(``reserveapi_testing/monitored.py``: gunicorn, reserveapi-worker, a
private PostgreSQL, Placement and Prometheus, all on loopback), with
``--pause`` seconds between waves so that each level shows; checks after
each wave that Prometheus has the numbers the test asserts; then
photographs the graph of free nodes per class with headless Chromium::

    .tox/prometheus/bin/python -m tools.capacity_graph

It needs what ``tox -e prometheus`` needs (the distribution's
``prometheus`` package, a PostgreSQL server's binaries) and the
distribution's ``chromium``.
"""

import argparse
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

from reserveapi_testing import monitored

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUTPUT = ROOT / 'doc' / 'source' / 'admin' / 'capacity-storm.png'
QUERY = ('sum by (resource_class) '
         '(class_partition:reserveapi_nodes_available:max)')
SIZE = (1000, 820)
MAX_BYTES = 200 * 1024


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument('--output', default=str(OUTPUT),
                        help='Where the PNG goes.')
    parser.add_argument('--pause', type=float, default=10.0,
                        help='Seconds between two waves of the storm.')
    return parser.parse_args(argv)


def log(text):
    print(text, file=sys.stderr, flush=True)


def storm(deployment, pause):
    """Run the storm, a level every ``pause`` seconds; its duration in
    seconds. Raises if Prometheus shows another number than the test's.
    """
    prometheus = deployment.prometheus
    plateaus = monitored.storm_plateaus()
    query = ('sum by (resource_class) (max without (instance, job) '
             '(reserveapi_nodes_available))')
    started = prometheus.wait_for_scrapes(since=time.time())
    time.sleep(pause)
    for wave, expected in zip(monitored.STORM, plateaus[1:], strict=True):
        deployment.wave(*wave)
        found = prometheus.by('resource_class', query,
                              prometheus.wait_for_scrapes(since=time.time()))
        if found != expected:
            raise RuntimeError('after %s Prometheus has %s, not %s'
                               % (wave, found, expected))
        log('%s %d %s: %s' % (wave[0], wave[2], wave[1], found))
        time.sleep(pause)
    return time.time() - started


def photograph(prometheus_url, seconds, output):
    """Prometheus' graph of QUERY over the last ``seconds``, as a PNG."""
    chromium = shutil.which('chromium')
    if chromium is None:
        raise RuntimeError('chromium not found: apt-get install chromium')
    url = '%s/classic/graph?%s' % (prometheus_url, urllib.parse.urlencode({
        'g0.expr': QUERY, 'g0.tab': '0',
        'g0.range_input': '%ds' % (seconds + 10)}))
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(  # noqa: S603
            [chromium, '--headless=new', '--no-sandbox', '--disable-gpu',
             '--hide-scrollbars', '--user-data-dir=%s' % profile,
             '--window-size=%d,%d' % SIZE, '--virtual-time-budget=10000',
             '--screenshot=%s' % output, url],
            check=True, capture_output=True, timeout=120)
    size = pathlib.Path(output).stat().st_size
    if size > MAX_BYTES:
        raise RuntimeError('%s is %d bytes, over %d' % (output, size,
                                                       MAX_BYTES))
    return size


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    deployment = monitored.MonitoredDeployment()
    log('Starting the deployment ...')
    deployment.setUp()
    try:
        seconds = storm(deployment, args.pause)
        # The recording rule the graph draws, evaluated after the storm.
        deployment.prometheus.wait_for(
            'sum(%s)' % QUERY, lambda free: free == sum(
                monitored.storm_plateaus()[-1].values()))
        size = photograph(deployment.prometheus.url, seconds, args.output)
    finally:
        deployment.cleanUp()
    log('Wrote %s (%d bytes)' % (args.output, size))
    return 0


if __name__ == '__main__':
    sys.exit(main())
