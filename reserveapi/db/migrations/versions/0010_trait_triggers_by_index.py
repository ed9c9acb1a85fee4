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

"""PostgreSQL: the node_traits triggers look each trait's node up by its
key.

Each statement trigger on ``node_traits`` (migration 0007) joins the
statement's traits with their nodes. plpgsql plans that join once per
session, in a sync's first statement, when ``nodes`` is still small (an
initial sync, or any table before its first ANALYZE): a hash join over
the whole of ``nodes``, kept for every later statement while the table
grows. A million nodes written 10,000 at a time then scan it a hundred
times: 26 s of a 138 s initial sync. Planned as a nested loop over the
primary key, each statement costs what its own traits cost.

SQLite and MariaDB/MySQL have row triggers, which read the node by its
key already.

Revision ID: 0010_trait_triggers_by_index
Revises: 0009_children_without_fks
Create Date: 2027-01-27
"""

from alembic import op

revision = '0010_trait_triggers_by_index'
down_revision = '0009_children_without_fks'
branch_labels = None
depends_on = None

TRIGGER_FUNCTIONS = ('node_trait_summary_insert', 'node_trait_summary_update',
                     'node_trait_summary_delete')
# Within these functions only: a join by the key, whatever the planner
# believes of the table's size.
PLANNER_SETTINGS = ('enable_hashjoin', 'enable_mergejoin', 'enable_seqscan')


def upgrade():
    if op.get_bind().dialect.name != 'postgresql':
        return
    for function in TRIGGER_FUNCTIONS:
        op.execute('ALTER FUNCTION %s() %s' % (function, ' '.join(
            'SET %s = off' % setting for setting in PLANNER_SETTINGS)))
