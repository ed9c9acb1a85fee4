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

"""Ironic as the inventory: shards, stale nodes, shared sync state, and
claims left to clear in Ironic.

``nodes.shard`` is Ironic's partition key beside ``conductor_group``.
``nodes.stale_since`` marks a node released (or refused by Ironic) that
is not given out until a sync reads it again.

``inventory_syncs`` becomes the state every worker and API process
shares: the incremental watermark (Ironic's clock), the last full pass,
where the nodes came from, an outage in progress, and the lease that lets
one worker sync at a time. ``synced_at`` turns nullable: a row may exist
(its lease taken, an outage noted) before the first complete sync.

``ironic_releases`` holds claims in Ironic that an API call could not
clear (Ironic was down, or a claim's answer was lost): the worker clears
each once Ironic is back, if it is still ours and nothing was deployed.

Revision ID: 0004_ironic_inventory
Revises: 0003_inventory_syncs
Create Date: 2026-12-02
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')

revision = '0004_ironic_inventory'
down_revision = '0003_inventory_syncs'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('nodes') as batch:
        batch.add_column(sa.Column('shard', sa.String(255), nullable=True))
        batch.add_column(sa.Column('stale_since', DateTime, nullable=True))
        batch.create_index('nodes_stale_since_idx', ['stale_since'])
    with op.batch_alter_table('inventory_syncs') as batch:
        batch.alter_column('synced_at', existing_type=DateTime,
                           nullable=True)
        for name, column_type in (
                ('full_synced_at', DateTime), ('watermark', DateTime),
                ('location', sa.String(255)), ('outage_since', DateTime),
                ('last_error', sa.Text), ('claimed_by', sa.String(255)),
                ('claimed_until', DateTime)):
            batch.add_column(sa.Column(name, column_type, nullable=True))
    op.create_table(
        'ironic_releases',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('node_uuid', sa.String(36), nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('attempts', sa.Integer, nullable=False),
        sa.Column('next_attempt_at', DateTime, nullable=False),
        sa.Column('last_error', sa.Text, nullable=True),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime, nullable=True),
        sa.UniqueConstraint(
            'node_uuid', 'instance_uuid',
            name='uniq_ironic_releases0node_uuid0instance_uuid'),
        sa.Index('ironic_releases_next_attempt_idx', 'next_attempt_at'),
        mysql_charset='utf8mb4', mysql_engine='InnoDB',
    )
