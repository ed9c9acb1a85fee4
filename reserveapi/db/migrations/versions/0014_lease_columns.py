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

"""Leases get their own names: ``leased_by`` and ``leased_until`` beside
``claimed_by`` and ``claimed_until`` in every leased table, kept equal
by triggers.

"Claim" is Ironic's ``instance_uuid`` on a node; a row held by one
process until a time is a lease (``reserveapi.db.leases``). This release
reads and writes only the new columns, a release before it only the
old ones; until ``contract`` drops the old pair (0015), a trigger on
each table copies whichever pair a statement wrote into the other, so
that the two releases still exclude each other from a lease. Rows are
copied once the triggers are in place, so a write made between adding
the columns and creating the triggers is not lost.

Revision ID: 0014_lease_columns
Revises: 0013_pg_counted_by_statement
Create Date: 2026-12-04
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0014_lease_columns'
down_revision = '0013_pg_counted_by_statement'
branch_labels = None
depends_on = None
phase = 'expand'
privileges = ('TRIGGER',)

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')

TABLES = ('inventory_syncs', 'ironic_releases', 'mirror_hosts')
# (new column, old column): each pair is kept equal.
PAIRS = (('leased_by', 'claimed_by'), ('leased_until', 'claimed_until'))
PG_FUNCTION = 'reserveapi_lease_columns'


def trigger_names(table):
    """The triggers this migration creates on ``table``, by dialect."""
    return {'postgresql': ['%s_lease_columns' % table],
            'mysql': ['%s_lease_insert' % table, '%s_lease_update' % table],
            'sqlite': ['%s_lease_insert' % table, '%s_lease_update' % table]}


# How PL/pgSQL and MariaDB's SQL each write a trigger's statements.
_SPELLING = {
    'postgresql': {'set': 'NEW.%s := %s;', 'elsif': 'ELSIF',
                   'changed': 'NEW.{0} IS DISTINCT FROM OLD.{0}'},
    'mysql': {'set': 'SET NEW.%s = %s;', 'elsif': 'ELSEIF',
              'changed': 'NOT (NEW.{0} <=> OLD.{0})'},
}


def _bodies(dialect):
    """The statements of a row trigger before an insert and before an
    update that make each pair equal: an insert keeps the pair it was
    given, an update copies the column it changed."""
    spelling = _SPELLING[dialect]
    set_, changed = spelling['set'], spelling['changed']
    inserted = ' '.join(
        set_ % (new, 'COALESCE(NEW.%s, NEW.%s)' % (new, old)) + ' '
        + set_ % (old, 'NEW.' + new) for new, old in PAIRS)
    updated = ' '.join(
        'IF %s THEN %s %s %s THEN %s END IF;' % (
            changed.format(new), set_ % (old, 'NEW.' + new),
            spelling['elsif'], changed.format(old),
            set_ % (new, 'NEW.' + old)) for new, old in PAIRS)
    return inserted, updated


def _postgresql():
    inserted, updated = _bodies('postgresql')
    op.execute(
        'CREATE OR REPLACE FUNCTION %s() RETURNS trigger AS $$ BEGIN '
        "IF TG_OP = 'INSERT' THEN %s ELSE %s END IF; RETURN NEW; END "
        '$$ LANGUAGE plpgsql' % (PG_FUNCTION, inserted, updated))
    for table in TABLES:
        (name,) = trigger_names(table)['postgresql']
        op.execute('DROP TRIGGER IF EXISTS %s ON %s' % (name, table))
        op.execute('CREATE TRIGGER %s BEFORE INSERT OR UPDATE ON %s '
                   'FOR EACH ROW EXECUTE FUNCTION %s()'
                   % (name, table, PG_FUNCTION))


def _mysql():
    bodies = _bodies('mysql')
    for table in TABLES:
        for name, event, body in zip(trigger_names(table)['mysql'],
                                     ('INSERT', 'UPDATE'), bodies,
                                     strict=True):
            op.execute('DROP TRIGGER IF EXISTS %s' % name)
            op.execute('CREATE TRIGGER %s BEFORE %s ON %s FOR EACH ROW '
                       'BEGIN %s END' % (name, event, table, body))


def _sqlite():
    # SQLite's triggers cannot change NEW: they write the row again,
    # once, after the statement's own write (a trigger does not fire
    # itself again, and its WHEN is false once the pairs are equal).
    unequal = ' OR '.join('NEW.%s IS NOT NEW.%s' % pair for pair in PAIRS)
    inserted = ', '.join(
        '%(new)s = COALESCE(NEW.%(new)s, NEW.%(old)s), '
        '%(old)s = COALESCE(NEW.%(new)s, NEW.%(old)s)'
        % {'new': new, 'old': old} for new, old in PAIRS)
    updated = ', '.join(
        '%(column)s = CASE WHEN NEW.%(new)s IS NOT OLD.%(new)s '
        'THEN NEW.%(new)s ELSE NEW.%(old)s END'
        % {'column': column, 'new': new, 'old': old}
        for new, old in PAIRS for column in (new, old))
    for table in TABLES:
        insert, update = trigger_names(table)['sqlite']
        for name, event, values in ((insert, 'INSERT', inserted),
                                    (update, 'UPDATE', updated)):
            op.execute('DROP TRIGGER IF EXISTS %s' % name)
            op.execute('CREATE TRIGGER %s AFTER %s ON %s FOR EACH ROW '  # noqa: S608
                       'WHEN %s BEGIN UPDATE %s SET %s WHERE id = NEW.id; '
                       'END' % (name, event, table, unequal, table, values))


def upgrade():
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column('leased_by', sa.String(255),
                                       nullable=True))
            batch.add_column(sa.Column('leased_until', DateTime,
                                       nullable=True))
    {'postgresql': _postgresql, 'mysql': _mysql,
     'sqlite': _sqlite}[op.get_bind().dialect.name]()
    for table in TABLES:
        op.execute('UPDATE %s SET leased_by = claimed_by, '  # noqa: S608
                   'leased_until = claimed_until WHERE claimed_by IS NOT '
                   'NULL OR claimed_until IS NOT NULL' % table)
