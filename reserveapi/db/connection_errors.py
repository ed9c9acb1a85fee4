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

"""Failed connections that oslo.db does not recognize: PostgreSQL's
new wording, and a Galera node that is not part of the cluster.

oslo.db turns a failed connection into ``DBConnectionError`` by the
wording of the driver's message. Its PostgreSQL pattern is libpq's old
"could not connect to server"; libpq 14 and later say ``connection to
server at "HOST", port N failed: ...`` (refused, or the server starting
up or shutting down), so the driver's ``OperationalError`` escaped as it
was and the API answered 500 instead of 503. This module adds that
wording to oslo.db's own filters, as the fix upstream would; importing it
is enough (``reserveapi.db.base`` does).

A Galera node that has lost the cluster's primary component, or is still
joining it, refuses every query with ``1047 WSREP has not yet prepared
node for application use``: unavailable until it is back in the cluster,
like a server that does not answer, not a bug in the query (oslo.db
raises it as the driver's ``OperationalError``, a 500).
"""

from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import exc_filters
import sqlalchemy as sa


@exc_filters.filters('postgresql', sa.exc.OperationalError,
                     r'.*connection to server (?:at|on socket) .* failed')
def _libpq_connection_failed(operational_error, match, engine_name,
                             is_disconnect):
    raise db_exc.DBConnectionError(operational_error)


@exc_filters.filters('mysql', sa.exc.DBAPIError,
                     r'.*\b1047\b.*WSREP has not yet prepared node')
def _galera_node_not_ready(error, match, engine_name, is_disconnect):
    raise db_exc.DBConnectionError(error)
