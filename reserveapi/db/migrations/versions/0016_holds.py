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

"""Holds: a project's promise of nodes over a window of time, and the
guard row their writers serialize on.

New tables only, which no earlier version reads. The guard's row is not
inserted here: the first writer inserts it, and no row reads as version
0 (db/holds.py).

It runs before 0015, a contract migration: expand runs a version's
expand migrations while the old version still serves, and stops at its
first contract one. 0015 has not been released.

Revision ID: 0016_holds
Revises: 0014_lease_columns
Create Date: 2026-12-05
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0016_holds'
down_revision = '0014_lease_columns'
branch_labels = None
depends_on = None
phase = 'expand'

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    op.create_table(
        'holds',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('amount', sa.Integer, nullable=False),
        sa.Column('request_spec', sa.Text, nullable=False),
        sa.Column('resource_class', sa.String(255), nullable=True),
        sa.Column('shard', sa.String(255), nullable=True),
        sa.Column('conductor_group', sa.String(255), nullable=True),
        sa.Column('start_at', DateTime, nullable=False),
        sa.Column('end_at', DateTime, nullable=False),
        sa.Column('padding', sa.Integer, nullable=False),
        sa.Column('busy_from', DateTime, nullable=False),
        sa.Column('busy_until', DateTime, nullable=False),
        sa.Column('cancelled_at', DateTime, nullable=True),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime, nullable=True),
        sa.UniqueConstraint('uuid', name='uniq_holds0uuid'),
        mysql_charset='utf8mb4', mysql_engine='InnoDB')
    op.create_index('holds_busy_until_idx', 'holds', ['busy_until'])
    op.create_index('holds_project_start_idx', 'holds',
                    ['project_id', 'start_at'])
    op.create_table(
        'hold_guard',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=False),
        sa.Column('version', sa.Integer, nullable=False),
        mysql_charset='utf8mb4', mysql_engine='InnoDB')
