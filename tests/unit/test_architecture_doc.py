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

"""The architecture page's package map stays true to the tree: every
module it names exists, every package and top-level module is named,
and the packages it lists module by module list every module."""

import pathlib
import re

from oslotest import base

from tests.unit import test_layering

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / 'reserveapi'
PAGE = ROOT / 'doc' / 'source' / 'architecture.rst'

LISTED_IN_FULL = ('api', 'api/controllers', 'inventory', 'mirror',
                  'matcher', 'db', 'common', 'nova')
"""Packages the map lists module by module; the others it describes."""

_DB_LAYER = re.compile(r'^   (\d+)\. ([a-z_]+(?:, [a-z_]+)*)', re.MULTILINE)
"""A line of the page's numbered list of db layers."""

_ENTRY = re.compile(r'^    (?:  )?([a-z_]+(?:/|\.py))')
_MODULE = re.compile(r'(?:v1/)?\{[a-z_,]+\}\.py|(?:v1/)?[a-z_]+\.py')


def package_map():
    """``{package or module: [modules named]}`` from the map's block,
    packages as paths under reserveapi/ (``api/controllers``)."""
    text = PAGE.read_text()
    block = text[text.index('  reserveapi/\n'):]
    block = block[:block.index('\n\n')]
    entries, current, parent = {}, None, None
    for line in block.splitlines()[1:]:
        match = _ENTRY.match(line)
        if match:
            name = match.group(1)
            nested = line.startswith('      ')
            if name.endswith('/'):
                name = name.rstrip('/')
                if nested:
                    name = '%s/%s' % (parent, name)
                else:
                    parent = name
            current = entries.setdefault(name, [])
            line = line[match.end():]
        current.extend(_modules(line))
    return entries


def db_layers():
    """The page's db layers, in order: a tuple of module names each."""
    text = PAGE.read_text()
    block = text[text.index('Inside ``db/`` the modules are layered'):]
    block = block[:block.index('Every query is built')]
    layers = _DB_LAYER.findall(block)
    if [int(number) for number, _names in layers] != list(
            range(1, len(layers) + 1)):
        raise ValueError('The db layers are not numbered 1 to N.')
    return tuple(tuple(names.split(', ')) for _number, names in layers)


def _modules(text):
    found = []
    for module in _MODULE.findall(text):
        if '{' in module:
            # v1/{reservations,nodes}.py
            prefix, _, names = module.partition('{')
            found.extend(prefix + name + '.py'
                         for name in names[:-len('}.py')].split(','))
        else:
            found.append(module)
    return found


class TestArchitecturePage(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.map = package_map()

    def test_every_module_named_exists(self):
        missing = [
            '%s/%s' % (package, module)
            for package, modules in self.map.items()
            if not package.endswith('.py')
            for module in modules
            if not (PACKAGE / package / module).is_file()]
        self.assertEqual([], missing)

    def test_every_package_and_top_level_module_is_named(self):
        named = set(self.map) | {'cmd', 'wsgi'}
        present = {path.name for path in PACKAGE.iterdir()
                   if (path.is_dir() and (path / '__init__.py').exists())
                   or (path.suffix == '.py' and path.name != '__init__.py')}
        self.assertEqual([], sorted(present - named))

    def test_packages_listed_in_full_name_every_module(self):
        unnamed = []
        for package in LISTED_IN_FULL:
            named = set(self.map[package])
            for path in sorted((PACKAGE / package).rglob('*.py')):
                relative = path.relative_to(PACKAGE / package).as_posix()
                if (path.name == '__init__.py'
                        or relative.startswith('migrations/')
                        or relative.startswith('controllers/')):
                    continue
                if relative not in named:
                    unnamed.append('%s/%s' % (package, relative))
        self.assertEqual([], unnamed)

    def test_the_map_is_read(self):
        # The parser itself: a map read as empty would pass the others.
        self.assertIn('claims.py', self.map['inventory'])
        self.assertIn('v1/nodes.py', self.map['api/controllers'])
        self.assertGreater(len(self.map['db']), 10)

    def test_db_layers_are_the_layering_tests(self):
        self.assertEqual(test_layering.DB_LAYERS, db_layers())
