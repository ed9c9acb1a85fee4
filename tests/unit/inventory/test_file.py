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

import collections
import json
import os

import fixtures
import testscenarios
import testtools
import yaml

from reserveapi.common import exception
from reserveapi.inventory import file as inventory_file

SAMPLE_INVENTORY = os.path.join(os.path.dirname(__file__), '..', '..', '..',
                                'etc', 'reserveapi', 'nodes.yaml')
NODE_UUID = '1be26c0b-03f2-4d2e-ae87-c02d7f33c123'
OTHER_UUID = '6f1c39a2-6d2c-4d8e-9a43-2b1f0c7d5e11'
INSTANCE_UUID = 'b0e2d3a4-5f6a-4b7c-8d9e-0f1a2b3c4d5e'
PROJECT = '5d8e3f1a9c2b4e6f8a0b1c2d3e4f5a6b'


def ironic_node(**changes):
    """One entry of Ironic's ``GET /v1/nodes?detail=True``, with changes.

    Carries fields we ignore (``driver``, ``links``) as Ironic's does.
    """
    node = {
        'uuid': NODE_UUID,
        'name': 'node-1',
        'driver': 'ipmi',
        'resource_class': 'baremetal-gold',
        'properties': {
            'memory_mb': 131072, 'cpus': 32, 'local_gb': 960,
            'cpu_arch': 'x86_64',
            'capabilities': 'boot_mode:uefi,secure_boot:true',
        },
        'traits': ['HW_CPU_X86_AVX2', 'CUSTOM_RAID'],
        'provision_state': 'available',
        'power_state': 'power off',
        'maintenance': False,
        'retired': False,
        'instance_uuid': None,
        'conductor_group': 'rack-a',
        'shard': None,
        'owner': None,
        'lessee': None,
        'links': [{'href': 'http://ironic/v1/nodes/' + NODE_UUID,
                   'rel': 'self'}],
    }
    node.update(changes)
    return node


def with_properties(**changes):
    node = ironic_node()
    node['properties'].update(changes)
    return node


EXPECTED = {
    'uuid': NODE_UUID,
    'name': 'node-1',
    'resource_class': 'CUSTOM_BAREMETAL_GOLD',
    'memory_mb': 131072, 'cpus': 32, 'local_gb': 960,
    'cpu_arch': 'x86_64',
    'capabilities': {'boot_mode': 'uefi', 'secure_boot': 'true'},
    'traits': ['CUSTOM_RAID', 'HW_CPU_X86_AVX2'],
    'provision_state': 'available',
    'power_state': 'power off',
    'maintenance': False,
    'retired': False,
    'instance_uuid': None,
    'conductor_group': 'rack-a',
    'shard': None,
    'owner': None,
    'lessee': None,
}


class InventoryFileTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.directory = self.useFixture(fixtures.TempDir()).path

    def write(self, document, name='nodes.json', dump=json.dumps):
        path = os.path.join(self.directory, name)
        with open(path, 'w', encoding='utf-8') as stream:
            stream.write(document if isinstance(document, str)
                         else dump(document))
        return path

    def load_nodes(self, *nodes):
        return inventory_file.load(self.write({'nodes': list(nodes)}))

    def load_one(self, node):
        (loaded,) = self.load_nodes(node)
        return loaded


class FormatTestCase(testscenarios.WithScenarios, InventoryFileTestCase):
    """Both formats, chosen by extension or, without one, by content."""

    scenarios = [
        ('json', {'filename': 'nodes.json', 'dump': json.dumps}),
        ('yaml', {'filename': 'nodes.yaml', 'dump': yaml.safe_dump}),
        ('yml', {'filename': 'nodes.YML', 'dump': yaml.safe_dump}),
        ('json_unknown_extension', {'filename': 'nodes.txt',
                                    'dump': json.dumps}),
        ('yaml_no_extension', {'filename': 'nodes',
                               'dump': yaml.safe_dump}),
    ]

    def test_load(self):
        path = self.write({'nodes': [ironic_node()]}, self.filename, self.dump)
        self.assertEqual([EXPECTED], inventory_file.load(path))

    def test_empty_inventory(self):
        path = self.write({'nodes': []}, self.filename, self.dump)
        self.assertEqual([], inventory_file.load(path))


