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

"""The summary triggers a database migrated to head has are the ones
reserveapi/db/summary.py declares today, on every backend.

Migrations carry the triggers they install as text, so that they install
the same whenever they run; the declaration is what the recount and the
candidate query read. This is what fails when the declaration changes
and no migration installs what it now generates.
"""

import re

import sqlalchemy as sa

from reserveapi.db import summary
from tests.functional import base


def _sqlite(connection):
    return {(name, table): (sql, None) for name, table, sql in connection.
            execute(sa.text("SELECT name, tbl_name, sql FROM sqlite_master "
                            "WHERE type = 'trigger'"))}


def _mysql(connection):
    # This test's database only: others run beside it.
    return {(name, table): (
        'CREATE TRIGGER %s %s %s ON %s FOR EACH %s %s' % (
            name, timing, event, table, orientation, statement), None)
        for name, timing, event, table, orientation, statement in
        connection.execute(sa.text(
            'SELECT TRIGGER_NAME, ACTION_TIMING, EVENT_MANIPULATION, '
            'EVENT_OBJECT_TABLE, ACTION_ORIENTATION, ACTION_STATEMENT '
            'FROM information_schema.TRIGGERS '
            'WHERE TRIGGER_SCHEMA = DATABASE()'))}


def _postgresql(connection):
    """Each trigger as pg_get_triggerdef writes it (its table unqualified)
    and its function as summary writes one: PostgreSQL keeps the body
    as given."""
    found = {}
    for (name, table, schema, definition, function, returns, language,
         config, source) in connection.execute(sa.text(
            'SELECT t.tgname, r.relname, n.nspname, '
            'pg_get_triggerdef(t.oid), p.proname, '
            'p.prorettype::regtype::text, l.lanname, p.proconfig, p.prosrc '
            'FROM pg_trigger t JOIN pg_class r ON r.oid = t.tgrelid '
            'JOIN pg_namespace n ON n.oid = r.relnamespace '
            'JOIN pg_proc p ON p.oid = t.tgfoid '
            'JOIN pg_language l ON l.oid = p.prolang '
            'WHERE NOT t.tgisinternal AND n.nspname = current_schema()')):
        settings = ''.join(' SET %s = %s' % tuple(setting.split('=', 1))
                           for setting in config or ())
        found[name, table] = (
            definition.replace(' ON %s.' % schema, ' ON ', 1),
            'CREATE OR REPLACE FUNCTION %s() RETURNS %s LANGUAGE %s%s AS '
            '$$%s$$' % (function, returns, language, settings, source))
    return found


_INSTALLED = {'sqlite': _sqlite, 'mysql': _mysql,
              'postgresql': _postgresql}


def _normal(sql):
    return sql and re.sub(r'\s+', ' ', sql).strip()


class TestSummaryTriggers(base.DBTestCase):

    scenarios = base.EVERY_BACKEND

    def test_installed_triggers_are_the_declared_ones(self):
        dialect = self.engine.dialect.name
        declared = {trigger.name: (_normal(trigger.create),
                                   _normal(trigger.function))
                    for trigger in summary.triggers(dialect)}
        tables = {trigger.table for trigger in summary.triggers(dialect)}
        with self.engine.connect() as connection:
            installed = {name: (_normal(create), _normal(function))
                         for (name, table), (create, function)
                         in _INSTALLED[dialect](connection).items()
                         if table in tables}
        differ = sorted(name for name in set(declared) | set(installed)
                        if declared.get(name) != installed.get(name))
        self.assertEqual(
            [], differ, 'On %s, the installed summary triggers %s differ '
            'from what reserveapi/db/summary.py declares: write a migration '
            'that installs the new triggers (summary.triggers(dialect) '
            'for each dialect, pasted in as text).\n%s' % (
                dialect, ', '.join(differ), '\n'.join(
                    '%s\n  installed: %s\n  declared:  %s' % (
                        name, installed.get(name), declared.get(name))
                    for name in differ)))
