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

"""Every connection says which process of ours made it, so that the
database's own list of sessions shows each running version, whether or
not it records a heartbeat (version 1.0.0 records none, and names no
connection either).

The name is ``reserveapi:KIND:PID:VERSION:HOST``, for instance
``reserveapi:worker:4711:1.1.0:ctl-1``: PostgreSQL's
``application_name`` (``pg_stat_activity``), which keeps 63 bytes, so
the host comes last and is what gets cut; on MariaDB/MySQL the
``program_name`` connection attribute
(``performance_schema.session_connect_attrs``). It replaces any
``application_name`` the ``[database]`` options set. SQLite has no
sessions to name.

This process's own connections are remembered by the server's id for
them (PostgreSQL's backend pid, MariaDB's connection id): a command
listing the sessions leaves its own out.
"""

import dataclasses
import os
import socket
import sys
import threading
import weakref

import sqlalchemy as sa

from reserveapi import version

PREFIX = 'reserveapi'
MAX_BYTES = 63
"""PostgreSQL keeps this much of an application_name."""

_NAME_PARAMETER = {'psycopg2': 'application_name',
                   'pymysql': 'program_name'}
_SERVER_ID = {'psycopg2': lambda connection: connection.get_backend_pid(),
              'pymysql': lambda connection: connection.thread_id()}

_SESSION = 'reserveapi.session'
"""Key of a connection's ``info``: (our pid, the server's id for it)."""

_kind = None
_own = weakref.WeakKeyDictionary()
_own_lock = threading.Lock()


@dataclasses.dataclass(frozen=True)
class ProcessName:
    """What a connection's name says of the process that made it; the
    host may be cut short."""

    kind: str
    pid: int
    version: str
    host: str


def set_kind(kind):
    """This process is an ``api`` or a ``worker``, whatever program runs
    it (gunicorn, uWSGI...): the connections made from now on say so."""
    global _kind
    _kind = kind


def _process_kind():
    """``worker`` for reserveapi-worker, and so on; else the program."""
    if _kind:
        return _kind
    program = os.path.basename(sys.argv[0]) if sys.argv else ''
    return program.removeprefix(PREFIX + '-').replace(':', '') or 'python'


def name():
    """This process's name for its connections, at most MAX_BYTES."""
    text = ':'.join((PREFIX, _process_kind(), str(os.getpid()),
                     version.version_string(), socket.gethostname()))
    return text.encode('utf-8')[:MAX_BYTES].decode('utf-8', 'ignore')


def parse(text):
    """The ProcessName in a connection's name, or None if not ours."""
    parts = (text or '').split(':', 4)
    if len(parts) != 5 or parts[0] != PREFIX or not parts[2].isdigit():
        return None
    try:
        version.version_tuple(parts[3])
    except ValueError:
        return None
    return ProcessName(kind=parts[1], pid=int(parts[2]), version=parts[3],
                       host=parts[4])


def name_connections(engine):
    """An enginefacade ``on_engine_create`` hook: each new connection is
    named, and remembered as this process's."""
    driver = engine.dialect.driver
    if driver not in _NAME_PARAMETER:
        return

    @sa.event.listens_for(engine, 'do_connect')
    def named(dialect, connection_record, cargs, cparams):
        cparams[_NAME_PARAMETER[driver]] = name()

    @sa.event.listens_for(engine, 'connect')
    def remember(dbapi_connection, connection_record):
        session = (os.getpid(), _SERVER_ID[driver](dbapi_connection))
        connection_record.info[_SESSION] = session
        with _own_lock:
            _own.setdefault(engine, set()).add(session)

    @sa.event.listens_for(engine, 'close')
    def forget(dbapi_connection, connection_record):
        # The server may give its id to another client afterwards.
        with _own_lock:
            _own.get(engine, set()).discard(
                connection_record.info.get(_SESSION))

    # oslo.db made a connection already, to try the URL: unnamed, and
    # not remembered.
    engine.dispose()


def own(engine):
    """The server's ids of the sessions this process opened on
    ``engine`` (some may be closed by now)."""
    pid = os.getpid()
    with _own_lock:
        return {server_id for owner, server_id in _own.get(engine, ())
                if owner == pid}
