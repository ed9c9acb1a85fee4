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

"""The Ironic source's sync beside Ironic's own node list, and what
claiming in Ironic adds to a reservation; one run, one table.

1. The real Ironic (``reserveapi_testing/ironic.py``) with ``--nodes`` nodes
   seeded into its database (shaped by ``tools/generate_inventory.py``),
   in the default conductor group so that every node can be claimed:
   Ironic's own paginated ``GET /v1/nodes?detail=True`` (and the
   ``fields`` subset the full pass asks for), then our full sync into an
   empty database, a full sync that changes nothing, and an incremental
   sync that finds nothing; each sync is a process of its own whose peak
   RSS is reported.
2. POST ``/v1/reservations`` latency (gunicorn, one client, each
   reservation deleted right after) with ``[ironic] claim_nodes`` false,
   then true: the difference is what the claim in Ironic costs.
3. The same three syncs at ``--fake-nodes`` from an Ironic-shaped
   paginated source (``fake_ironic.py``), beside that source's own list.

Targets (issue 9): full sync <= 1.2 x Ironic's own list time;
incremental sync of a quiet cloud <= 1 s at 100,000 nodes.

Run it where the ``ironic`` package is installed::

    tox -e ironic-bench -- [--nodes 10000] [--fake-nodes 100000] \\
        [--backend sqlite|postgresql|mysql] [--requests 200]
"""

import argparse
import datetime
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import requests

from reserveapi_testing import ironic as ironic_fixture
from tools import generate_inventory
from tools.bench import benchdb
from tools.bench import benchload

REPO = pathlib.Path(__file__).resolve().parents[2]

OUT = REPO / 'tools' / 'bench' / 'out'
SPEC = 'baremetal'
STEP_TIMEOUT = 1800
FULL_SYNC_FACTOR = 1.2
INCREMENTAL_TARGET = 1.0


def log(text):
    print(text, file=sys.stderr, flush=True)


# Seeding the real Ironic

def seed(ironic, count, seed_value=1):
    """``count`` nodes like the generator's, claimable by Ironic."""
    nodes = list(generate_inventory.generate_nodes(count, seed_value))

    def pick(field, convert=lambda value: value):
        return lambda index: convert(nodes[index][field])

    def traits(value):
        return [t['trait'] if isinstance(t, dict) else t for t in value]

    # A quiet cloud: the last change to each node is spread over the
    # past days, none within [inventory] sync_margin of the newest.
    now = datetime.datetime.now(datetime.timezone.utc)
    started = time.perf_counter()
    ironic.seed_nodes(
        count, uuid=pick('uuid'), name=pick('name'),
        created_at=now - datetime.timedelta(days=30),
        updated_at=lambda index: now - datetime.timedelta(
            minutes=2 * (count - index)),
        resource_class=pick('resource_class'),
        properties=pick('properties'), traits=pick('traits', traits),
        provision_state=pick('provision_state'),
        power_state=pick('power_state'), maintenance=pick('maintenance'),
        retired=pick('retired'), instance_uuid=pick('instance_uuid'),
        owner=pick('owner'), lessee=pick('lessee'))
    return time.perf_counter() - started


def list_seconds(endpoint, **params):
    """Wall time of a client following ``next`` over every page."""
    session = requests.Session()
    headers = {'X-OpenStack-Ironic-API-Version': '1.82'}
    url = endpoint + '/v1/nodes' + ('/detail' if params.pop(
        'detail', False) else '')
    params = dict(params, limit=1000)
    started = time.perf_counter()
    count = 0
    while url:
        page = session.get(url, params=params, headers=headers,
                           timeout=600)
        page.raise_for_status()
        body = page.json()
        count += len(body['nodes'])
        url, params = body.get('next'), None
    return time.perf_counter() - started, count


# Our side, each step a process of its own

def write_config(path, workdir, backend, endpoint, claim_nodes=True):
    path.write_text(
        '[DEFAULT]\nstate_path = %(state)s\n'
        '[api]\nhost_ip = 127.0.0.1\nauth_strategy = noauth\n'
        '[database]\nconnection = %(db)s\n'
        '[inventory]\nsource = ironic\nsync_interval = 60\n'
        'full_sync_interval = 600\n'
        '[ironic]\nauth_type = none\nendpoint_override = %(endpoint)s\n'
        'claim_nodes = %(claim)s\n'
        % {'state': workdir, 'endpoint': endpoint,
           'db': backend.connection_url.replace('$', '$$'),
           'claim': str(claim_nodes).lower()})


