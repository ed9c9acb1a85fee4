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

"""Inventory sync: the database follows the inventory document, reserved
nodes are never dropped, and a broken document changes nothing.
"""

import json
import os
import subprocess
import sys
import uuid

import fixtures
from oslo_utils import timeutils
import sqlalchemy as sa
import testtools

from reserveapi.common import exception
from reserveapi.db import base as db_base
from reserveapi.db import models
from reserveapi.db import node_sync
from reserveapi.db import nodes as db_nodes
from reserveapi.inventory import file as file_source
from reserveapi.inventory import sync as inventory_sync
from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.functional import base


def counts(added=0, updated=0, unchanged=0, removed=0, flagged=0):
    return {'added': added, 'updated': updated, 'unchanged': unchanged,
            'removed': removed, 'flagged': flagged}


class TestInventorySync(base.APITestCase):
    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        self.first = [inventory.node('node-1'),
                      inventory.node('node-2', ironic_traits=True),
                      inventory.node('node-3')]
        self.assertEqual(counts(added=3), inventory.sync(self, self.first))

    def nodes(self):
        response = self.request('GET', '/v1/nodes?sort_key=name')
        self.assertEqual(200, response.status_int, response.text)
        return {node['name']: node for node in response.json['nodes']}

    def reserve(self, node_name):
        response = self.request('POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'host': 'compute-3',
            'candidate_nodes': [node_name],
            'request_spec': examples.REQUEST_SPEC})
        self.assertEqual(201, response.status_int, response.text)
        return response.json['uuid']

    def test_new_nodes_appear(self):
        nodes = self.nodes()
        self.assertEqual(['node-1', 'node-2', 'node-3'], sorted(nodes))
        node = nodes['node-2']
        self.assertEqual(inventory.node_uuid('node-2'), node['uuid'])
        self.assertEqual('CUSTOM_BAREMETAL_GOLD', node['resource_class'])
        self.assertEqual(['CUSTOM_RAID', 'HW_CPU_X86_AVX2'], node['traits'])
        self.assertEqual('uefi', node['capabilities']['boot_mode'])
        self.assertFalse(node['vanished'])
        self.assertIsNotNone(node['synced_at'])

    def test_unchanged_nodes_are_left_alone(self):
        before = self.nodes()
        self.assertEqual(counts(unchanged=3), inventory.sync(self,
                                                             self.first))
        self.assertEqual(before, self.nodes())

    def test_changed_nodes_update(self):
        before = self.nodes()
        changed = [inventory.node('node-1', memory_mb=65536,
                                  traits=['CUSTOM_GPU'],
                                  capabilities='boot_mode:bios'),
                   self.first[1], self.first[2],
                   inventory.node('node-4')]
        self.assertEqual(counts(added=1, updated=1, unchanged=2),
                         inventory.sync(self, changed))
        after = self.nodes()
        self.assertEqual(65536, after['node-1']['memory_mb'])
        self.assertEqual(['CUSTOM_GPU'], after['node-1']['traits'])
        self.assertEqual({'boot_mode': 'bios'},
                         after['node-1']['capabilities'])
        self.assertGreaterEqual(after['node-1']['synced_at'],
                                before['node-1']['synced_at'])
        self.assertEqual(before['node-2'], after['node-2'])
        self.assertIn('node-4', after)
        # Rewritten in place: same row, same creation, a new update time.
        self.assertEqual(before['node-1']['created_at'],
                         after['node-1']['created_at'])
        self.assertIsNone(before['node-1']['updated_at'])
        self.assertIsNotNone(after['node-1']['updated_at'])
        self.assertIsNone(after['node-4']['updated_at'])

    def test_an_unchanged_document_is_not_parsed_again(self):
        before = self.nodes()
        parse = self.useFixture(fixtures.MockPatch(
            'reserveapi.inventory.file.Document.nodes',
            side_effect=AssertionError('parsed'))).mock
        self.assertEqual(counts(unchanged=3), inventory.sync(self,
                                                             self.first))
        parse.assert_not_called()
        self.assertEqual(before, self.nodes())
        self.assertEqual(3, inventory_sync.last_sync().nodes)

    def test_a_table_changed_behind_the_document_is_synced_again(self):
        # Another writer (a sync of another source) changed node-1: the
        # same document is read in full and puts it back.
        changed = file_source.normalize(inventory.node('node-1',
                                                       memory_mb=1024))
        node_sync.upsert_nodes([changed], {changed['uuid']: 'elsewhere'},
                               timeutils.utcnow())
        self.assertEqual(1024, self.nodes()['node-1']['memory_mb'])
        self.assertEqual(counts(updated=1, unchanged=2),
                         inventory.sync(self, self.first))
        self.assertEqual(self.first[0]['properties']['memory_mb'],
                         self.nodes()['node-1']['memory_mb'])

    def test_an_unchanged_document_clears_stale_marks(self):
        reservation = self.reserve('node-1')
        released = self.request('DELETE', '/v1/reservations/' + reservation)
        self.assertEqual(204, released.status_int)
        with db_base.writer() as session:
            db_nodes.mark_stale(session, [db_nodes.get_node('node-1').id],
                                timeutils.utcnow())
        response = self.request('POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'host': 'compute-3',
            'candidate_nodes': ['node-1'],
            'request_spec': examples.REQUEST_SPEC})
        self.assertError(response, 409, 'reserveapi.no_valid_node')
        self.assertEqual(counts(unchanged=3), inventory.sync(self,
                                                             self.first))
        self.reserve('node-1')

    def test_vanished_nodes_are_removed_unless_reserved(self):
        reservation = self.reserve('node-1')
        self.assertEqual(counts(removed=1, flagged=1, unchanged=1),
                         inventory.sync(self, [self.first[2]]))
        nodes = self.nodes()
        self.assertEqual(['node-1', 'node-3'], sorted(nodes))
        self.assertTrue(nodes['node-1']['vanished'])
        self.assertEqual(reservation, nodes['node-1']['reservation']['uuid'])
        # Flagged once; a vanished node is never offered again.
        self.assertEqual(counts(unchanged=1),
                         inventory.sync(self, [self.first[2]]))
        released = self.request('DELETE', '/v1/reservations/' + reservation)
        self.assertEqual(204, released.status_int)
        response = self.request('POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'host': 'compute-3',
            'candidate_nodes': ['node-1'],
            'request_spec': examples.REQUEST_SPEC})
        self.assertError(response, 409, 'reserveapi.no_valid_node')
        # Released: the next sync drops it.
        self.assertEqual(counts(removed=1, unchanged=1),
                         inventory.sync(self, [self.first[2]]))
        self.assertEqual(['node-3'], sorted(self.nodes()))

    def test_a_removed_node_leaves_no_traits_or_capabilities(self):
        # No foreign key removes them (migration 0009): the sync does.
        def owners():
            with db_base.reader() as session:
                return {child.__tablename__: set(session.scalars(
                    sa.select(child.node_id).distinct()))
                    for child in (models.NodeTrait, models.NodeCapability)}

        removed = {db_nodes.get_node(name).id for name in ('node-1',
                                                           'node-2')}
        before = owners()
        self.assertTrue(removed & before['node_traits'])
        self.assertEqual(removed, removed & before['node_capabilities'])
        self.assertEqual(counts(removed=2, unchanged=1),
                         inventory.sync(self, [self.first[2]]))
        kept = {db_nodes.get_node('node-3').id}
        self.assertEqual({'node_traits': kept & before['node_traits'],
                          'node_capabilities': kept}, owners())

    def test_vanished_node_comes_back(self):
        reservation = self.reserve('node-1')
        inventory.sync(self, self.first[1:])
        self.assertEqual(counts(updated=1, unchanged=2),
                         inventory.sync(self, self.first))
        node = self.nodes()['node-1']
        self.assertFalse(node['vanished'])
        self.assertEqual(reservation, node['reservation']['uuid'])

    def test_eligibility_follows_the_inventory(self):
        self.assertEqual(counts(updated=3), inventory.sync(self, [
            inventory.node('node-1', maintenance=True),
            inventory.node('node-2', provision_state='active',
                           instance_uuid=str(uuid.uuid4())),
            inventory.node('node-3', power_state=None)]))
        response = self.request('POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'host': 'compute-3',
            'request_spec': examples.REQUEST_SPEC})
        error = self.assertError(response, 409, 'reserveapi.no_valid_node')
        self.assertEqual('No valid node: 3 nodes: 1 not available, 1 in an '
                         'unknown power state, 1 in maintenance',
                         error['detail'])
        inventory.sync(self, self.first)
        self.assertEqual('node-1', self.request(
            'POST', '/v1/reservations', {
                'instance_uuid': str(uuid.uuid4()), 'host': 'compute-3',
                'candidate_nodes': ['node-1'],
                'request_spec': examples.REQUEST_SPEC}).json['node_name'])

    def test_reserved_node_changing_keeps_its_reservation(self):
        reservation = self.reserve('node-1')
        inventory.sync(self, [inventory.node('node-1', maintenance=True)] +
                       self.first[1:])
        node = self.nodes()['node-1']
        self.assertTrue(node['maintenance'])
        self.assertEqual(reservation, node['reservation']['uuid'])

    def test_broken_documents_change_nothing(self):
        before = self.nodes()
        directory = self.useFixture(fixtures.TempDir()).path
        broken = {
            'bad-uuid.yaml': {'nodes': [inventory.node('node-9'),
                                        dict(inventory.node('node-8'),
                                             uuid='not-a-uuid')]},
            'duplicate.yaml': {'nodes': [inventory.node('node-9'),
                                         inventory.node('node-9')]},
            'negative.yaml': {'nodes': [inventory.node('node-9',
                                                       memory_mb=-1)]},
            'no-list.yaml': {'items': []},
        }
        for filename, document in broken.items():
            path = os.path.join(directory, filename)
            with open(path, 'w') as stream:
                json.dump(document, stream)
            self.config(file=path, group='inventory')
            self.assertRaises(exception.Invalid, inventory_sync.sync)
            self.assertEqual(before, self.nodes(), filename)
        path = os.path.join(directory, 'garbage.yaml')
        with open(path, 'w') as stream:
            stream.write('nodes: [\n  - {uuid: ')
        self.config(file=path, group='inventory')
        self.assertRaises(exception.Invalid, inventory_sync.sync)
        self.assertEqual(before, self.nodes())

    def test_each_complete_sync_is_recorded(self):
        first = inventory_sync.last_sync()
        self.assertEqual(('file', 3), (first.source, first.nodes))
        inventory.sync(self, self.first[:2])
        second = inventory_sync.last_sync()
        self.assertEqual(2, second.nodes)
        self.assertGreater(second.synced_at, first.synced_at)

    def test_a_broken_document_is_not_a_sync(self):
        before = inventory_sync.last_sync()
        inventory.use(self, [inventory.node('node-4', cpus='many')])
        self.assertRaises(exception.Invalid, inventory_sync.sync)
        self.assertEqual(before, inventory_sync.last_sync())

    def test_json_document(self):
        path = inventory.use(self, [inventory.node('node-9')],
                             filename='nodes.json')
        with open(path, 'w') as stream:
            json.dump({'nodes': [inventory.node('node-9')]}, stream)
        self.assertEqual(counts(added=1, removed=3), inventory_sync.sync())
        self.assertEqual(['node-9'], sorted(self.nodes()))

    def test_sync_nodes_command(self):
        inventory.use(self, self.first + [inventory.node('node-4')])
        code, out, err = inventory.manage(self, 'sync-nodes')
        self.assertEqual((0, ''), (code, err))
        self.assertEqual('Nodes: 1 added, 0 updated, 3 unchanged, 0 removed, '
                         '0 vanished but kept while reserved.\n', out)
        self.assertEqual(4, len(self.nodes()))

    def test_sync_nodes_command_refuses_a_broken_document(self):
        before = self.nodes()
        inventory.use(self, [inventory.node('node-4', cpus='many')])
        code, out, err = inventory.manage(self, 'sync-nodes')
        self.assertEqual(1, code)
        self.assertEqual('', out)
        self.assertIn('Inventory not synced', err)
        self.assertIn('node-4', err)
        self.assertIn('properties.cpus', err)
        self.assertEqual(before, self.nodes())

    def test_a_document_gone_after_its_digest_changes_nothing(self):
        """The document is read as it is parsed: one removed once its
        digest is taken is as unreadable as a missing one."""
        before = self.nodes()
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, 'nodes.json')
        with open(path, 'w') as stream:
            json.dump({'nodes': [inventory.node('node-9')]}, stream)
        self.config(file=path, group='inventory')
        digested = file_source.Document.__init__

        def digest_then_remove(document, path):
            digested(document, path)
            os.remove(path)

        self.useFixture(fixtures.MonkeyPatch(
            'reserveapi.inventory.file.Document.__init__',
            digest_then_remove))
        error = self.assertRaises(exception.Invalid, inventory_sync.sync)
        self.assertIn('cannot read the inventory', str(error))
        self.assertEqual(before, self.nodes())

    def test_sync_nodes_command_without_a_document(self):
        before = self.nodes()
        self.config(file=os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'missing.yaml'),
            group='inventory')
        code, out, err = inventory.manage(self, 'sync-nodes')
        self.assertEqual(1, code)
        self.assertIn('missing.yaml', err)
        self.assertEqual(before, self.nodes())


class TestUnsupportedSource(testtools.TestCase):

    def test_an_unknown_source_stops_the_command_at_start(self):
        directory = self.useFixture(fixtures.TempDir()).path
        inventory_file = os.path.join(directory, 'nodes.yaml')
        with open(inventory_file, 'w') as stream:
            stream.write('nodes: []\n')
        config_file = os.path.join(directory, 'reserveapi.conf')
        with open(config_file, 'w') as stream:
            stream.write('[DEFAULT]\nstate_path = %s\n[inventory]\n'
                         'source = nova\nfile = %s\n'
                         % (directory, inventory_file))
        manage = os.path.join(os.path.dirname(sys.executable),
                              'reserveapi-manage')

        result = subprocess.run(
            [manage, '--config-file', config_file, 'sync-nodes'],
            capture_output=True, text=True, timeout=120)

        self.assertEqual(2, result.returncode)
        self.assertEqual('[inventory] source = nova in %s is not valid: '
                         'expected one of file, ironic.\n' % config_file,
                         result.stderr)
        self.assertNotIn('Nodes:', result.stdout)
