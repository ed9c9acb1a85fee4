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

"""Measure the aggregate mirror against the real Placement service.

Runs Placement from the openstack-placement package on loopback (the
same fixture the functional tests use) and our API in-process on a
SQLite file, then reports:

* the latency of ``PUT`` and ``DELETE /v1/aggregates/{uuid}/hosts/{host}``
  with Placement up (one provider per host), beside its peer: the cycle
  any Placement client goes through for one membership change (GET the
  provider's aggregates and generation, PUT them back changed), timed
  in the same run over a keystoneauth adapter loaded from the same
  ``[placement]`` options (``peers.clients.load_adapter``);
* after an outage during which hosts joined and left, how long one
  worker pass takes from Placement coming back to Placement agreeing.

Usage (from the top of the tree)::

    python -m tools.bench.mirror [--calls 50] [--hosts 20]
"""

import argparse
import logging
import statistics
import sys
import tempfile
import time
import uuid

import fixtures
from oslo_config import fixture as config_fixture
import webtest

from reserveapi import conf
from reserveapi.api import app
from reserveapi.cmd import worker
from reserveapi.db import migration
from reserveapi.mirror import placement as placement_client
from reserveapi.peers import clients
from reserveapi_testing import placement as placement_fixture

HEADERS = {'X-Roles': 'admin', 'X-Project-Id': 'bench',
           'X-User-Id': 'bench', 'X-Identity-Status': 'Confirmed'}


def _percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def _timed(call):
    start = time.perf_counter()
    response = call()
    return (time.perf_counter() - start) * 1000, response


def _placement_cycles(rp_uuid, aggregate, calls):
    """Milliseconds of ``calls`` read + PUT cycles on one provider,
    adding then removing ``aggregate``: Placement's own cost of a change.
    """
    adapter = clients.load_adapter(
        conf.CONF, 'placement', service_type='placement',
        default_microversion=placement_client.PLACEMENT_MICROVERSION)
    path = '/resource_providers/%s/aggregates' % rp_uuid
    cycles = []
    for _ in range(calls):
        start = time.perf_counter()
        body = adapter.get(path, raise_exc=True).json()
        aggregates = set(body['aggregates']) ^ {aggregate}
        adapter.put(path, raise_exc=True, json={
            'aggregates': sorted(aggregates),
            'resource_provider_generation':
                body['resource_provider_generation']})
        cycles.append((time.perf_counter() - start) * 1000)
    return cycles


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--calls', type=int, default=50)
    parser.add_argument('--hosts', type=int, default=20)
    args = parser.parse_args()
    # Measure the service, not debug logging of every request, nor the
    # GIL hand-offs between our API and Placement, which here share a
    # process (in production they do not).
    logging.disable(logging.INFO)
    sys.setswitchinterval(0.0005)

    workdir = tempfile.mkdtemp(prefix='reserveapi-mirror-bench-')
    conf.CONF([], project='reserveapi', default_config_files=[])
    with fixtures.MonkeyPatch('keystonemiddleware.auth_token.AuthProtocol',
                              lambda application, _conf: application), \
            config_fixture.Config(conf.CONF) as conf_fixture, \
            placement_fixture.PlacementFixture() as placement:
        conf_fixture.config(state_path=workdir)
        conf_fixture.config(group='mirror', backoff_base=1, backoff_max=1)
        placement.configure(conf_fixture)
        migration.upgrade()
        api = webtest.TestApp(app.setup_app())
        aggregate = str(uuid.uuid4())
        placement.create_provider(name='compute-0')

        adds, removes = [], []
        for _ in range(args.calls):
            elapsed, response = _timed(lambda: api.put(
                '/v1/aggregates/%s/hosts/compute-0' % aggregate,
                headers=HEADERS))
            assert response.json['state'] == 'synced', response.json
            adds.append(elapsed)
            elapsed, response = _timed(lambda: api.delete(
                '/v1/aggregates/%s/hosts/compute-0' % aggregate,
                headers=HEADERS))
            assert response.json['state'] == 'synced', response.json
            removes.append(elapsed)
        peer_rp = placement.create_provider(name='peer-0')
        cycles = _placement_cycles(peer_rp, aggregate, args.calls)
        for name, values in (('PUT host', adds), ('DELETE host', removes),
                             ('Placement GET+PUT', cycles)):
            print('%-17s median %6.1f ms  p95 %6.1f ms  (%d calls)'
                  % (name, statistics.median(values),
                     _percentile(values, 0.95), len(values)))
        ratio = statistics.median(adds) / statistics.median(cycles)
        print('PUT host / Placement cycle: %.2f (target <= 2)' % ratio)

        hosts = ['host-%d' % index for index in range(args.hosts)]
        providers = {host: placement.create_provider(name=host)
                     for host in hosts}
        placement.stop()
        for index, host in enumerate(hosts):
            api.put('/v1/aggregates/%s/hosts/%s' % (aggregate, host),
                    headers=HEADERS, status=202)
            if index % 3 == 0:
                api.delete('/v1/aggregates/%s/hosts/%s' % (aggregate, host),
                           headers=HEADERS, status=202)
        time.sleep(1.1)  # let the back-off of every pending change run out
        placement.start()
        retry = dict((name, job) for name, _i, job in worker.jobs())
        start = time.perf_counter()
        retry['mirror-retry']()
        converged = (time.perf_counter() - start) * 1000
        wanted = {host: index % 3 != 0 for index, host in enumerate(hosts)}
        actual = {host: aggregate in placement.aggregates(providers[host])
                  for host in hosts}
        print('outage: %d hosts changed while Placement was down; one '
              'worker pass after it came back took %.0f ms; Placement '
              'equals the desired state: %s'
              % (len(hosts), converged, actual == wanted))
        return 0 if actual == wanted else 1


if __name__ == '__main__':
    sys.exit(main())
