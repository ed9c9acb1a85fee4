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


"""Node traits and capabilities: no foreign key to nodes.

The sync writes a node's traits and capabilities only with the node, in
bulk (reserveapi/db/node_sync.py); a foreign key checks each row it
inserts, one lookup of the node per row, which on PostgreSQL cost as
much again as the insert itself (a million nodes: about four million
capabilities and two million traits per initial sync). Removing a node
removes its rows first, in the same transaction, as it already did for
traits (the summary's triggers count them out there). Placement keeps
its inventories and allocations without one too.

SQLite cannot drop a constraint: each table is rebuilt, and the
triggers the rebuild drops with it (the summary's, migration 0007) are
created again as they were.

Revision ID: 0009_children_without_fks
Revises: 0008_node_texts
Create Date: 2027-01-20
"""

from alembic import op
import sqlalchemy as sa

revision = '0009_children_without_fks'
down_revision = '0008_node_texts'
branch_labels = None
depends_on = None


# SQLite's keys have no name: batch mode names them by this convention
# to drop them.
_NAMING = {'fk': 'fk_%(table_name)s_%(column_0_name)s'}


def _rebuild_without_key(table):
    """SQLite: the table rebuilt without its key, its triggers kept."""
    triggers = op.get_bind().execute(sa.text(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' "
        "AND tbl_name = :table"), {'table': table}).scalars().all()
    # The triggers on nodes name the table, gone while it is rebuilt: the
    # legacy rename does not check them (nothing names the copy).
    op.execute('PRAGMA legacy_alter_table = ON')
    try:
        with op.batch_alter_table(table, naming_convention=_NAMING) as batch:
            batch.drop_constraint('fk_%s_node_id' % table,
                                  type_='foreignkey')
    finally:
        op.execute('PRAGMA legacy_alter_table = OFF')
    for statement in triggers:
        op.execute(statement)


def upgrade():
    bind = op.get_bind()
    for table in ('node_traits', 'node_capabilities'):
        if bind.dialect.name == 'sqlite':
            _rebuild_without_key(table)
        else:
            for key in sa.inspect(bind).get_foreign_keys(table):
                op.drop_constraint(key['name'], table, type_='foreignkey')
