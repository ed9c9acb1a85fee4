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

"""What SQLite and MariaDB/MySQL need beyond oslo.db's engine set-up;
PostgreSQL needs nothing.

SQLite (the demo, served by a threaded server): a write transaction
starts with ``BEGIN IMMEDIATE``, so two writers queue for the lock
instead of both reading and then failing to upgrade (``database is
locked``, at once, whatever the timeout); every connection waits up to
BUSY_TIMEOUT for a lock; a ``database is locked`` that still happens is
a deadlock to oslo.db, which the writers' retry decorators retry. This
is SQLAlchemy's pysqlite recipe: oslo.db already sets
``isolation_level = None`` and emits a plain BEGIN on the ``begin``
event; its listener (found by its private name,
``compat.oslo_db_sqlite_begin_listeners``) is replaced by one that emits
the IMMEDIATE one for writers (``writing()``) and the plain one
otherwise.

MariaDB/MySQL: oslo.db connects with ``charset=utf8`` (three bytes per
character at most) unless the URL names a charset; our tables are
utf8mb4, so the connection is made utf8mb4 too, and an emoji host name is
stored like any other.

MariaDB Galera: a node applies the other nodes' writes a little after
they commit, and much later while it is a donor or desynced (a backup).
Every session on a node with ``wsrep_on = ON`` sets ``wsrep_sync_wait``
(``[database] galera_sync_wait``, 1 by default): its reads first wait
until the node has applied every write committed in the cluster before
them, so a reservation made through one node is found through another.
Only Galera nodes get it: MySQL has no such variable. The connection's
``info`` remembers which servers are Galera nodes (``GALERA``).

Galera also aborts a local transaction whose rows a replicated one
changed (a brute-force abort); the server has rolled it back already, and
the ROLLBACK that follows the statement's error answers ``1213
Deadlock``. oslo.db's enginefacade rolls back inside oslo.utils'
``save_and_reraise_exception``, so that answer replaced the statement's
own error (a duplicate key: the node was taken, try the next) and was
logged as ``ERROR Original exception being dropped`` with a traceback.
A ROLLBACK answered with 1213 is done: it is not an error
(``_rollback_done_by_galera``).
"""

import contextlib
import logging
import os
import sqlite3
import threading

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import exc_filters
from oslo_log import log
import sqlalchemy as sa

from reserveapi import compat
from reserveapi.common import exception

LOG = log.getLogger(__name__)

BUSY_TIMEOUT = 30
"""Seconds an SQLite connection waits for another's lock."""
SQLITE_POOL_SIZE = 5
SQLITE_POOL_OVERFLOW = 10
"""Connections an SQLite file keeps open, and may open beyond them."""
MYSQL_CHARSET = 'utf8mb4'

GALERA = 'reserveapi.galera'
"""Key of a MySQL connection's ``info``: is the server a Galera node?"""
MYSQL_DEADLOCK = 1213

_writing = threading.local()


@contextlib.contextmanager
def writing():
    """Marks this thread's transactions as writers while in the block."""
    previous = getattr(_writing, 'active', False)
    _writing.active = True
    try:
        yield
    finally:
        _writing.active = previous


DRIVERS = {'postgresql': ('psycopg2', 'postgresql'),
           'mysql': ('pymysql', 'mysql')}
"""Per database kind, the driver we support and the extra of the
package that installs it (pyproject.toml)."""


