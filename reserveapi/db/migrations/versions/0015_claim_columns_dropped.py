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

"""The leases' old column names go: the triggers of 0014 and the
``claimed_by`` and ``claimed_until`` columns, which only release 1.0.0
reads.

Revision ID: 0015_claim_columns_dropped
Revises: 0017_hold_pins
Create Date: 2026-12-04
"""

from alembic import op

revision = '0015_claim_columns_dropped'
down_revision = '0017_hold_pins'
branch_labels = None
depends_on = None
phase = 'contract'
oldest_version = '1.1'

# What 0014 made, written out: a migration reads no other.
TABLES = ('inventory_syncs', 'ironic_releases', 'mirror_hosts')
OLD_COLUMNS = ('claimed_by', 'claimed_until')
# Each table's triggers, by dialect ({table} for its name).
TRIGGERS = {'postgresql': ('{table}_lease_columns',),
            'mysql': ('{table}_lease_insert', '{table}_lease_update'),
            'sqlite': ('{table}_lease_insert', '{table}_lease_update')}
PG_FUNCTION = 'reserveapi_lease_columns'


def upgrade():
    dialect = op.get_bind().dialect.name
    for table in TABLES:
        for name in TRIGGERS[dialect]:
            op.execute('DROP TRIGGER IF EXISTS %s%s' % (
                name.format(table=table),
                ' ON %s' % table if dialect == 'postgresql' else ''))
        with op.batch_alter_table(table) as batch:
            for old in OLD_COLUMNS:
                batch.drop_column(old)
    if dialect == 'postgresql':
        op.execute('DROP FUNCTION IF EXISTS %s()' % PG_FUNCTION)