class NormalizeTestCase(InventoryFileTestCase):

    def test_exactly_the_flat_keys(self):
        self.assertEqual(set(EXPECTED), set(self.load_one(ironic_node())))

    def test_uuids_lower_cased(self):
        node = self.load_one(ironic_node(
            uuid=NODE_UUID.upper(), instance_uuid=INSTANCE_UUID.upper(),
            provision_state='active'))
        self.assertEqual(NODE_UUID, node['uuid'])
        self.assertEqual(INSTANCE_UUID, node['instance_uuid'])

    def test_name_optional(self):
        node = ironic_node()
        del node['name']
        self.assertIsNone(self.load_one(node)['name'])

    def test_resource_class_normalized_as_nova_does(self):
        for given, expected in [
                ('baremetal-gold', 'CUSTOM_BAREMETAL_GOLD'),
                ('Baremetal.Large 2', 'CUSTOM_BAREMETAL_LARGE_2'),
                ('BAREMETAL_GPU', 'CUSTOM_BAREMETAL_GPU'),
                # nova.utils.normalize_rc_name always adds the prefix.
                ('CUSTOM_BAREMETAL_GPU', 'CUSTOM_CUSTOM_BAREMETAL_GPU'),
                (None, None), ('', None)]:
            node = self.load_one(ironic_node(resource_class=given))
            self.assertEqual(expected, node['resource_class'], given)

    def test_sizes_accept_numeric_strings(self):
        node = self.load_one(with_properties(
            memory_mb='65536', cpus=' 16 ', local_gb='0'))
        self.assertEqual((65536, 16, 0),
                         (node['memory_mb'], node['cpus'], node['local_gb']))

    def test_missing_sizes_are_zero(self):
        node = ironic_node()
        node['properties'] = {'memory_mb': None}
        node = self.load_one(node)
        self.assertEqual((0, 0, 0),
                         (node['memory_mb'], node['cpus'], node['local_gb']))

    def test_missing_properties(self):
        node = ironic_node()
        del node['properties']
        node = self.load_one(node)
        self.assertEqual((0, 0, 0, None, {}),
                         (node['memory_mb'], node['cpus'], node['local_gb'],
                          node['cpu_arch'], node['capabilities']))

    def test_cpu_arch_canonicalized(self):
        for given, expected in [('amd64', 'x86_64'), ('ARM64', 'aarch64'),
                                ('ppc64le', 'ppc64le'), (None, None),
                                ('', None)]:
            node = self.load_one(with_properties(cpu_arch=given))
            self.assertEqual(expected, node['cpu_arch'], given)

    def test_capabilities_string(self):
        node = self.load_one(with_properties(
            capabilities=' boot_mode : uefi,disk_label:gpt,,broken,'
                         'cpu_vt:true'))
        self.assertEqual(
            {'boot_mode': 'uefi', 'disk_label': 'gpt', 'cpu_vt': 'true'},
            node['capabilities'])

    def test_capabilities_dict(self):
        node = self.load_one(with_properties(
            capabilities={'boot_mode': 'uefi', 'has_gpu': True, 'gpus': 4}))
        self.assertEqual({'boot_mode': 'uefi', 'has_gpu': 'true',
                          'gpus': '4'}, node['capabilities'])

    def test_no_capabilities(self):
        for given in (None, '', {}):
            node = self.load_one(with_properties(capabilities=given))
            self.assertEqual({}, node['capabilities'], given)

    def test_traits_strings_sorted_and_unique(self):
        node = self.load_one(ironic_node(
            traits=['CUSTOM_RAID', 'HW_CPU_X86_AVX2', 'CUSTOM_RAID']))
        self.assertEqual(['CUSTOM_RAID', 'HW_CPU_X86_AVX2'], node['traits'])

    def test_traits_ironic_objects(self):
        node = self.load_one(ironic_node(
            traits=[{'trait': 'HW_CPU_X86_AVX2'}, {'trait': 'CUSTOM_NVME'}]))
        self.assertEqual(['CUSTOM_NVME', 'HW_CPU_X86_AVX2'], node['traits'])

    def test_no_traits(self):
        for given in (None, []):
            self.assertEqual(
                [], self.load_one(ironic_node(traits=given))['traits'])

    def test_states_kept_and_unknown_power_state_stays_none(self):
        node = self.load_one(ironic_node(provision_state='manageable',
                                         power_state=None))
        self.assertEqual('manageable', node['provision_state'])
        self.assertIsNone(node['power_state'])

    def test_flags(self):
        node = ironic_node(maintenance=True)
        del node['retired']
        node = self.load_one(node)
        self.assertIs(True, node['maintenance'])
        self.assertIs(False, node['retired'])
        node = self.load_one(ironic_node(maintenance=None, retired=True))
        self.assertIs(False, node['maintenance'])
        self.assertIs(True, node['retired'])

    def test_ownership_and_partition(self):
        node = self.load_one(ironic_node(owner=PROJECT, lessee='other',
                                         conductor_group='rack-b',
                                         shard='shard-1'))
        self.assertEqual((PROJECT, 'other', 'rack-b', 'shard-1'),
                         (node['owner'], node['lessee'],
                          node['conductor_group'], node['shard']))

    def test_normalize_one_node_names_the_bad_field(self):
        self.assertEqual(EXPECTED, inventory_file.normalize(ironic_node()))
        error = self.assertRaises(
            ValueError, inventory_file.normalize,
            with_properties(memory_mb='lots'))
        self.assertEqual("properties.memory_mb: is not a whole number: "
                         "'lots'", str(error))

    def test_empty_strings_are_unset(self):
        # Ironic's default conductor group is the empty string.
        node = self.load_one(ironic_node(conductor_group='', owner='',
                                         instance_uuid='', shard=''))
        self.assertEqual((None, None, None, None),
                         (node['conductor_group'], node['owner'],
                          node['instance_uuid'], node['shard']))

    def test_longest_values_accepted(self):
        node = self.load_one(ironic_node(
            name='n' * 255, owner='o' * 255, traits=['T' * 255],
            provision_state='p' * 32))
        self.assertEqual('n' * 255, node['name'])

    def test_several_nodes_keep_document_order(self):
        loaded = self.load_nodes(
            ironic_node(uuid=OTHER_UUID, name='node-2'), ironic_node())
        self.assertEqual([OTHER_UUID, NODE_UUID],
                         [node['uuid'] for node in loaded])