def check_connection_url():
    """``[database] connection`` is a URL of a database kind whose driver
    is installed: checked at start-up, since the engine is made at the
    first request or command that needs it, and fails there with a
    traceback.

    :raises: ConfigurationError
    """
    text = cfg.CONF.database.connection
    location = cfg.CONF.get_location('connection', 'database')
    in_file = (' in %s' % location.detail
               if location and location.detail else '')
    try:
        url = sa.engine.make_url(text)
    except sa.exc.ArgumentError:
        raise exception.ConfigurationError(
            '[database] connection%s is not a database URL: expected one '
            'such as postgresql+psycopg2://USER:PASSWORD@HOST/reserveapi, '
            'mysql+pymysql://USER:PASSWORD@HOST/reserveapi or '
            'sqlite:////PATH/reserveapi.sqlite.' % in_file)
    where = '[database] connection = %s%s' % (
        url.render_as_string(hide_password=True), in_file)
    backend = url.get_backend_name()
    driver, extra = DRIVERS.get(backend, (None, None))
    try:
        url.get_dialect().import_dbapi()
    except sa.exc.NoSuchModuleError:
        raise exception.ConfigurationError(
            '%s names no database SQLAlchemy knows (%s): expected '
            'postgresql+psycopg2://, mysql+pymysql:// or sqlite:///.'
            % (where, url.drivername))
    except ImportError as exc:
        if driver is None:
            advice = ''
        elif url.get_driver_name() == driver:
            advice = ": pip install 'reserveapi[%s]'" % extra
        else:
            advice = (": write %s+%s:// and pip install 'reserveapi[%s]'"
                      % (backend, driver, extra))
        raise exception.ConfigurationError(
            '%s needs the Python module %s, which is not installed%s.'
            % (where, exc.name, advice))


def configure(engine):
    """An enginefacade ``on_engine_create`` hook."""
    _no_schema_is_said(engine)
    if engine.dialect.name == 'sqlite':
        _configure_sqlite(engine)
    elif engine.dialect.name == 'mysql':
        _configure_mysql(engine)


MYSQL_NO_SUCH_TABLE = 1146
POSTGRESQL_UNDEFINED_TABLE = '42P01'


def _no_schema_is_said(engine):
    """A statement on a table that does not exist means the schema was
    never built, or is older than this code: ``NoSchema`` (a 503 that
    says to run reserveapi-dbsync), rather than a 500 and a traceback.
    """

    @sa.event.listens_for(engine, 'handle_error')
    def no_such_table(context):
        error = context.original_exception
        if _is_missing_table(error):
            raise exception.NoSchema(cause='%s %s' % (
                type(error).__name__,
                str(error).strip().splitlines()[0])) from error


def _is_missing_table(error):
    """Whether a driver's ``error`` says a table does not exist."""
    args = getattr(error, 'args', ())
    return (getattr(error, 'pgcode', None) == POSTGRESQL_UNDEFINED_TABLE
            or (bool(args) and args[0] == MYSQL_NO_SUCH_TABLE)
            or (isinstance(error, sqlite3.OperationalError)
                and str(error).startswith('no such table')))


class _NoTracebackForMissingTables(logging.Filter):
    """oslo.db logs every error no filter of its own knows with its
    traceback, before ``no_such_table`` says it in one line: a worker
    started before reserveapi-dbsync wrote tracebacks by the hundred."""

    def filter(self, record):
        error = record.exc_info[1] if record.exc_info else None
        return not (error is not None and _is_missing_table(
            getattr(error, 'orig', None) or error))


logging.getLogger('oslo_db.sqlalchemy.exc_filters').addFilter(
    _NoTracebackForMissingTables())


def _configure_sqlite(engine):
    database = engine.url.database
    is_file = bool(database) and database != ':memory:' and (
        not database.startswith('file:'))

    @sa.event.listens_for(engine, 'do_connect')
    def open_file(dialect, connection_record, cargs, cparams):
        if is_file:
            _refuse_to_create(database)
            # Pooled (below): a connection serves one thread at a time,
            # not always the thread that opened it.
            cparams['check_same_thread'] = False

    if is_file and isinstance(engine.pool, sa.pool.NullPool):
        _pool_sqlite_file(engine)

    @sa.event.listens_for(engine, 'connect')
    def wait_for_locks(dbapi_connection, connection_record):
        dbapi_connection.execute('PRAGMA busy_timeout = %d'
                                 % (BUSY_TIMEOUT * 1000))

    for listener in compat.oslo_db_sqlite_begin_listeners(engine):
        sa.event.remove(engine, 'begin', listener)

    @sa.event.listens_for(engine, 'begin')
    def begin(connection):
        # As oslo.db's, which marks the transaction it began the same way
        # and unmarks it on commit and rollback.
        if compat.OSLO_DB_IN_TRANSACTION not in connection.info:
            connection.exec_driver_sql(
                'BEGIN IMMEDIATE' if getattr(_writing, 'active', False)
                else 'BEGIN')
            connection.info[compat.OSLO_DB_IN_TRANSACTION] = True


