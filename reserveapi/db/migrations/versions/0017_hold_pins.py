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

"""Pins: a hold's nodes, set aside at its start as reservations of its
own, and what a hold needs to carry out its end.

New nullable columns, and columns with a server default: a version that
does not know them reads and writes on as before. A reservation's
``hold_id`` says which hold it pins a node for, or fills with a boot.

It runs before 0015, a contract migration that has not been released.

Revision ID: 0017_hold_pins
Revises: 0016_holds
Create Date: 2026-12-07
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0017_hold_pins'
down_revision = '0016_holds'
branch_labels = None
depends_on = None
phase = 'expand'

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    # Plain ADD COLUMN on every backend: SQLite keeps the table, and
    # its triggers, as they are.
    for column in (
            sa.Column('at_end', sa.String(16), nullable=False,
                      server_default='keep'),
            sa.Column('reclaimed', sa.Integer, nullable=False,
                      server_default='0'),
            sa.Column('shortfall', sa.Integer, nullable=False,
                      server_default='0'),
            sa.Column('flavor_id', sa.String(255), nullable=True),
            sa.Column('warned_at', DateTime, nullable=True),
            sa.Column('finished_at', DateTime, nullable=True)):
        op.add_column('holds', column)
    op.create_index('holds_finished_idx', 'holds', ['finished_at'])
    op.add_column('reservations',
                  sa.Column('hold_id', sa.Integer, nullable=True))
    op.create_index('reservations_hold_state_idx', 'reservations',
                    ['hold_id', 'state'])
