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

"""How long each step of a rolling upgrade takes at scale, for the
upgrade guide: a database at release 1.0.0's schema with ``--nodes``
synced nodes, then ``reserveapi-dbsync expand``, ``migrate`` (every
node's derived rows checked), ``reserveapi-status upgrade check``,
``migrate`` again after an older writer left 10 % of the nodes' texts
empty (the repair), and a sync of an unchanged inventory (its derived
window included) beside the same sync at 1.0.0's schema, as the floor.

    python -m tools.bench.upgrade_steps --nodes 100000 \
        --backends postgresql,mysql
"""

import argparse
import pathlib
import sys
import tempfile

import sqlalchemy as sa

from reserveapi.db import migration
from tools import generate_inventory
from tools.bench import benchdb
from tools.bench import benchload
from tools.bench import run as bench


def _steps(backend, workdir, inventory):
    config = workdir / ('%s.conf' % backend.kind)
    bench.write_config(config, workdir, backend, inventory)

    def step(label, *command, allowed=(0,)):
        bench.log('  %s ...' % label)
        code, stdout, stderr, usage = benchload.run_measured(
            [bench.script(command[0]), '--config-file', str(config)]
            + list(command[1:]), 3600)
        if code not in allowed:
            raise bench.StepFailed('%s failed (exit %s):\n%s%s' % (
                label, code, stdout[-2000:], stderr[-2000:]))
        return usage['wall_s']

    times = {}
    step('schema of 1.0.0', 'reserveapi-dbsync', 'upgrade', '--revision',
         migration.BASELINE)
    times['initial sync (1.0.0 schema)'] = step(
        'initial sync', 'reserveapi-manage', 'sync-nodes')
    times['no-change sync (1.0.0 schema)'] = step(
        'no-change sync', 'reserveapi-manage', 'sync-nodes')
    times['dbsync expand'] = step('expand', 'reserveapi-dbsync', 'expand')
    times['dbsync migrate (nothing wrong)'] = step(
        'migrate', 'reserveapi-dbsync', 'migrate')
    # 1 (a warning) where the inventory sync is older than three
    # intervals on a slow machine; the time is what is measured.
    times['status upgrade check'] = step(
        'upgrade check', 'reserveapi-status', 'upgrade', 'check',
        allowed=(0, 1))
    engine = sa.create_engine(backend.connection_url)
    try:
        with engine.begin() as connection:
            connection.execute(sa.text(
                "UPDATE nodes SET traits_text = ',' WHERE id % 10 = 0"))
    finally:
        engine.dispose()
    times['dbsync migrate (10 % of texts wrong)'] = step(
        'migrate repairing', 'reserveapi-dbsync', 'migrate')
    times['no-change sync (with derived window)'] = step(
        'no-change sync', 'reserveapi-manage', 'sync-nodes')
    times['dbsync contract'] = step('contract', 'reserveapi-dbsync',
                                    'contract')
    return times


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--nodes', type=int, default=100000)
    parser.add_argument('--backends', default='postgresql,mysql')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    kinds = args.backends.split(',')
    results = {}
    with tempfile.TemporaryDirectory(prefix='upgrade-steps-') as tmp:
        workdir = pathlib.Path(tmp)
        inventory = workdir / 'nodes.json'
        with open(inventory, 'w') as stream:
            generate_inventory.write_json(
                generate_inventory.generate_nodes(args.nodes, seed=1),
                stream)
        for kind in kinds:
            with benchdb.Backend(kind, str(workdir)) as backend:
                results[kind] = _steps(backend, workdir, inventory)
    print('\n%d nodes, git %s, load %s' % (
        args.nodes, bench.git_revision(), bench.loadavg()))
    rows = list(next(iter(results.values())))
    print('%-40s %s' % ('step (seconds)', ' '.join(
        '%12s' % kind for kind in kinds)))
    for row in rows:
        print('%-40s %s' % (row, ' '.join(
            '%12.2f' % results[kind][row] for kind in kinds)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
