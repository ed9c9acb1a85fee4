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

"""The database check of ``GET /healthcheck``.

An oslo.middleware healthcheck backend (entry point ``reserveapi_database``
in ``oslo.middleware.healthcheck``, on by default through ``[healthcheck]
backends``): the API is healthy only while its database answers a
``SELECT 1``, through the same engine facade as the requests.
"""

from oslo_db import exception as db_exc
from oslo_log import log
from oslo_middleware.healthcheck import pluginbase
import sqlalchemy as sa

from reserveapi.db import base

LOG = log.getLogger(__name__)


def ping():
    """Round-trip ``SELECT 1``; raises what the database raises."""
    with base.get_engine().connect() as connection:
        connection.execute(sa.text('SELECT 1'))


class DatabaseHealthcheck(pluginbase.HealthcheckBaseExtension):

    def healthcheck(self, server_port):
        try:
            ping()
        except (db_exc.DBError, sa.exc.DBAPIError) as exc:
            LOG.warning('Healthcheck: the database does not answer: %s', exc)
            return pluginbase.HealthcheckResult(
                available=False, reason='database unavailable',
                details=type(exc).__name__)
        return pluginbase.HealthcheckResult(available=True,
                                            reason='database OK')
