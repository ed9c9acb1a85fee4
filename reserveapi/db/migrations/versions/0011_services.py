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

"""Services: a heartbeat row per running process and the release it runs.

The first online migration: release 1.0.0 never reads the table, so it
serves on unchanged beside it.

Revision ID: 0011_services
Revises: 0010_trait_triggers_by_index
Create Date: 2026-12-04
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0011_services'
down_revision = '0010_trait_triggers_by_index'
branch_labels = None
depends_on = None
phase = 'expand'

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    op.create_table(
        'services',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('holder', sa.String(255), nullable=False),
        sa.Column('kind', sa.String(32), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('pid', sa.Integer, nullable=False),
        sa.Column('release', sa.String(64), nullable=False),
        sa.Column('schema_head', sa.String(64), nullable=False),
        sa.Column('started_at', DateTime, nullable=False),
        sa.Column('seen_at', DateTime, nullable=False),
        sa.Column('expires_at', DateTime, nullable=False),
        sa.UniqueConstraint('holder', name='uniq_services0holder'),
        mysql_charset='utf8mb4', mysql_engine='InnoDB')
    op.create_index('services_expires_at_idx', 'services', ['expires_at'])
