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

"""Inventory: when each source was last synced completely.

Revision ID: 0003_inventory_syncs
Revises: 0002_mirror_pending_since
Create Date: 2026-12-01
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')

revision = '0003_inventory_syncs'
down_revision = '0002_mirror_pending_since'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'inventory_syncs',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('source', sa.String(32), nullable=False),
        sa.Column('synced_at', DateTime, nullable=False),
        sa.Column('nodes', sa.Integer, nullable=False),
        sa.UniqueConstraint('source', name='uniq_inventory_syncs0source'),
        mysql_charset='utf8mb4', mysql_engine='InnoDB',
    )
