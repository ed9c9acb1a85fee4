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

"""Nodes made by the fixture look to Ironic's API like any other node."""

import datetime
import sqlite3
import uuid as uuidlib

from tests.ironic import base

NEEDED_FIELDS = (
    'uuid', 'name', 'resource_class', 'properties', 'traits',
    'provision_state', 'power_state', 'maintenance', 'retired',
    'instance_uuid', 'conductor_group', 'shard', 'owner', 'lessee',
)
"""What matching and sync read from Ironic (``updated_at`` aside: it
comes only with ``detail=True``)."""

PROPERTIES = {'memory_mb': 8192, 'cpus': 16, 'local_gb': 400,
              'cpu_arch': 'aarch64', 'capabilities': 'boot_mode:uefi,raid:1'}


class TestCreatedNodes(base.IronicTestCase):

    def test_created_node_lists_every_field_we_need(self):
        node = self.ironic.create_node(
            name='gold-1', resource_class='gold', properties=PROPERTIES,
            traits=['CUSTOM_GPU', 'HW_CPU_X86_AVX2'], shard='s1',
            owner='owner-project', lessee='lessee-project')
        self.ironic.make_available([node])
        self.ironic.update_node(node, maintenance=True)

        listed, = self.ironic.list_nodes(detail=True)
        subset, = self.ironic.list_nodes(fields=','.join(NEEDED_FIELDS))

        expected = {
            'uuid': node['uuid'], 'name': 'gold-1', 'resource_class': 'gold',
            'properties': PROPERTIES,
            'traits': ['CUSTOM_GPU', 'HW_CPU_X86_AVX2'],
            'provision_state': 'available', 'power_state': 'power off',
            'maintenance': True, 'retired': False, 'instance_uuid': None,
            'conductor_group': '', 'shard': 's1', 'owner': 'owner-project',
            'lessee': 'lessee-project',
        }
        self.assertEqual(expected, {f: listed[f] for f in NEEDED_FIELDS})
        self.assertEqual(expected, {f: subset[f] for f in NEEDED_FIELDS})
        self.assertGreater(listed['updated_at'], listed['created_at'])

    def test_make_available_leaves_nodes_available_and_off(self):
        nodes = [self.ironic.create_node() for _ in range(3)]
        self.assertEqual({None}, {n['power_state'] for n in nodes})

        self.ironic.make_available(nodes)

        self.assertEqual(
            {('available', 'power off', None, None)},
            {(n['provision_state'], n['power_state'],
              n['target_provision_state'], n['target_power_state'])
             for n in self.ironic.list_nodes(detail=True)})


