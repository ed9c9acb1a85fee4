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

"""Aggregate mirror: when each membership started waiting for Placement.

Revision ID: 0002_mirror_pending_since
Revises: 0001_initial
Create Date: 2026-12-01
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')

revision = '0002_mirror_pending_since'
down_revision = '0001_initial'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('mirror_hosts') as batch:
        batch.add_column(sa.Column('pending_since', DateTime,
                                   nullable=True))
    # Rows already waiting have waited at least since their last change.
    mirror_hosts = sa.table('mirror_hosts',
                            sa.column('state', sa.String),
                            sa.column('created_at', sa.DateTime),
                            sa.column('updated_at', sa.DateTime),
                            sa.column('pending_since', sa.DateTime))
    op.execute(mirror_hosts.update()
               .where(mirror_hosts.c.state == 'pending')
               .values(pending_since=sa.func.coalesce(
                   mirror_hosts.c.updated_at, mirror_hosts.c.created_at)))
