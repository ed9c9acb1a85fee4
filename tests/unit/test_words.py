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

"""One word per meaning (doc/source/contributor/glossary.rst), where a
machine can tell.

Checked, in the product's code (``reserveapi/``, its historic
migrations left out: they keep the words they were written with):

* "release" means ending a reservation. Every name in the code (a
  variable, argument, attribute, function, class or import) that holds
  "release" is one of ``RESERVATION_NAMES``, so a new one, such as
  ``release_tuple`` for a version or ``ironic_release`` for a claim to
  clear, fails here until someone decides it means ending a
  reservation. pbr's ``version_info.release_string`` is pbr's name.
* A string that is a single word or dotted name and holds "release" is
  a stored or published name kept on purpose (``STORED``: the
  ``ironic_releases`` table, the lease gauge's label, the ``services``
  column) or a name of the reservation sense (``RESERVATION_STRINGS``).
* The heartbeat module is ``reserveapi.common.heartbeat``; nothing
  imports or names ``reserveapi.common.lease``, which is too close to
  ``reserveapi.db.leases``.

Not checked: prose (docstrings, comments, messages), and "claim" in any
sense: no rule tells Ironic's claim from another use of the word.
"""

import ast
import pathlib
import re

from oslotest import base

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / 'reserveapi'
HISTORIC = PACKAGE / 'db' / 'migrations' / 'versions'

RESERVATION_NAMES = frozenset((
    'release', 'release_instance', 'release_orphans', 'release_record',
    'released', 'released_nodes_stale', 'reservation_released',
    'reservation_released_as_orphan', '_release', '_release_orphan',
    '_release_statement', '_released', '_released_as_orphan',
    '_ending_of_release', '_clear_released',
))
"""Names in the code that hold "release" and mean ending a reservation."""

LIBRARY_NAMES = frozenset((
    'prereleases',  # packaging's SpecifierSet.contains() argument
))

STORED = frozenset((
    'ironic_releases',  # the claims to clear: version 1.0.0's table
    'uniq_ironic_releases0node_uuid0instance_uuid',
    'ironic_releases_next_attempt_idx',
    'ironic_release',  # reserveapi_database_leases' label value
    'release',  # the services table's version column
))
"""Stored or published names that keep "release" for another meaning:
renaming them would take a schema change or break a dashboard."""

RESERVATION_STRINGS = frozenset((
    'release-orphans', 'released', 'reservation.release',
    'reservation.release_orphan',
))

RETIRED_MODULE = 'reserveapi.common.lease'

_WORD = re.compile(r'[\w.:-]+')


def _sources():
    for path in sorted(PACKAGE.rglob('*.py')):
        if HISTORIC not in path.parents:
            yield path


def _names(tree):
    """(line, name, node) for every name the code defines or uses."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.lineno, node.id, node
        elif isinstance(node, ast.Attribute):
            yield node.lineno, node.attr, node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                               ast.ClassDef)):
            yield node.lineno, node.name, node
        elif isinstance(node, ast.arg):
            yield node.lineno, node.arg, node
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.value.lineno, node.arg, node
        elif isinstance(node, ast.alias):
            for name in (node.name, node.asname):
                if name:
                    yield getattr(node, 'lineno', 0), name, node


def _is_pbr(node):
    """pbr's own ``version_info.release_string``."""
    return (isinstance(node, ast.Attribute)
            and node.attr == 'release_string'
            and isinstance(node.value, ast.Name)
            and node.value.id == 'version_info')


def _imported_modules(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from ('%s.%s' % (node.module, alias.name)
                        for alias in node.names)


class TestWords(base.BaseTestCase):

    def where(self, path, line):
        return '%s:%d' % (path.relative_to(PACKAGE.parent), line)

    def test_release_names_mean_ending_a_reservation(self):
        found = []
        for path in _sources():
            for line, name, node in _names(ast.parse(path.read_text())):
                if ('release' in name.lower()
                        and name not in RESERVATION_NAMES
                        and name not in LIBRARY_NAMES
                        and not _is_pbr(node)):
                    found.append('%s %s' % (self.where(path, line), name))
        self.assertEqual([], found, 'A name with "release" in it that '
                         'does not mean ending a reservation: say version '
                         '(a software version) or clear (a claim in '
                         'Ironic); or, if it does mean ending a '
                         'reservation, add it to RESERVATION_NAMES.')

    def test_release_strings_are_stored_or_of_reservations(self):
        found = []
        for path in _sources():
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Constant)
                        and isinstance(node.value, str)
                        and _WORD.fullmatch(node.value)
                        and 'release' in node.value.lower()
                        and node.value not in STORED
                        and node.value not in RESERVATION_STRINGS):
                    found.append('%s %r' % (self.where(path, node.lineno),
                                            node.value))
        self.assertEqual([], found)

    def test_the_heartbeat_module_is_not_called_lease(self):
        self.assertFalse((PACKAGE / 'common' / 'lease.py').exists())
        self.assertTrue((PACKAGE / 'common' / 'heartbeat.py').exists())
        found = []
        for path in _sources():
            tree = ast.parse(path.read_text())
            found.extend(
                '%s imports %s' % (path.relative_to(PACKAGE.parent), module)
                for module in _imported_modules(tree)
                if module == RETIRED_MODULE
                or module.startswith(RETIRED_MODULE + '.'))
            found.extend(
                '%s %r' % (self.where(path, node.lineno), node.value)
                for node in ast.walk(tree)
                if isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value.startswith(RETIRED_MODULE)
                and node.value[len(RETIRED_MODULE):][:1] in ('', '.', ':'))
        self.assertEqual([], found)

    def test_the_checks_see_a_retired_use(self):
        """The rules themselves: each kind of breach is found."""
        tree = ast.parse(
            'from reserveapi.common import lease\n'
            'x = version.release_tuple(m.oldest_release)\n'
            'class IronicRelease: pass\n'
            'y = version_info.release_string()\n')
        names = {name for _line, name, node in _names(tree)
                 if 'release' in name.lower()
                 and name not in RESERVATION_NAMES and not _is_pbr(node)}
        self.assertEqual({'release_tuple', 'oldest_release',
                          'IronicRelease'}, names)
        self.assertIn(RETIRED_MODULE, set(_imported_modules(tree)))