class RejectTestCase(testscenarios.WithScenarios, InventoryFileTestCase):
    """A bad second entry fails the whole load, naming entry and field."""

    LONG = 'x' * 256
    scenarios = [
        ('missing_uuid', {'node': ironic_node(uuid=None),
                          'field': 'uuid: is required'}),
        ('malformed_uuid', {'node': ironic_node(uuid='not-a-uuid'),
                            'field': 'uuid: is not a UUID'}),
        ('uuid_not_string', {'node': ironic_node(uuid=42),
                             'field': 'uuid: must be a UUID string'}),
        ('duplicate_uuid', {'node': ironic_node(uuid=OTHER_UUID.upper()),
                            'field': 'uuid: duplicate of nodes[0]'}),
        ('duplicate_name', {'node': ironic_node(name='node-0'),
                            'field': 'name: duplicate of nodes[0]'}),
        ('negative_memory', {'node': with_properties(memory_mb=-1),
                             'field': 'properties.memory_mb: must not be '
                                      'negative'}),
        ('negative_cpus', {'node': with_properties(cpus='-4'),
                           'field': 'properties.cpus: must not be '
                                    'negative'}),
        ('negative_disk', {'node': with_properties(local_gb=-10),
                           'field': 'properties.local_gb: must not be '
                                    'negative'}),
        ('size_too_large', {'node': with_properties(memory_mb=2 ** 31),
                            'field': 'properties.memory_mb: must be at '
                                     'most'}),
        ('size_not_numeric', {'node': with_properties(cpus='many'),
                              'field': 'properties.cpus: is not a whole '
                                       'number'}),
        ('size_fraction', {'node': with_properties(local_gb=1.5),
                           'field': 'properties.local_gb: must be a whole '
                                    'number'}),
        ('size_bool', {'node': with_properties(cpus=True),
                       'field': 'properties.cpus: must be a whole number'}),
        ('long_name', {'node': ironic_node(name=LONG),
                       'field': 'name: must be at most 255 characters'}),
        ('long_owner', {'node': ironic_node(owner=LONG),
                        'field': 'owner: must be at most 255 characters'}),
        ('long_lessee', {'node': ironic_node(lessee=LONG),
                         'field': 'lessee: must be at most 255 characters'}),
        ('long_conductor_group', {'node': ironic_node(conductor_group=LONG),
                                  'field': 'conductor_group: must be at '
                                           'most 255 characters'}),
        ('long_provision_state', {'node': ironic_node(
            provision_state='x' * 33),
            'field': 'provision_state: must be at most 32 characters'}),
        ('long_resource_class', {'node': ironic_node(
            resource_class='r' * 250),
            'field': 'resource_class: is longer than 255'}),
        ('long_trait', {'node': ironic_node(traits=['CUSTOM_RAID', LONG]),
                        'field': 'traits[1]: must be at most 255 characters'}),
        ('long_capability', {'node': with_properties(
            capabilities='boot_mode:' + LONG),
            'field': 'properties.capabilities value of boot_mode: must be at '
                     'most 255 characters'}),
        ('nul_in_name', {'node': ironic_node(name='node\x00'),
                         'field': 'name: contains a NUL character'}),
        ('control_in_owner', {'node': ironic_node(owner='a\nb'),
                              'field': 'owner: must contain only printable'}),
        ('nul_in_capability', {'node': with_properties(
            capabilities={'boot_mode': 'uefi\x00'}),
            'field': 'properties.capabilities value of boot_mode: contains '
                     'a NUL'}),
        ('nul_in_trait', {'node': ironic_node(traits=['CUSTOM_\x00']),
                          'field': 'traits[0]: contains a NUL'}),
        ('name_not_string', {'node': ironic_node(name=7),
                             'field': 'name: must be a string'}),
        ('maintenance_not_bool', {'node': ironic_node(maintenance='yes'),
                                  'field': 'maintenance: must be true or '
                                           'false'}),
        ('properties_not_object', {'node': ironic_node(properties=[]),
                                   'field': 'properties: must be an '
                                            'object'}),
        ('capabilities_list', {'node': with_properties(capabilities=['a']),
                               'field': 'properties.capabilities: must be'}),
        ('malformed_cpu_arch', {'node': with_properties(cpu_arch='x86 64'),
                                'field': 'properties.cpu_arch: '}),
        ('traits_not_list', {'node': ironic_node(traits='CUSTOM_RAID'),
                             'field': 'traits: must be a list'}),
        ('trait_object_without_name', {'node': ironic_node(
            traits=[{'name': 'CUSTOM_RAID'}]),
            'field': 'traits[0]: must be a trait name'}),
        ('malformed_instance_uuid', {'node': ironic_node(
            instance_uuid='abc'), 'field': 'instance_uuid: is not a UUID'}),
    ]

    def test_rejected(self):
        good = ironic_node(uuid=OTHER_UUID, name='node-0')
        path = self.write({'nodes': [good, self.node]})
        error = self.assertRaises(exception.Invalid, inventory_file.load,
                                  path)
        message = str(error)
        self.assertIn(path, message)
        self.assertIn('nodes[1] (', message)
        if isinstance(self.node['uuid'], str):
            self.assertIn('uuid ' + self.node['uuid'], message)
        else:
            self.assertIn('name ' + self.node['name'], message)
        self.assertIn(': ' + self.field, message)


