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
import io
import json
import os
import re

import fixtures
import testtools
import yaml

from reserveapi.inventory import file as inventory_file
from tools import generate_inventory

TOP_DIR = os.path.join(os.path.dirname(__file__), '..', '..')
SAMPLE_INVENTORY = os.path.join(TOP_DIR, 'etc', 'reserveapi', 'nodes.yaml')


class GenerateInventoryTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.directory = self.useFixture(fixtures.TempDir()).path

    def generate(self, name, *options, count=200, seed=7):
        path = os.path.join(self.directory, name)
        generate_inventory.main(['--count', str(count), '--seed', str(seed),
                                 '--output', path, *options])
        with open(path, encoding='utf-8') as stream:
            return path, stream.read()

    def test_deterministic_per_seed(self):
        for name in ('a.json', 'a.yaml'):
            _, first = self.generate(name)
            _, again = self.generate(name)
            _, other = self.generate(name, seed=8)
            self.assertEqual(first, again, name)
            self.assertNotEqual(first, other, name)

    def test_formats_hold_the_same_document(self):
        _, as_json = self.generate('nodes.json')
        _, as_yaml = self.generate('nodes.yaml')
        self.assertEqual(json.loads(as_json), yaml.safe_load(as_yaml))

    def test_format_option_overrides_extension(self):
        _, text = self.generate('nodes.txt', '--format', 'json')
        self.assertEqual(200, len(json.loads(text)['nodes']))
        _, text = self.generate('nodes.json', '--format', 'yaml')
        self.assertTrue(text.startswith('# Generated'))

    def test_loadable_and_varied(self):
        for name in ('nodes.json', 'nodes.yaml'):
            path, _ = self.generate(name, count=500)
            nodes = inventory_file.load(path)
            self.assertEqual(500, len(nodes))
            classes = collections.Counter(n['resource_class'] for n in nodes)
            self.assertEqual(6, len(classes), classes)
            states = {n['provision_state'] for n in nodes}
            self.assertTrue({'available', 'active', 'manageable', 'cleaning',
                             'enroll'}.issubset(states), states)
            self.assertEqual({'x86_64', 'aarch64', None},
                             {n['cpu_arch'] for n in nodes})
            for flag in ('maintenance', 'retired', 'owner', 'lessee',
                         'instance_uuid', 'conductor_group'):
                self.assertTrue(any(n[flag] for n in nodes), flag)

    def test_count_must_be_positive(self):
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', io.StringIO()))
        self.assertRaises(SystemExit, self.generate, 'nodes.json', count=0)

    def test_yaml_quotes_what_would_read_back_differently(self):
        tricky = ['true', 'Off', 'null', '', '123', '1.5', '0x1f', 'a: b',
                  'ends:', 'x #y', '2024-01-02', '-dash', 'plain text',
                  '12345678-1234-1234-1234-1234567890ab', 'ünïcode', 'a"b']
        nodes = [{'value': value, 'list': [value], 'nested': {'v': value}}
                 for value in tricky]
        nodes.append({'empty_list': [], 'empty_dict': {}, 'flag': False,
                      'number': 0, 'missing': None,
                      'items': [{'trait': 'CUSTOM_A', 'extra': 1}]})
        stream = io.StringIO()
        generate_inventory.write_yaml(nodes, stream)
        self.assertEqual({'nodes': nodes}, yaml.safe_load(stream.getvalue()))

    def test_shipped_sample_is_generated(self):
        """etc/reserveapi/nodes.yaml is exactly what its header says."""
        with open(SAMPLE_INVENTORY, encoding='utf-8') as stream:
            shipped = stream.read()
        count, seed = re.match(r'.*--count (\d+) --seed (\d+)',
                               shipped).groups()
        _, generated = self.generate('nodes.yaml', count=int(count),
                                     seed=int(seed))
        self.assertEqual(shipped, generated)
