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
Revises: 0014_lease_columns
Create Date: 2026-12-04
"""

from alembic import op

from reserveapi.db import migration

revision = '0015_claim_columns_dropped'
down_revision = '0014_lease_columns'
branch_labels = None
depends_on = None
phase = 'contract'
oldest_release = '1.1'


def upgrade():
    expand = migration.script('0014_lease_columns')
    dialect = op.get_bind().dialect.name
    for table in expand.TABLES:
        for name in expand.trigger_names(table)[dialect]:
            op.execute('DROP TRIGGER IF EXISTS %s%s' % (
                name, ' ON %s' % table if dialect == 'postgresql' else ''))
        with op.batch_alter_table(table) as batch:
            for _new, old in expand.PAIRS:
                batch.drop_column(old)
    if dialect == 'postgresql':
        op.execute('DROP FUNCTION IF EXISTS %s()' % expand.PG_FUNCTION)
