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

"""The operators' commands against the real Ironic, each in a process
of its own: ``reserveapi-manage sync-nodes`` (always a complete pass,
exit 0 while Ironic answers) and ``reserveapi-worker --once`` (every
change made in Ironic since the last sync), read back through the API.
"""

import re
import uuid as uuidlib

from tests.ironic import base

V1_1 = {'OpenStack-API-Version': 'baremetal-reservation 1.1'}


class TestCommands(base.IronicServiceTestCase):

    def nodes(self):
        status, body = self.call('GET', '/v1/nodes', headers=V1_1)
        self.assertEqual(200, status, body)
        return {node['uuid']: node for node in body['nodes']}, body[
            'inventory']

    def test_sync_nodes_then_worker_once(self):
        (traits, maintenance, capabilities, managed, taken,
         quiet) = self.ironic.seed_nodes(6, **base.GOLD)

        stdout = self.run_command('reserveapi-manage', 'sync-nodes')

        self.assertIn('Nodes: 6 added, 0 updated, 0 unchanged, 0 removed',
                      stdout)
        # Everything an operator or another service changes in Ironic.
        self.ironic.set_traits(traits, ['CUSTOM_RAID', 'CUSTOM_NEW'])
        self.ironic.update_node(maintenance, maintenance=True)
        self.ironic.update_node(capabilities, properties=dict(
            base.GOLD['properties'], capabilities='boot_mode:bios'))
        self.ironic.set_provision_state(managed, 'manage')
        self.ironic.wait_for([managed], provision_state='manageable')
        other = str(uuidlib.uuid4())
        self.ironic.update_node(taken, instance_uuid=other)

        self.run_command('reserveapi-worker', '--once')

        self.start_api(workers=1, threads=1)
        nodes, inventory = self.nodes()
        self.assertEqual(
            (['CUSTOM_NEW', 'CUSTOM_RAID'], True, {'boot_mode': 'bios'},
             'manageable', other),
            (nodes[traits]['traits'], nodes[maintenance]['maintenance'],
             nodes[capabilities]['capabilities'],
             nodes[managed]['provision_state'],
             nodes[taken]['instance_uuid']))
        self.assertEqual(
            (False, 'available', None),
            (nodes[quiet]['maintenance'], nodes[quiet]['provision_state'],
             nodes[quiet]['instance_uuid']))
        self.assertEqual(('ironic', self.ironic.endpoint, None),
                         (inventory['source'], inventory['location'],
                          inventory['unreachable_since']))
        # The worker's pass was incremental; the last full one is older.
        self.assertLess(inventory['full_synced_at'], inventory['synced_at'])

        # A node deleted in Ironic leaves at the next complete pass.
        self.ironic.request('DELETE', '/v1/nodes/%s' % maintenance,
                            expected=(204,))
        self.assertIn('5 unchanged, 1 removed',
                      self.run_command('reserveapi-manage', 'sync-nodes'))
        nodes, _inventory = self.nodes()
        self.assertNotIn(maintenance, nodes)
        self.assertEqual(5, len(nodes))

    def test_syncs_at_once_take_turns(self):
        self.ironic.seed_nodes(300, **base.GOLD)

        # Two operators and a worker, at the same moment, on one database.
        runs = [self.start_command('reserveapi-manage', 'sync-nodes'),
                self.start_command('reserveapi-manage', 'sync-nodes'),
                self.start_command('reserveapi-worker', '--once')]
        outputs = [self.finish_command(run) for run in runs]

        # One pass (whichever process took the lease first) added every
        # node; each later one found nothing to change. Both sync-nodes
        # ran a pass (the later waited for the lease); the worker's ran
        # too, or was skipped while another process synced.
        passes = sorted(int(added) for added in re.findall(
            r'Ironic (?:full|incremental) sync: added (\d+)',
            ''.join(outputs)))
        self.assertEqual([300], passes[-1:])
        self.assertEqual({0}, set(passes[:-1]))
        self.assertIn(len(passes), (2, 3))
        for output in outputs[:2]:
            self.assertIn('Nodes: ', output)
        self.start_api(workers=1, threads=1)
        nodes, inventory = self.nodes()
        self.assertEqual(300, len(nodes))
        self.assertIsNotNone(inventory['synced_at'])

    def test_ironic_down(self):
        self.ironic.seed_nodes(2, **base.GOLD)
        self.run_command('reserveapi-manage', 'sync-nodes')
        self.start_api(workers=1, threads=1)
        self.ironic.stop()
        self.addCleanup(self.ironic.start)

        self.assertIn('Inventory not synced: Ironic is unavailable',
                      self.run_command('reserveapi-manage', 'sync-nodes',
                                       expected=1))
        # The worker's jobs carry on (cron would retry anyway); the
        # outage is noted for the API and for reserveapi-status.
        self.run_command('reserveapi-worker', '--once')

        nodes, inventory = self.nodes()
        self.assertEqual(2, len(nodes))
        self.assertIsNotNone(inventory['unreachable_since'])
        self.assertIn('Ironic is unavailable', inventory['last_error'])

        self.ironic.start()
        self.assertIn('0 added, 0 updated, 2 unchanged',
                      self.run_command('reserveapi-manage', 'sync-nodes'))
        self.assertIsNone(self.nodes()[1]['unreachable_since'])
