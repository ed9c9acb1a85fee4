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

"""Claims in Ironic: one clearer at a time, and requests counted.

``ironic_releases`` rows become leases: ``claimed_by`` and
``claimed_until`` name the one process clearing the claim (an API
process clearing inline, or a worker), so that two processes never read
and clear the same node at once. ``generation`` counts the requests to
clear that pair: a request made while a clear is under way makes that
clear's finish leave the row for another pass instead of deleting it.

Revision ID: 0006_ironic_release_leases
Revises: 0005_inventory_digests
Create Date: 2026-12-04
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')

revision = '0006_ironic_release_leases'
down_revision = '0005_inventory_digests'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('ironic_releases') as batch:
        batch.add_column(sa.Column('claimed_by', sa.String(255),
                                   nullable=True))
        batch.add_column(sa.Column('claimed_until', DateTime,
                                   nullable=True))
        batch.add_column(sa.Column('generation', sa.Integer, nullable=False,
                                   server_default='0'))
