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

from alembic import context

from reserveapi.db import models

connection = context.config.attributes['connection']
# Each migration commits on its own: a lock one takes is held for that
# migration only, never until the last of a run is done (on PostgreSQL a
# run of several held every lock of all of them, and the serving
# version's queries queued behind the whole run).
context.configure(connection=connection,
                  target_metadata=models.Base.metadata,
                  render_as_batch=True,
                  transaction_per_migration=True)

with context.begin_transaction():
    context.run_migrations()
