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

"""What the real-Ironic test fixture costs, measured on this machine.

Starts Ironic from the ``ironic`` package the way the tests do
(``reserveapi_testing/ironic.py``) and reports, in seconds:

* set-up (schema and first start) and a restart, graceful and killed;
* seeding nodes straight into Ironic's database (200, then ``--nodes``);
* Ironic's own paginated ``GET /v1/nodes?detail=True`` over ``--nodes``
  seeded nodes, and the same with a ``fields`` subset;
* manage/provide/power off per node, through the API, for ``--enroll``
  nodes created through the API;
* a fake deploy, and a teardown with and without automated cleaning;
* the reset that wipes every node between tests.

Usage (from the top of the tree, in an environment with ``ironic``, e.g.
``tox -e ironic --notest`` then ``.tox/ironic/bin/python``)::

    python -m tools.bench.ironic_fixture [--nodes 10000] [--enroll 20]
"""

import argparse
import contextlib
import time
import uuid as uuidlib

from reserveapi_testing import ironic as ironic_fixture

FIELDS = ('uuid,name,resource_class,properties,traits,provision_state,'
          'power_state,maintenance,retired,instance_uuid,conductor_group,'
          'shard,owner,lessee')


@contextlib.contextmanager
def timed(label, per=None):
    started = time.monotonic()
    yield
    elapsed = time.monotonic() - started
    line = '%-48s %8.3f s' % (label, elapsed)
    if per:
        line += '   (%.3f s per node)' % (elapsed / per)
    print(line, flush=True)


def measure_lifecycle(ironic):
    print('%-48s %8.3f s' % ('first start (inside set-up)',
                             ironic.startup_seconds))
    with timed('graceful stop'):
        ironic.stop()
    with timed('start again'):
        ironic.start()
    with timed('kill'):
        ironic.stop(kill=True)
    with timed('start again'):
        ironic.start()


def measure_listing(ironic, count):
    with timed('seed 200 nodes'):
        ironic.seed_nodes(200, traits=['CUSTOM_A'])
    ironic.reset()
    with timed('seed %d nodes' % count):
        ironic.seed_nodes(count, traits=lambda i: ['CUSTOM_%d' % (i % 8)],
                          shard=lambda i: 'shard-%d' % (i % 4))
    with timed('GET /v1/nodes?detail=True, %d nodes, paged' % count):
        listed = ironic.list_nodes(detail=True)
    assert len(listed) == count, len(listed)
    with timed('GET /v1/nodes?fields=(sync subset), paged'):
        listed = ironic.list_nodes(fields=FIELDS)
    assert len(listed) == count, len(listed)
    with timed('reset with %d nodes' % count):
        ironic.reset()


def measure_provisioning(ironic, count):
    with timed('create %d nodes through the API' % count, per=count):
        nodes = [ironic.create_node() for _ in range(count)]
    with timed('manage, provide, power off %d nodes' % count, per=count):
        ironic.make_available(nodes)
    node = nodes[0]
    with timed('fake deploy'):
        ironic.deploy(node, str(uuidlib.uuid4()))
    with timed('teardown, no cleaning'):
        ironic.set_provision_state(node, 'deleted')
        ironic.wait_for([node], provision_state='available')
    ironic.update_node(node, automated_clean=True)
    ironic.deploy(node, str(uuidlib.uuid4()))
    with timed('teardown with cleaning (clean_seconds=%s)'
               % ironic.clean_seconds):
        ironic.set_provision_state(node, 'deleted')
        ironic.wait_for([node], provision_state='available')
    ironic.reset()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nodes', type=int, default=10000)
    parser.add_argument('--enroll', type=int, default=20)
    args = parser.parse_args()
    ironic = ironic_fixture.IronicFixture()
    with timed('set-up: schema, start, serving'):
        ironic.setUp()
    try:
        measure_lifecycle(ironic)
        measure_listing(ironic, args.nodes)
        measure_provisioning(ironic, args.enroll)
    finally:
        ironic.cleanUp()


if __name__ == '__main__':
    main()
