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

"""Heartbeat rows of the running processes (``services``), and the
database's own list of the sessions on it (``sessions``)."""

import datetime

from oslo_utils import timeutils
import sqlalchemy as sa

from reserveapi.db import base
from reserveapi.db import models
from reserveapi.db import records
from reserveapi.db import sessions as db_sessions

FORGOTTEN_AFTER = datetime.timedelta(days=1)
"""Rows expired this long ago are deleted: nobody asks about them."""


@base.retrying()
def beat(holder, kind, host, pid, version, schema_head, started_at,
         lifetime):
    """Record that the process ``holder`` is alive for ``lifetime``
    seconds more.

    :raises: DatabaseUnavailable, DatabaseBusy
    """
    now = timeutils.utcnow()
    service = models.Service
    with base.writer() as session:
        renewed = session.execute(
            sa.update(service).where(service.holder == holder).values(
                seen_at=now, expires_at=now + datetime.timedelta(
                    seconds=lifetime)),
            execution_options={'synchronize_session': False}).rowcount
        if renewed:
            return
        session.execute(sa.delete(service).where(
            service.expires_at < now - FORGOTTEN_AFTER))
        session.execute(sa.insert(service).values(
            holder=holder, kind=kind, host=host, pid=pid, version=version,
            schema_head=schema_head, started_at=started_at, seen_at=now,
            expires_at=now + datetime.timedelta(seconds=lifetime)))


@base.retrying()
def remove(holder):
    """The process ``holder`` stopped.

    :raises: DatabaseUnavailable, DatabaseBusy
    """
    with base.writer() as session:
        session.execute(sa.delete(models.Service).where(
            models.Service.holder == holder))


def live():
    """Every process whose heartbeat has not expired, oldest first.

    :raises: DatabaseUnavailable, DatabaseBusy
    """
    service = models.Service
    with base.reader() as session:
        rows = session.execute(
            sa.select(service).where(
                service.expires_at >= timeutils.utcnow()).order_by(
                    service.started_at, service.id)).scalars()
        return [records.ServiceRecord(
            kind=row.kind, host=row.host, pid=row.pid, version=row.version,
            schema_head=row.schema_head, started_at=row.started_at,
            seen_at=row.seen_at) for row in rows]


_POSTGRESQL_SESSIONS = (
    "SELECT pid, application_name, host(client_addr), client_port "
    "FROM pg_stat_activity WHERE datname = current_database() "
    "AND backend_type = 'client backend' AND pid <> pg_backend_pid() "
    "AND usename = current_user")
_MYSQL_SESSIONS = (
    'SELECT ID, HOST FROM information_schema.PROCESSLIST '
    'WHERE DB = DATABASE() AND ID <> CONNECTION_ID() '
    "AND USER = SUBSTRING_INDEX(CURRENT_USER(), '@', 1)")
_MYSQL_ATTRIBUTES = (
    "SELECT PROCESSLIST_ID, ATTR_NAME, ATTR_VALUE "
    "FROM performance_schema.session_connect_attrs "
    "WHERE ATTR_NAME IN ('program_name', '_pid')")


def sessions():
    """The other sessions on this database of our database user (any
    process of ours logs in as it; a monitoring user's are not ours), and
    why the server cannot say the name each client gave (None when it
    can). This process's own sessions are left out; on SQLite there are
    none to list.

    MariaDB shows connection attributes only with ``performance_schema``
    on (off by default, and set at the server's start): without it the
    sessions are listed nameless (``name`` None).

    :raises: DatabaseUnavailable, DatabaseBusy
    """
    engine = base.get_engine()
    own = db_sessions.own(engine)
    with base.reader() as session:
        connection = session.connection()
        if connection.dialect.name == 'postgresql':
            found, unnamed = _postgresql_sessions(connection), None
        elif connection.dialect.name == 'mysql':
            found, unnamed = _mysql_sessions(connection)
        else:
            return [], None
    return [found_ for found_ in found if found_.id not in own], unnamed


def _postgresql_sessions(connection):
    found = []
    for pid, name, address, port in connection.exec_driver_sql(
            _POSTGRESQL_SESSIONS):
        if port == -1:
            client = 'local socket'
        elif address is None:
            client = None  # another role's, hidden from ours
        else:
            client = '%s:%s' % (address, port)
        found.append(records.SessionRecord(
            id=pid, label='backend pid %d' % pid, client=client, name=name))
    return found


def _mysql_sessions(connection):
    listed = connection.exec_driver_sql(_MYSQL_SESSIONS).all()
    schema_on, attributes_kept = connection.exec_driver_sql(
        'SELECT @@performance_schema, '
        '@@performance_schema_session_connect_attrs_size').one()
    if not int(schema_on) or not int(attributes_kept):
        return [records.SessionRecord(id=id_, label='connection %d' % id_,
                                      client=host, name=None)
                for id_, host in listed], (
            'performance_schema is off' if not int(schema_on) else
            'performance_schema_session_connect_attrs_size is 0')
    attributes = {}
    for id_, name, value in connection.exec_driver_sql(_MYSQL_ATTRIBUTES):
        attributes.setdefault(id_, {})[name] = value
    found = []
    for id_, host in listed:
        said = attributes.get(id_, {})
        pid = said.get('_pid')
        found.append(records.SessionRecord(
            id=id_, label='connection %d' % id_, client=host,
            name=said.get('program_name', ''),
            client_pid=int(pid) if pid and pid.isdigit() else None))
    return found, None
