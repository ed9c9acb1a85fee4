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

"""Every migration after release 1.0.0's schema keeps its phase's
promise: an expand step never drops, renames or tightens anything (the
release before still reads and writes the schema), a contract step only
removes. Each migration runs here against a recording ``op`` for every
dialect, and what it asked for is judged.
"""

import re
import types
from unittest import mock

from oslotest import base
import sqlalchemy as sa

from reserveapi.db import migration

DIALECTS = ('sqlite', 'postgresql', 'mysql')

# Operations that remove, rename or tighten: never in an expand step.
NOT_IN_EXPAND = {'drop_table', 'drop_column', 'drop_index',
                 'drop_constraint', 'rename_table', 'create_unique_constraint',
                 'create_foreign_key', 'create_check_constraint',
                 'create_primary_key', 'bulk_insert'}
# Operations that add: never in a contract step.
NOT_IN_CONTRACT = {'create_table', 'add_column', 'create_index',
                   'create_unique_constraint', 'create_foreign_key',
                   'create_check_constraint', 'bulk_insert'}
# Raw SQL that removes, renames or tightens. Replacing a trigger or its
# function (DROP TRIGGER / FUNCTION, then CREATE) keeps the schema's
# promises: triggers are how an expand keeps two representations in step.
_DESTRUCTIVE_SQL = re.compile(
    r'\b(DROP\s+(?!TRIGGER\b|FUNCTION\b)\w+|RENAME|SET\s+NOT\s+NULL|'
    r'TRUNCATE|DELETE\s+FROM|ADD\s+(UNIQUE|CONSTRAINT|PRIMARY|FOREIGN))\b',
    re.IGNORECASE)


def _operations(module, dialect):
    """(operation name, args, kwargs) of each call ``module.upgrade()``
    makes on ``op``, batch operations included."""
    recorder = mock.MagicMock(name='op')
    recorder.get_bind.return_value.dialect.name = dialect
    with mock.patch.object(module, 'op', recorder):
        module.upgrade()
    for call in recorder.mock_calls:
        name, args, kwargs = call
        yield name.rpartition('.')[2], args, kwargs


def _violations(phase, operations):
    for name, args, kwargs in operations:
        if phase == migration.EXPAND:
            if name in NOT_IN_EXPAND:
                yield name
            elif name == 'alter_column' and (
                    kwargs.get('nullable') is False
                    or {'new_column_name', 'type_'} & set(kwargs)):
                yield 'alter_column %s' % sorted(kwargs)
            elif name == 'add_column':
                column = next((arg for arg in args
                               if isinstance(arg, sa.Column)), None)
                if (column is not None and not column.nullable
                        and column.server_default is None):
                    yield ('add_column %s NOT NULL without a server '
                           'default' % column.name)
            elif name == 'execute' and args and _DESTRUCTIVE_SQL.search(
                    str(args[0])):
                yield 'execute %r' % str(args[0])[:80]
        elif phase == migration.CONTRACT and name in NOT_IN_CONTRACT:
            yield name


def _check(module, phase):
    return sorted({'%s (%s)' % (violation, dialect)
                   for dialect in DIALECTS
                   for violation in _violations(
                       phase, list(_operations(module, dialect)))})


def _scripts_after_baseline():
    scripts = list(reversed(list(migration._scripts().walk_revisions())))
    index = [script.revision for script in scripts].index(migration.BASELINE)
    return scripts[:index + 1], scripts[index + 1:]


class TestMigrationPhases(base.BaseTestCase):

    def test_baseline_migrations_are_offline(self):
        offline, _online = _scripts_after_baseline()
        self.assertEqual(10, len(offline))
        self.assertEqual({migration.OFFLINE},
                         {getattr(script.module, 'phase', migration.OFFLINE)
                          for script in offline})

    def test_every_later_migration_declares_its_phase(self):
        _offline, online = _scripts_after_baseline()
        self.assertTrue(online)
        for script in online:
            phase = getattr(script.module, 'phase', None)
            self.assertIn(phase, (migration.EXPAND, migration.CONTRACT),
                          script.revision)
            if phase == migration.CONTRACT:
                self.assertTrue(getattr(script.module, 'oldest_version',
                                        None), script.revision)

    def test_every_later_migration_keeps_its_phase(self):
        _offline, online = _scripts_after_baseline()
        judged = {script.revision: _check(script.module,
                                          script.module.phase)
                  for script in online}
        self.assertEqual({revision: [] for revision in judged}, judged)

    def test_a_destructive_expand_is_caught(self):
        """The judge itself: each kind of breach is seen."""

        def breach(*calls):
            def upgrade():
                for call in calls:
                    call(module.op)
            module = types.SimpleNamespace(op=None, upgrade=upgrade)
            return _check(module, migration.EXPAND)

        self.assertEqual([], breach(lambda op: op.create_table(
            't', sa.Column('a', sa.Integer, nullable=True))))
        self.assertEqual(['drop_column (mysql)', 'drop_column (postgresql)',
                          'drop_column (sqlite)'],
                         breach(lambda op: op.drop_column('nodes', 'name')))
        self.assertTrue(breach(lambda op: op.alter_column(
            'nodes', 'name', nullable=False)))
        self.assertTrue(breach(lambda op: op.alter_column(
            'nodes', 'name', new_column_name='title')))
        self.assertTrue(breach(lambda op: op.add_column(
            'nodes', sa.Column('x', sa.Integer, nullable=False))))
        self.assertEqual([], breach(lambda op: op.add_column(
            'nodes', sa.Column('x', sa.Integer, nullable=False,
                               server_default='0'))))
        self.assertTrue(breach(lambda op: op.execute(
            'ALTER TABLE nodes DROP COLUMN name')))
        self.assertTrue(breach(lambda op: op.execute(
            'ALTER TABLE nodes ALTER COLUMN name SET NOT NULL')))
        self.assertEqual([], breach(lambda op: op.execute(
            'DROP TRIGGER IF EXISTS t')))

    def test_an_additive_contract_is_caught(self):
        def upgrade():
            module.op.add_column('nodes', sa.Column('x', sa.Integer))
            module.op.drop_index('i')
        module = types.SimpleNamespace(op=None, upgrade=upgrade)
        self.assertEqual(['add_column (mysql)', 'add_column (postgresql)',
                          'add_column (sqlite)'],
                         _check(module, migration.CONTRACT))

    def test_the_code_needs_its_migrations_but_a_final_contract(self):
        def chain(*phases):
            return [migration.Migration('%04d' % index, phase, '')
                    for index, phase in enumerate(phases)]

        cases = [((migration.EXPAND,), '0000'),
                 ((migration.EXPAND, migration.CONTRACT), '0000'),
                 ((migration.EXPAND, migration.CONTRACT, migration.CONTRACT),
                  '0000'),
                 ((migration.EXPAND, migration.CONTRACT, migration.EXPAND),
                  '0002')]
        for phases, needed in cases:
            with mock.patch.object(migration, 'migrations',
                                   return_value=chain(*phases)):
                self.assertEqual(needed, migration.needed(), phases)