_creating = threading.local()


@contextlib.contextmanager
def creating_file():
    """Within the block this thread builds the schema (``migration.
    upgrade``): it may create a missing SQLite file, and its directory.
    """
    _creating.active = True
    try:
        yield
    finally:
        _creating.active = False


def _refuse_to_create(database):
    """Opening a missing SQLite file would create it, empty: anything but
    building the schema says so instead, so that a command that only
    reads (``reserveapi-dbsync current``, ``reserveapi-status upgrade
    check``) leaves nothing behind.

    :raises: NoSchema
    """
    if os.path.exists(database):
        return
    if not getattr(_creating, 'active', False):
        raise exception.NoSchema(
            cause='FileNotFoundError %s does not exist ([database] '
                  'connection)' % os.path.abspath(database))
    os.makedirs(os.path.dirname(os.path.abspath(database)), exist_ok=True)


def _pool_sqlite_file(engine):
    """Keep an SQLite file's connections open between transactions.

    oslo.db gives a file a NullPool, so every transaction opened the file
    again, and the first statement on a new connection reads and parses
    the whole schema (tables, indexes, the summary's triggers) and
    prepares every statement anew: a reservation spent more in that than
    in its SQL. A QueuePool, SQLAlchemy's own default for files, keeps
    them open with their statement caches, connecting as the old pool
    did. No pre-ping: a file does not drop a connection.
    """
    old = engine.pool
    engine.pool = compat.pool_like(
        old, sa.pool.QueuePool, pool_size=SQLITE_POOL_SIZE,
        max_overflow=SQLITE_POOL_OVERFLOW, pre_ping=False)
    old.dispose()


def sync_wait():
    """The ``wsrep_sync_wait`` sessions on a Galera node set."""
    return cfg.CONF.database.galera_sync_wait


def is_galera(connection):
    """Whether a MySQL ``Connection``'s server is a Galera node."""
    return connection.info.get(GALERA, False)


def _configure_mysql(engine):

    @sa.event.listens_for(engine, 'connect')
    def causal_reads_on_galera(dbapi_connection, connection_record):
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("SHOW VARIABLES LIKE 'wsrep_on'")
            row = cursor.fetchone()
            galera = row is not None and row[1] == 'ON'
            connection_record.info[GALERA] = galera
            if galera and sync_wait():
                cursor.execute('SET SESSION wsrep_sync_wait = %s',
                               (sync_wait(),))
        finally:
            cursor.close()

    _rollback_done_by_galera(engine.dialect)
    # oslo.db may have tried a connection already ([database]
    # max_retries): none may stay pooled without the settings above.
    engine.dispose()
    if 'charset' in engine.url.query:
        return

    @sa.event.listens_for(engine, 'do_connect')
    def use_utf8mb4(dialect, connection_record, cargs, cparams):
        cparams['charset'] = MYSQL_CHARSET


def _rollback_done_by_galera(dialect):
    """The engine's rollbacks (a transaction's and the pool's) take a
    1213 answer for done: Galera aborted and rolled back the transaction
    before the ROLLBACK came."""
    driver_error = dialect.loaded_dbapi.OperationalError

    def done_by_galera(rollback, dbapi_connection):
        try:
            rollback(dbapi_connection)
        except driver_error as error:
            if not error.args or error.args[0] != MYSQL_DEADLOCK:
                raise
            LOG.debug('The server had already rolled the transaction '
                      'back: %s', error)

    compat.wrap_rollback(dialect, done_by_galera)


@exc_filters.filters('sqlite', sa.exc.OperationalError,
                     r'.*database is (?:locked|busy)')
def _sqlite_locked(operational_error, match, engine_name, is_disconnect):
    raise db_exc.DBDeadlock(operational_error)
