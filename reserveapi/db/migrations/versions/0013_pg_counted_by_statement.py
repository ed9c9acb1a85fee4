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

"""PostgreSQL: the summary's triggers stand aside for a bulk write that
counts its nodes by statement.

Migration 0007's statement triggers each join the statement's rows with
the whole of ``node_traits``: cheap for a sync's 10,000-row statements,
minutes for a refresh of a million flags written 1,000 at a time. Each
trigger function is replaced by the same function guarded by a
transaction-local setting (``reserveapi.db.counters.BULK_SETTING``):
unset, as on every connection of an older release, it counts as
before; set, by a bulk write of this release that counts its nodes
itself in the same transaction, it adds nothing. PostgreSQL replaces a
function in the migration's transaction, so no write meanwhile goes
uncounted. The planner settings migration 0010 gave the trait functions
are given again: replacing a function resets them.

MariaDB/MySQL (migration 0012) and SQLite are left as they are.

Revision ID: 0013_pg_counted_by_statement
Revises: 0012_bulk_counted_by_statement
Create Date: 2026-12-04
"""

from alembic import op

from reserveapi.db import migration

revision = '0013_pg_counted_by_statement'
down_revision = '0012_bulk_counted_by_statement'
branch_labels = None
depends_on = None
phase = 'expand'

BULK_SETTING = 'reserveapi.counted_by_statement'


def upgrade():
    if op.get_bind().dialect.name != 'postgresql':
        return
    by_index = migration.script('0010_trait_triggers_by_index')
    summary = migration.script('0007_node_summary_counters')
    for (name, _table, timing, _event, _level, statements,
         _watched) in summary._triggers('postgresql'):
        settings = ''
        if name in by_index.TRIGGER_FUNCTIONS:
            settings = ' ' + ' '.join('SET %s = off' % setting for setting
                                      in by_index.PLANNER_SETTINGS)
        op.execute(
            "CREATE OR REPLACE FUNCTION %s() RETURNS trigger LANGUAGE "
            "plpgsql%s AS $$ BEGIN IF coalesce(current_setting('%s', true), "
            "'') = '' THEN %s; END IF; RETURN %s; END $$"
            % (name, settings, BULK_SETTING, '; '.join(statements),
               'OLD' if timing == 'BEFORE' else 'NULL'))
