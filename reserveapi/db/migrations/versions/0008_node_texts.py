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

"""Nodes: their traits and capabilities as a text each, in the row.

``nodes.traits_text`` and ``nodes.capabilities_text`` hold what
``node_traits`` and ``node_capabilities`` hold for the node, as
``,item,item,``: a trait is hex of its UTF-8 name, a capability hex of
its key, ``:``, hex of its value (reserveapi/db/node_texts.py). The
candidate query tests them in the row it reads along the best-fit index
instead of a sub-query per trait and capability, and returns them with
the row. Existing nodes get theirs from the tables here; a node with
none has ``,``.

Nothing reads the two tables by trait or by capability value any more,
only by node: their indexes by trait and by key and value go, and with
them their cost on every sync that writes traits and capabilities.

Revision ID: 0008_node_texts
Revises: 0007_node_summary_counters
Create Date: 2027-01-15
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0008_node_texts'
down_revision = '0007_node_summary_counters'
branch_labels = None
depends_on = None

NodeText = sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql')

# Per dialect: hex of a text's UTF-8 bytes in lower case, the
# concatenation of texts, and of a group's texts.
_HEX = {'postgresql': "encode(convert_to({}, 'UTF8'), 'hex')",
        'mysql': 'LOWER(HEX({}))',
        'sqlite': 'lower(hex({}))'}
_CONCAT = {'postgresql': ' || '.join, 'sqlite': ' || '.join,
           'mysql': lambda parts: 'CONCAT(%s)' % ', '.join(parts)}
_AGGREGATE = {'postgresql': "string_agg({}, '')",
              'mysql': "GROUP_CONCAT({} SEPARATOR '')",
              'sqlite': "group_concat({}, '')"}


def _backfill(dialect):
    """Each node's texts from its rows in the two tables."""
    hexed, concat = _HEX[dialect].format, _CONCAT[dialect]
    key = '`key`' if dialect == 'mysql' else 'key'
    if dialect == 'mysql':
        # GROUP_CONCAT cuts at 1024 bytes by default; MEDIUMTEXT holds
        # 16 MiB.
        op.execute('SET SESSION group_concat_max_len = 16777216')
    for column, table, item in (
            ('traits_text', 'node_traits', concat([hexed('trait'), "','"])),
            ('capabilities_text', 'node_capabilities',
             concat([hexed(key), "':'", hexed('value'), "','"]))):
        items = '(SELECT %s FROM %s c WHERE c.node_id = nodes.id)' % (  # noqa: S608
            _AGGREGATE[dialect].format(item), table)
        op.execute('UPDATE nodes SET %s = %s '  # noqa: S608
                   'WHERE EXISTS (SELECT 1 FROM %s c '
                   'WHERE c.node_id = nodes.id)' % (
                       column, concat(["','", items]), table))


def upgrade():
    for name in ('traits_text', 'capabilities_text'):
        op.add_column('nodes', sa.Column(name, NodeText, nullable=False,
                                         server_default=','))
    _backfill(op.get_bind().dialect.name)
    op.drop_index('node_traits_trait_idx', table_name='node_traits')
    op.drop_index('node_capabilities_key_value_idx',
                  table_name='node_capabilities')