class RejectDocumentTestCase(InventoryFileTestCase):

    def assertRejected(self, path, reason):
        error = self.assertRaises(exception.Invalid, inventory_file.load,
                                  path)
        self.assertIn(path, str(error))
        self.assertIn(reason, str(error))
        return error

    def test_not_an_object(self):
        self.assertRejected(self.write([ironic_node()]), '"nodes" list')

    def test_no_nodes(self):
        self.assertRejected(self.write({'node': []}), '"nodes" list')

    def test_nodes_not_a_list(self):
        self.assertRejected(self.write({'nodes': {'a': 1}}), '"nodes" list')

    def test_entry_not_an_object(self):
        path = self.write({'nodes': [ironic_node(), 'node-2']})
        self.assertRejected(path, "nodes[1]: entry: must be an object")

    def test_bad_json(self):
        self.assertRejected(self.write('{"nodes": [', 'nodes.json'),
                            'cannot be parsed')

    def test_bad_yaml(self):
        self.assertRejected(self.write('nodes: [\n', 'nodes.yaml'),
                            'cannot be parsed')

    def test_long_values_shortened_in_label(self):
        error = self.assertRejected(
            self.write({'nodes': [ironic_node(uuid='u' * 300)]}),
            'nodes[0] (uuid uuuu')
        self.assertNotIn('u' * 100, str(error))

    def test_missing_file_raises_os_error(self):
        self.assertRaises(OSError, inventory_file.load,
                          os.path.join(self.directory, 'missing.yaml'))