def run_child(config_file, mode):
    """Run ``--child MODE`` and return its report plus its peak RSS."""
    out = tempfile.TemporaryFile(mode='w+')
    process = subprocess.Popen(  # noqa: S603
        [sys.executable, '-m', 'tools.bench.ironic_sync', '--child', mode,
         '--config-file',
         str(config_file)], stdout=out, stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL, cwd=str(REPO))
    _pid, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    lines = out.read().splitlines()
    if process.returncode != 0 or not lines:
        raise RuntimeError('%s sync failed (exit %s): %s' % (
            mode, process.returncode, '\n'.join(lines[-20:])))
    report = json.loads(lines[-1])
    report['peak_rss_mb'] = round(usage.ru_maxrss / 1024, 1)
    return report


def child(mode, config_file):
    """In the child: one sync, timed without the interpreter's start."""
    from reserveapi.common import service
    from reserveapi.inventory import sync as inventory_sync
    service.prepare_service(['--config-file', config_file])
    if mode == 'dbsync':
        from reserveapi.db import migration
        migration.upgrade()
        print(json.dumps({'seconds': 0}))
        return
    started = time.perf_counter()
    counts = inventory_sync.sync(full=(mode == 'full'), wait=False)
    seconds = time.perf_counter() - started
    print(json.dumps({'seconds': round(seconds, 3), 'counts': counts}))


def three_syncs(config_file):
    run_child(config_file, 'dbsync')
    results = {}
    for label, mode in (('full, empty database', 'full'),
                        ('full, nothing changed', 'full'),
                        ('incremental, nothing changed', 'changes')):
        log('  sync: %s ...' % label)
        results[label] = run_child(config_file, mode)
    return results


def claim_latency(workdir, backend, endpoint, count):
    """POST p50/p99 with claim_nodes false, then true."""
    spec = benchload.SPECS[SPEC][1]
    results = {}
    for claim in (False, True):
        config_file = workdir / ('claim-%s.conf' % claim)
        write_config(config_file, workdir, backend, endpoint, claim)
        log('  POST /v1/reservations, claim_nodes = %s ...' % claim)
        with benchload.Gunicorn(str(config_file), 1,
                                str(workdir / 'gunicorn.log')) as server:
            results['claim_nodes_%s' % str(claim).lower()] = (
                benchload.single_client(
                server.address, spec, count, warmup=10, delete=True,
                deadline=time.monotonic() + STEP_TIMEOUT, timeout=30))
    return results


# The runs

def real_ironic(args, workdir, record):
    ironic = ironic_fixture.IronicFixture()
    ironic.setUp()
    try:
        log('seeding %d nodes into Ironic ...' % args.nodes)
        record['seed_seconds'] = round(seed(ironic, args.nodes), 2)
        log('Ironic lists them ...')
        detail, count = list_seconds(ironic.endpoint, detail=True)
        subset, _count = list_seconds(
            ironic.endpoint, fields=','.join(FIELDS))
        record.update(ironic_detail_list_s=round(detail, 3),
                      ironic_fields_list_s=round(subset, 3),
                      listed=count)
        with benchdb.Backend(args.backend, str(workdir)) as backend:
            config_file = workdir / 'real.conf'
            write_config(config_file, workdir, backend, ironic.endpoint)
            record['syncs'] = three_syncs(config_file)
            record['claims'] = claim_latency(workdir, backend,
                                             ironic.endpoint, args.requests)
    finally:
        ironic.cleanUp()


def fake_ironic(args, workdir, record):
    log('starting an Ironic-shaped source of %d nodes ...' % args.fake_nodes)
    process = subprocess.Popen(  # noqa: S603
        [sys.executable, '-m', 'tools.bench.fake_ironic',
         '--nodes', str(args.fake_nodes)], stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True, cwd=str(REPO))
    try:
        port = int(process.stdout.readline().split()[-1])
        endpoint = 'http://127.0.0.1:%d' % port
        detail, count = list_seconds(endpoint, detail=True)
        subset, _count = list_seconds(endpoint, fields=','.join(FIELDS))
        record.update(source_detail_list_s=round(detail, 3),
                      source_fields_list_s=round(subset, 3), listed=count)
        with benchdb.Backend(args.backend, str(workdir)) as backend:
            config_file = workdir / 'fake.conf'
            write_config(config_file, workdir, backend, endpoint)
            record['syncs'] = three_syncs(config_file)
    finally:
        process.terminate()
        process.wait(timeout=30)