class TestSeededNodes(base.IronicTestCase):

    def test_seeded_nodes_list_like_created_ones_in_pages(self):
        uuids = self.ironic.seed_nodes(
            200, name=lambda i: 'rack-%03d' % i,
            resource_class=lambda i: ('gold', 'silver')[i % 2],
            properties=PROPERTIES,
            traits=lambda i: ['CUSTOM_RACK_%d' % (i % 4), 'CUSTOM_SEEDED'],
            shard=lambda i: 'shard-%d' % (i % 3), owner='owner-project',
            lessee=lambda i: None if i % 5 else 'lessee-project')

        listed = self.ironic.list_nodes(detail=True, limit=50)

        self.assertEqual(uuids, [n['uuid'] for n in listed])
        for index, node in enumerate(listed):
            self.assertEqual({
                'name': 'rack-%03d' % index,
                'resource_class': ('gold', 'silver')[index % 2],
                'properties': PROPERTIES,
                'traits': sorted(['CUSTOM_RACK_%d' % (index % 4),
                                  'CUSTOM_SEEDED']),
                'provision_state': 'available', 'power_state': 'power off',
                'maintenance': False, 'retired': False,
                'instance_uuid': None, 'conductor_group': '',
                'shard': 'shard-%d' % (index % 3), 'owner': 'owner-project',
                'lessee': None if index % 5 else 'lessee-project',
                'driver': 'fake-hardware', 'target_provision_state': None,
            }, {f: node[f] for f in NEEDED_FIELDS[1:] + (
                'driver', 'target_provision_state')})
        # Ironic's own filters see the seeded columns.
        filtered = self.ironic.list_nodes(
            shard='shard-1', resource_class='gold', owner='owner-project')
        self.assertEqual(
            [uuids[i] for i in range(200) if i % 3 == 1 and i % 2 == 0],
            [n['uuid'] for n in filtered])

    def test_seeds_any_provision_state(self):
        instance = str(uuidlib.uuid4())
        updated = datetime.datetime(2030, 1, 2, 3, 4, 5,
                                    tzinfo=datetime.timezone.utc)
        enroll, = self.ironic.seed_nodes(1, provision_state='enroll',
                                         power_state=None)
        manageable, = self.ironic.seed_nodes(
            1, provision_state='manageable', retired=True,
            retired_reason='old', updated_at=updated)
        failed, = self.ironic.seed_nodes(
            1, provision_state='deploy failed', last_error='boom',
            maintenance=True, maintenance_reason='broken')
        active, = self.ironic.seed_nodes(
            1, provision_state='active', power_state='power on',
            instance_uuid=instance, instance_info={'image_source': 'x'})

        nodes = {n['uuid']: n for n in self.ironic.list_nodes(detail=True)}

        self.assertEqual(('enroll', None), (
            nodes[enroll]['provision_state'], nodes[enroll]['power_state']))
        self.assertEqual(
            ('manageable', True, 'old', '2030-01-02T03:04:05+00:00'),
            tuple(nodes[manageable][f] for f in (
                'provision_state', 'retired', 'retired_reason',
                'updated_at')))
        self.assertEqual(('deploy failed', 'boom', True, 'broken'), tuple(
            nodes[failed][f] for f in ('provision_state', 'last_error',
                                       'maintenance', 'maintenance_reason')))
        self.assertEqual(
            ('active', 'power on', instance, {'image_source': 'x'}),
            tuple(nodes[active][f] for f in (
                'provision_state', 'power_state', 'instance_uuid',
                'instance_info')))
        # Ironic's conductor works on seeded nodes: a teardown releases.
        self.ironic.set_provision_state(active, 'deleted')
        self.ironic.wait_for([active], provision_state='available')
        self.assertIsNone(self.ironic.get_node(active)['instance_uuid'])

    def test_api_changes_seeded_nodes(self):
        node, = self.ironic.seed_nodes(
            1, traits=['CUSTOM_OLD'],
            updated_at=datetime.datetime(2020, 1, 1))
        seeded_at = self.ironic.get_node(node)['updated_at']
        instance = str(uuidlib.uuid4())

        claimed = self.ironic.update_node(
            node, instance_uuid=instance,
            instance_info={'traits': ['CUSTOM_NEW']}).json()
        self.ironic.set_traits(node, ['CUSTOM_NEW'])
        self.ironic.update_node(node, maintenance=True)

        self.assertEqual(instance, claimed['instance_uuid'])
        node = self.ironic.get_node(node)
        self.assertEqual((['CUSTOM_NEW'], True, instance), (
            node['traits'], node['maintenance'], node['instance_uuid']))
        self.assertEqual('2020-01-01T00:00:00+00:00', seeded_at)
        self.assertGreater(node['updated_at'], seeded_at)
        self.ironic.update_node(node, maintenance=False)
        self.ironic.deploy(node, instance)

    def test_seeded_node_in_a_group_without_conductor_is_read_only(self):
        node, = self.ironic.seed_nodes(1, conductor_group='elsewhere')

        listed = self.ironic.list_nodes(conductor_group='elsewhere')
        answer = self.ironic.update_node(node, expected=None,
                                         instance_uuid=str(uuidlib.uuid4()))

        self.assertEqual([node], [n['uuid'] for n in listed])
        self.assertEqual(400, answer.status_code)
        self.assertIn('No valid host', answer.text)

    def test_unknown_column_is_refused_before_writing(self):
        self.assertRaises(ValueError, self.ironic.seed_nodes, 3,
                          memory_mb=1024)

        with sqlite3.connect(self.ironic.db_path) as conn:
            count, = conn.execute('SELECT count(*) FROM nodes').fetchone()
        self.assertEqual(0, count)
