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

"""Initial schema: nodes, reservations, aggregate mirror state.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-30
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')

revision = '0001_initial'
down_revision = None
branch_labels = None
depends_on = None

TABLE_ARGS = {'mysql_charset': 'utf8mb4', 'mysql_engine': 'InnoDB'}


def upgrade():
    """One helper per resource's tables, in dependency order."""
    _create_nodes()
    _create_reservations()
    _create_mirror()


def _create_nodes():
    op.create_table(
        'nodes',
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime, nullable=True),
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=True),
        sa.Column('resource_class', sa.String(255), nullable=True),
        sa.Column('memory_mb', sa.Integer, nullable=False),
        sa.Column('cpus', sa.Integer, nullable=False),
        sa.Column('local_gb', sa.Integer, nullable=False),
        sa.Column('cpu_arch', sa.String(64), nullable=True),
        sa.Column('provision_state', sa.String(32), nullable=True),
        sa.Column('power_state', sa.String(32), nullable=True),
        sa.Column('maintenance', sa.Boolean, nullable=False),
        sa.Column('retired', sa.Boolean, nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=True),
        sa.Column('conductor_group', sa.String(255), nullable=True),
        sa.Column('owner', sa.String(255), nullable=True),
        sa.Column('lessee', sa.String(255), nullable=True),
        sa.Column('vanished', sa.Boolean, nullable=False),
        sa.Column('synced_at', DateTime, nullable=True),
        sa.Column('schedulable', sa.Boolean, nullable=False),
        sa.Column('reserved', sa.Boolean, nullable=False),
        sa.Column('fingerprint', sa.String(64), nullable=True),
        sa.UniqueConstraint('uuid', name='uniq_nodes0uuid'),
        **TABLE_ARGS)
    op.create_index('ix_nodes_name', 'nodes', ['name'])
    op.create_index('nodes_fit_idx', 'nodes',
                    ['resource_class', 'schedulable', 'reserved', 'memory_mb',
                     'cpus', 'local_gb', 'id'])

    op.create_table(
        'node_traits',
        sa.Column('node_id', sa.Integer,
                  sa.ForeignKey('nodes.id', ondelete='CASCADE'),
                  primary_key=True),
        sa.Column('trait', sa.String(255), primary_key=True),
        **TABLE_ARGS)
    op.create_index('node_traits_trait_idx', 'node_traits', ['trait'])

    op.create_table(
        'node_capabilities',
        sa.Column('node_id', sa.Integer,
                  sa.ForeignKey('nodes.id', ondelete='CASCADE'),
                  primary_key=True),
        sa.Column('key', sa.String(255), primary_key=True),
        sa.Column('value', sa.String(255), nullable=False),
        **TABLE_ARGS)
    op.create_index('node_capabilities_key_value_idx', 'node_capabilities',
                    ['key', 'value'])


def _create_reservations():
    op.create_table(
        'reservations',
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime, nullable=True),
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=True),
        sa.Column('node_id', sa.Integer,
                  sa.ForeignKey('nodes.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('active_node_id', sa.Integer, nullable=True),
        sa.Column('active_instance_uuid', sa.String(36), nullable=True),
        sa.Column('expires_at', DateTime, nullable=True),
        sa.UniqueConstraint('uuid', name='uniq_reservations0uuid'),
        sa.UniqueConstraint('active_node_id',
                            name='uniq_reservations0active_node_id'),
        sa.UniqueConstraint('active_instance_uuid',
                            name='uniq_reservations0active_instance_uuid'),
        **TABLE_ARGS)
    op.create_index('reservations_host_idx', 'reservations', ['host'])
    op.create_index('reservations_instance_uuid_idx', 'reservations',
                    ['instance_uuid'])
    op.create_index('reservations_state_created_idx', 'reservations',
                    ['state', 'created_at'])


def _create_mirror():
    op.create_table(
        'mirror_aggregates',
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime, nullable=True),
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('deleted', sa.Boolean, nullable=False),
        sa.UniqueConstraint('uuid', name='uniq_mirror_aggregates0uuid'),
        **TABLE_ARGS)

    op.create_table(
        'mirror_hosts',
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime, nullable=True),
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('aggregate_id', sa.Integer,
                  sa.ForeignKey('mirror_aggregates.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('member', sa.Boolean, nullable=False),
        sa.Column('version', sa.Integer, nullable=False),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('attempts', sa.Integer, nullable=False),
        sa.Column('last_error', sa.Text, nullable=True),
        sa.Column('next_attempt_at', DateTime, nullable=True),
        sa.Column('claimed_by', sa.String(255), nullable=True),
        sa.Column('claimed_until', DateTime, nullable=True),
        sa.Column('synced_at', DateTime, nullable=True),
        sa.UniqueConstraint('aggregate_id', 'host',
                            name='uniq_mirror_hosts0aggregate_id0host'),
        **TABLE_ARGS)
    op.create_index('mirror_hosts_pending_idx', 'mirror_hosts',
                    ['state', 'next_attempt_at'])
