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
backends``): the API is healthy only while its database answers, through
the same engine facade as the requests.

On a MariaDB Galera node, answering is not enough: a node that is a
donor, desynced (a backup holding it), joining, or cut off from the
cluster's primary component serves stale reads or none, and a load
balancer must send its traffic elsewhere. The node is healthy only if
it is Synced, in the Primary component and ready (``GALERA_HEALTHY``).
The check itself never waits for causal reads: a lagging node is
reported at once, not when it catches up.

A database that answers without the schema this code needs (never
built, or older: ``reserveapi-dbsync upgrade`` not run yet) is no
healthier: every request would answer 503 ``no_schema``.
"""

import functools

from oslo_db import exception as db_exc
from oslo_log import log
from oslo_middleware.healthcheck import pluginbase
import sqlalchemy as sa

from reserveapi.common import exception
from reserveapi.common import outages
from reserveapi.db import backends
from reserveapi.db import base
from reserveapi.db import migration

LOG = log.getLogger(__name__)

_OUTAGES = outages.OutageLog(LOG, '%s')
"""A load balancer polls every few seconds: an unhealthy database is
logged when it begins, at most once a minute while it lasts, and when
it ends."""
_SUBJECT = 'Healthcheck'

GALERA_HEALTHY = {
    'wsrep_local_state_comment': ('Synced', 'not Synced'),
    'wsrep_cluster_status': ('Primary', 'not in the Primary component'),
    'wsrep_ready': ('ON', 'not ready'),
}
"""Galera status variable -> (the healthy value, what any other means)."""


def _galera_problems(connection):
    """What is wrong with this Galera node: e.g. ``['not Synced
    (wsrep_local_state_comment = Donor/Desynced)']``, empty if nothing.
    """
    rows = connection.execute(sa.text(
        'SHOW GLOBAL STATUS WHERE Variable_name IN (%s)' % ', '.join(
            "'%s'" % name for name in GALERA_HEALTHY))).all()
    status = {name.lower(): value for name, value in rows}
    problems = []
    for name, (healthy, meaning) in GALERA_HEALTHY.items():
        value = status.get(name)
        if value != healthy:
            problems.append('%s (%s = %s)' % (meaning, name, value))
    return problems


def check():
    """Raise what the database raises, or ``DatabaseUnhealthy`` naming
    what is wrong with a Galera node; return a word on what was checked.
    """
    with base.get_engine().connect() as connection:
        if connection.dialect.name == 'mysql' and backends.is_galera(
                connection):
            # SHOW STATUS answers even on a node that refuses queries;
            # no causal wait for it, then the session's back as it was.
            connection.exec_driver_sql('SET SESSION wsrep_sync_wait = 0')
            try:
                problems = _galera_problems(connection)
            finally:
                connection.exec_driver_sql(
                    'SET SESSION wsrep_sync_wait = %d' % backends.sync_wait())
            if problems:
                raise exception.DatabaseUnhealthy(
                    'Galera node %s' % ', '.join(problems))
            return 'Galera node Synced and Primary'
        connection.execute(sa.text('SELECT 1'))
        return 'database OK'


def _check_schema():
    """Raise NoSchema unless the database has reached the revision this
    code needs (a newer one, of a newer version beside it, will do)."""
    revision = migration.current()
    if revision is None or revision in _older_revisions():
        raise exception.NoSchema(cause='the database is at revision %s, '
                                       'this code needs %s'
                                 % (revision, migration.needed()))


@functools.cache
def _older_revisions():
    """The revisions before the one this code needs: read once, since a
    load balancer polls every few seconds."""
    every = [m.revision for m in migration.migrations()]
    return frozenset(every[:every.index(migration.needed())])


def evaluate():
    """``(healthy, reason, details)``: what ``GET /healthcheck`` and
    ``reserveapi-status upgrade check`` both answer."""
    try:
        reason = check()
        _check_schema()
    except (db_exc.DBError, sa.exc.DBAPIError) as exc:
        cause = base.describe(exc) or type(exc).__name__
        failure = exception.DatabaseUnavailable(cause=cause,
                                                server=base.server())
        failure.__cause__ = exc
        answer = (False, 'database unavailable', cause)
    except (exception.DatabaseUnhealthy, exception.NoSchema) as exc:
        failure, answer = exc, (False, str(exc), str(exc))
    except exception.DatabaseUnavailable as exc:  # reading the revision
        failure, answer = exc, (False, 'database unavailable',
                                exc.cause or str(exc))
    else:
        _OUTAGES.succeeded(_SUBJECT)
        return True, reason, reason
    # Logged out of the except block: oslo.log would add the error the
    # line already describes.
    _OUTAGES.failed(_SUBJECT, failure)
    return answer


class DatabaseHealthcheck(pluginbase.HealthcheckBaseExtension):

    def healthcheck(self, server_port):
        healthy, reason, details = evaluate()
        return pluginbase.HealthcheckResult(available=healthy, reason=reason,
                                            details=details)
