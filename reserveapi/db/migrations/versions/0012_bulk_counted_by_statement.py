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

"""MariaDB/MySQL: the summary's row triggers stand aside for a bulk
write that counts its nodes by statement.

Migration 0007's row triggers cost a bulk change five to twenty times
its own time. Each is replaced by the same trigger guarded by a session
variable (``reserveapi.db.counters.BULK_VARIABLE``): unset, as on every
connection of an older release, it counts row by row as before; set, by
a bulk write of this release that counts its nodes itself in the same
transaction, it adds nothing. MariaDB replaces each trigger in one
statement (``CREATE OR REPLACE``), so no write meanwhile goes uncounted;
MySQL has no such statement, and drops then creates it: a write between
the two is found and repaired by ``reserveapi-dbsync migrate``.

PostgreSQL's statement triggers and SQLite's are left as they are.

Revision ID: 0012_bulk_counted_by_statement
Revises: 0011_services
Create Date: 2026-12-04
"""

from alembic import op

from reserveapi.db import migration

revision = '0012_bulk_counted_by_statement'
down_revision = '0011_services'
branch_labels = None
depends_on = None
phase = 'expand'
privileges = ('TRIGGER',)

BULK_VARIABLE = '@reserveapi_counted_by_statement'


def _summary_triggers():
    """Migration 0007's triggers, as it declares them for MariaDB/MySQL."""
    return migration.script('0007_node_summary_counters')._triggers('mysql')


def upgrade():
    bind = op.get_bind()
    if bind.dialect.name != 'mysql':
        return
    mariadb = getattr(bind.dialect, 'is_mariadb', True)
    for (name, table, timing, event, _level, statements,
         watched) in _summary_triggers():
        body = '; '.join(statements) + ';'
        if watched:
            body = 'IF %s THEN %s END IF;' % (' OR '.join(
                'NOT (OLD.%s <=> NEW.%s)' % (c, c) for c in watched), body)
        body = 'IF %s IS NULL THEN %s END IF;' % (BULK_VARIABLE, body)
        if not mariadb:
            op.execute('DROP TRIGGER IF EXISTS %s' % name)
        op.execute('CREATE %sTRIGGER %s %s %s ON %s FOR EACH ROW BEGIN %s '
                   'END' % ('OR REPLACE ' if mariadb else '', name, timing,
                            event, table, body))