FIELDS = ('uuid', 'name', 'resource_class', 'properties', 'traits',
          'provision_state', 'power_state', 'maintenance', 'retired',
          'instance_uuid', 'conductor_group', 'shard', 'owner', 'lessee')


def table(results):
    rows = []
    for key, title, list_key in (
            ('real', 'real Ironic, %d nodes', 'ironic_detail_list_s'),
            ('fake', 'Ironic-shaped source, %d nodes',
             'source_detail_list_s')):
        record = results.get(key)
        if not record:
            continue
        rows.append((title % record['listed'], '', ''))
        listed = record[list_key]
        rows.append(('  its own GET /v1/nodes?detail=True, paged (s)',
                     '%.2f' % listed, ''))
        fields_key = list_key.replace('detail', 'fields')
        rows.append(('  its own GET /v1/nodes?fields=..., paged (s)',
                     '%.2f' % record[fields_key], ''))
        for label, sync in record['syncs'].items():
            target = ''
            if label.startswith('full') and key == 'real':
                ratio = sync['seconds'] / listed
                target = '%.2f x list %s <= %.1f' % (
                    ratio, 'PASS' if ratio <= FULL_SYNC_FACTOR else 'FAIL',
                    FULL_SYNC_FACTOR)
            elif key == 'fake' and label.startswith('incremental'):
                target = '%s <= %.0f s' % (
                    'PASS' if sync['seconds'] <= INCREMENTAL_TARGET
                    else 'FAIL', INCREMENTAL_TARGET)
            rows.append(('  our sync, %s (s)' % label,
                         '%.2f  (peak RSS %.0f MB)' % (
                             sync['seconds'], sync['peak_rss_mb']), target))
        claims = record.get('claims')
        if claims:
            off = claims['claim_nodes_false']['post']
            on = claims['claim_nodes_true']['post']
            rows.append(('  POST p50 / p99 (ms), claim_nodes false',
                         '%.1f / %.1f' % (off['p50_ms'], off['p99_ms']), ''))
            rows.append(('  POST p50 / p99 (ms), claim_nodes true',
                         '%.1f / %.1f' % (on['p50_ms'], on['p99_ms']), ''))
            rows.append(('  added by the claim in Ironic, p50 / p99 (ms)',
                         '%.1f / %.1f' % (on['p50_ms'] - off['p50_ms'],
                                          on['p99_ms'] - off['p99_ms']),
                         ''))
    width = max(len(row[0]) for row in rows)
    value_width = max(len(row[1]) for row in rows)
    return '\n'.join('%-*s  %-*s  %s' % (width, a, value_width, b, c)
                     for a, b, c in rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nodes', type=int, default=10000)
    parser.add_argument('--fake-nodes', type=int, default=100000)
    parser.add_argument('--backend', default='sqlite',
                        choices=benchdb.BACKENDS)
    parser.add_argument('--requests', type=int, default=200)
    parser.add_argument('--child', choices=('full', 'changes', 'dbsync'))
    parser.add_argument('--config-file')
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.config_file)
    workdir = pathlib.Path(tempfile.mkdtemp(prefix='reserveapi-ironic-'))
    results = {'command': ' '.join(sys.argv), 'backend': args.backend,
               'loadavg_before': os.getloadavg()}
    if args.nodes:
        results['real'] = {}
        real_ironic(args, workdir, results['real'])
    if args.fake_nodes:
        results['fake'] = {}
        fake_ironic(args, workdir, results['fake'])
    results['loadavg_after'] = os.getloadavg()
    OUT.mkdir(exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y%m%dT%H%M%SZ')
    path = OUT / ('ironic-sync-%s.json' % stamp)
    path.write_text(json.dumps(results, indent=2, default=str))
    print(table(results))
    print('\nbackend %s; load average before %s, after %s; details in %s'
          % (args.backend, results['loadavg_before'],
             results['loadavg_after'], path))
    return 0


if __name__ == '__main__':
    sys.exit(main())
