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

"""tools/bench reads the product through its public names only, and
holds no copy of its SQL.

A private name may change in any commit without its callers outside the
package being looked for, and a copy of a query drifts from the one the
product runs: either way the bench would go on measuring something the
product no longer does.
"""

import ast
import pathlib

import testtools

BENCH = pathlib.Path(__file__).resolve().parents[2] / 'tools' / 'bench'
PRODUCT = ('reserveapi', 'reserveapi_testing')


def _private(name):
    return name.startswith('_') and not name.startswith('__')


def _of_product(module):
    return module.partition('.')[0] in PRODUCT


def _root(node):
    """The name an expression such as ``a.b().c[0]`` starts from."""
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def private_uses(source):
    """``(line, text)`` of each private product name ``source`` imports
    or reads: through an import, or as an attribute of something a
    product import bound."""
    tree = ast.parse(source)
    bound, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _of_product(alias.name):
                    bound.add(alias.asname or alias.name.partition('.')[0])
                    if any(_private(part) for part in alias.name.split('.')):
                        found.append((node.lineno, alias.name))
        elif (isinstance(node, ast.ImportFrom) and node.module
              and _of_product(node.module)):
            for alias in node.names:
                bound.add(alias.asname or alias.name)
                path = node.module.split('.') + [alias.name]
                if any(_private(part) for part in path):
                    found.append((node.lineno, '.'.join(path)))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr)
                and _root(node) in bound):
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


class BenchNamesTestCase(testtools.TestCase):

    def test_only_public_product_names(self):
        found = ['%s:%d: %s' % (path.name, line, text)
                 for path in sorted(BENCH.glob('*.py'))
                 for line, text in private_uses(path.read_text(
                     encoding='utf-8'))]
        self.assertEqual([], found)

    def test_a_private_name_is_found(self):
        source = ('from reserveapi import reservations\n'
                  'from reserveapi.db import matching as m\n'
                  'import reserveapi.db.nodes\n'
                  'from reserveapi.db.matching import _bound\n'
                  'from tools.bench import benchdb\n'
                  'reservations._prefilter(None, None)\n'
                  'm.NodeFilter()._fields\n'
                  'reserveapi.db.nodes._flags()\n'
                  'reservations.reserve.__name__\n'
                  'benchdb._arguments({})\n')
        self.assertEqual([
            (4, 'reserveapi.db.matching._bound'),
            (6, 'reservations._prefilter'),
            (7, 'm.NodeFilter()._fields'),
            (8, 'reserveapi.db.nodes._flags')],
            private_uses(source))

    def test_no_copy_of_the_eligibility_rule(self):
        # What makes a node free is the product's (db/matching.py): the
        # bench replays the statements the API sends instead.
        copies = [path.name for path in sorted(BENCH.glob('*.py'))
                  if 'provision_state =' in path.read_text(encoding='utf-8')]
        self.assertEqual([], copies)