class JsonStreamTestCase(InventoryFileTestCase):
    """A .json document is read a block at a time: blocks smaller than an
    entry, numbers cut by a block's end and other keys around "nodes"
    change nothing, and errors are placed in the whole document."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'reserveapi.inventory.file.READ_SIZE', 5))

    def test_same_nodes_as_the_whole_document(self):
        nodes = [ironic_node(), ironic_node(
            uuid=OTHER_UUID, name='nødé-2',
            properties={'memory_mb': 1234567, 'cpus': 12}),
            ironic_node(uuid=INSTANCE_UUID, name='n3')]
        document = {'links': [{'href': 'x'}], 'nodes': nodes, 'next': 7}
        path = self.write(json.dumps(document, indent=2))
        self.assertEqual(
            [inventory_file.normalize(node) for node in nodes],
            inventory_file.load(path))

    def test_chunks_of_the_stream(self):
        nodes = [ironic_node(uuid='%08d-0000-4000-8000-000000000000' % index,
                             name='n%d' % index) for index in range(5)]
        document = inventory_file.Document(self.write({'nodes': nodes}))
        self.assertEqual([2, 2, 1], [len(chunk)
                                     for chunk in document.chunks(size=2)])

    def test_errors_placed_as_json_places_them(self):
        text = '{\n  "nodes": [\n    {"uuid": "%s"},\n    {"a": tru}\n]}' % (
            NODE_UUID)
        try:
            json.loads(text)
        except ValueError as error:
            expected = str(error)
        error = self.assertRaises(exception.Invalid, inventory_file.load,
                                  self.write(text))
        self.assertIn('cannot be parsed: ' + expected, str(error))

    def test_nodes_twice(self):
        error = self.assertRaises(
            exception.Invalid, inventory_file.load,
            self.write('{"nodes": [], "nodes": []}'))
        self.assertIn('"nodes" list', str(error))

    def test_data_after_the_document(self):
        error = self.assertRaises(
            exception.Invalid, inventory_file.load,
            self.write('{"nodes": []} {}'))
        self.assertIn('Extra data', str(error))

    def test_a_document_changed_while_read_is_refused(self):
        path = self.write({'nodes': [ironic_node()]})
        document = inventory_file.Document(path)
        self.write({'nodes': [ironic_node(name='other')]})
        error = self.assertRaises(exception.Invalid, document.nodes)
        self.assertIn('changed while it was being read', str(error))

    def test_a_broken_entry_is_not_read_to_the_end(self):
        self.useFixture(fixtures.MonkeyPatch(
            'reserveapi.inventory.file.MAX_VALUE', 50))
        path = self.write('{"nodes": [{"a": tru ' + ' ' * 10000 + '}]}')
        read = []
        real_open = open

        def counting_open(*args, **kwargs):
            stream = real_open(*args, **kwargs)
            original = stream.read

            def read_block(size=-1):
                block = original(size)
                read.append(len(block))
                return block

            stream.read = read_block
            return stream

        self.useFixture(fixtures.MonkeyPatch('builtins.open',
                                             counting_open))
        document = inventory_file.Document(path)
        read.clear()
        self.assertRaises(exception.Invalid, document.nodes)
        self.assertLess(sum(read), 200)


class SampleInventoryTestCase(testtools.TestCase):
    """The inventory shipped for the demo loads and offers variety."""

    def setUp(self):
        super().setUp()
        self.nodes = inventory_file.load(SAMPLE_INVENTORY)

    def eligible(self):
        return [node for node in self.nodes
                if node['provision_state'] == 'available'
                and node['power_state'] is not None
                and not node['maintenance'] and not node['retired']
                and node['instance_uuid'] is None]

    def test_size(self):
        self.assertTrue(200 <= len(self.nodes) <= 1000, len(self.nodes))

    def test_several_resource_classes_and_architectures(self):
        classes = {node['resource_class'] for node in self.nodes}
        self.assertTrue({'CUSTOM_BAREMETAL_GOLD', 'CUSTOM_BAREMETAL_SILVER',
                         'CUSTOM_BAREMETAL_GPU',
                         'CUSTOM_BAREMETAL_LARGE'}.issubset(classes))
        self.assertEqual({'x86_64', 'aarch64', None},
                         {node['cpu_arch'] for node in self.nodes})

    def test_some_eligible_some_not(self):
        eligible = self.eligible()
        self.assertGreater(len(eligible), len(self.nodes) // 2)
        self.assertLess(len(eligible), len(self.nodes))
        ineligible = [node for node in self.nodes if node not in eligible]
        states = collections.Counter(node['provision_state']
                                     for node in ineligible)
        self.assertTrue({'active', 'manageable', 'available'}
                        .issubset(states), states)
        for reason in ('maintenance', 'retired', 'instance_uuid'):
            self.assertTrue(any(node[reason] for node in ineligible), reason)
        self.assertTrue(any(node['power_state'] is None
                            for node in ineligible))

    def test_owned_and_leased_nodes(self):
        self.assertTrue(any(node['owner'] for node in self.nodes))
        self.assertTrue(any(node['lessee'] for node in self.nodes))

    def test_design_example_has_a_match(self):
        """The example request can reserve a node in the demo."""
        matches = [
            node for node in self.eligible()
            if node['resource_class'] == 'CUSTOM_BAREMETAL_GOLD'
            and node['cpu_arch'] == 'x86_64'
            and {'CUSTOM_RAID', 'HW_CPU_X86_AVX2'}.issubset(node['traits'])
            and node['capabilities'].get('boot_mode') == 'uefi'
            and node['capabilities'].get('supports_uefi') == 'true'
            and node['capabilities'].get('has_gpu') == 'true'
            and node['owner'] is None and node['lessee'] is None]
        self.assertGreater(len(matches), 1)

    def test_both_trait_forms_and_loose_sizes_present(self):
        with open(SAMPLE_INVENTORY, encoding='utf-8') as stream:
            raw = yaml.safe_load(stream)['nodes']
        trait_forms = {type(trait) for node in raw for trait in node['traits']}
        self.assertEqual({str, dict}, trait_forms)
        self.assertTrue(any(isinstance(node['properties'].get('cpus'), str)
                            for node in raw))
