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

"""Inventory: what the last file sync read and what it left.

``inventory_syncs.document_digest`` is the digest of the inventory
document the last sync applied, ``nodes_digest`` that of the node table
it left. A sync that finds both unchanged skips reading the document.

Revision ID: 0005_inventory_digests
Revises: 0004_ironic_inventory
Create Date: 2026-12-03
"""

from alembic import op
import sqlalchemy as sa

revision = '0005_inventory_digests'
down_revision = '0004_ironic_inventory'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('inventory_syncs') as batch:
        for name in ('document_digest', 'nodes_digest'):
            batch.add_column(sa.Column(name, sa.String(64), nullable=True))
