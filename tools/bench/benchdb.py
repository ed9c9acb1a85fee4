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

"""Throwaway databases for the benchmark, and the floor's replay.

Each backend gets a database of its own, created for the run and dropped
at the end (SQLite: a file in the run's work directory).  Besides the
connection URL for reserveapi, a backend hands out plain DB-API
connections, on which the floor replays the statements the API sent
(api_statements.py captures them): the product's own SQL, never a copy,
so that the floor is the API's database work and nothing else. Only
SQLAlchemy and the drivers are used here, never reserveapi.
"""

import datetime
import os
import secrets
import sqlite3
import uuid

import sqlalchemy as sa
from sqlalchemy.engine import url as sa_url

ADMIN_URL_ENV = {
    'postgresql': 'RESERVEAPI_BENCH_POSTGRESQL_URL',
    'mysql': 'RESERVEAPI_BENCH_MYSQL_URL',
}
DEFAULT_ADMIN_URLS = {
    'postgresql': 'postgresql+psycopg2://postgres@127.0.0.1:5432/postgres',
    'mysql': 'mysql+pymysql://root:@127.0.0.1:3306/',
}
BACKENDS = ('sqlite', 'postgresql', 'mysql')
# Backends where several API processes may write at once.
CONCURRENT_BACKENDS = ('postgresql', 'mysql')
LOCAL_HOSTS = ('127.0.0.1', 'localhost', '::1')


def admin_url(kind):
    """The server URL to create databases with (env var or default)."""
    text = os.environ.get(ADMIN_URL_ENV[kind]) or DEFAULT_ADMIN_URLS[kind]
    url = sa_url.make_url(text)
    if url.host not in LOCAL_HOSTS:
        raise ValueError('%s must point at 127.0.0.1, not %r'
                         % (ADMIN_URL_ENV[kind], url.host))
    return url


class Backend:
    """A fresh database; a context manager that drops it on exit."""

    def __init__(self, kind, workdir, keep=False):
        if kind not in BACKENDS:
            raise ValueError('unknown backend %r' % kind)
        self.kind = kind
        self.keep = keep
        self.name = 'reserveapi_bench_%s' % secrets.token_hex(4)
        self._sqlite_path = os.path.join(workdir, self.name + '.sqlite')
        self._admin = None if kind == 'sqlite' else admin_url(kind)
        self.url = None
        self.version = None

    # Lifecycle

    def __enter__(self):
        if self.kind == 'sqlite':
            self.url = sa_url.URL.create('sqlite',
                                         database=self._sqlite_path)
            self.version = 'SQLite %s' % sqlite3.sqlite_version
            return self
        engine = sa.create_engine(self._admin, isolation_level='AUTOCOMMIT',
                                  poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as connection:
                if self.kind == 'postgresql':
                    self.version = connection.exec_driver_sql(
                        'SHOW server_version').scalar()
                    connection.exec_driver_sql(
                        'CREATE DATABASE "%s"' % self.name)
                else:
                    self.version = connection.exec_driver_sql(
                        'SELECT VERSION()').scalar()
                    connection.exec_driver_sql(
                        'CREATE DATABASE `%s` CHARACTER SET utf8mb4'
                        % self.name)
        finally:
            engine.dispose()
        self.url = self._admin.set(database=self.name)
        if self.kind == 'mysql':
            self.url = self.url.update_query_dict({'charset': 'utf8mb4'})
        return self

    def __exit__(self, *exc_info):
        self.drop()

    def drop(self):
        if self.url is None or self.keep:
            return
        if self.kind == 'sqlite':
            for suffix in ('', '-wal', '-shm', '-journal'):
                try:
                    os.unlink(self._sqlite_path + suffix)
                except FileNotFoundError:
                    pass
            self.url = None
            return
        engine = sa.create_engine(self._admin, isolation_level='AUTOCOMMIT',
                                  poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as connection:
                if self.kind == 'postgresql':
                    # API workers are gone by now; FORCE ends any straggler.
                    connection.exec_driver_sql(
                        'DROP DATABASE IF EXISTS "%s" WITH (FORCE)'
                        % self.name)
                else:
                    connection.exec_driver_sql(
                        'DROP DATABASE IF EXISTS `%s`' % self.name)
        finally:
            engine.dispose()
        self.url = None

    @property
    def connection_url(self):
        """``[database] connection`` for reserveapi (password included)."""
        return self.url.render_as_string(hide_password=False)

    # Plain DB-API access

    def connect(self):
        """A new DB-API connection to the benchmark database."""
        if self.kind == 'sqlite':
            return sqlite3.connect(self._sqlite_path, timeout=30)
        if self.kind == 'postgresql':
            import psycopg2
            return psycopg2.connect(
                host=self.url.host, port=self.url.port or 5432,
                user=self.url.username, password=self.url.password or '',
                dbname=self.name, connect_timeout=10)
        import pymysql
        return pymysql.connect(
            host=self.url.host, port=self.url.port or 3306,
            user=self.url.username, password=self.url.password or '',
            database=self.name, charset='utf8mb4', connect_timeout=10,
            read_timeout=60, write_timeout=60, autocommit=False)

    @property
    def _param(self):
        return '?' if self.kind == 'sqlite' else '%s'

    def sql(self, text):
        """``text`` with ``%s`` placeholders in this driver's style."""
        return text.replace('%s', self._param)

    def execute(self, text, params=()):
        """Run one statement in its own transaction; rows if any."""
        connection = self.connect()
        try:
            cursor = connection.cursor()
            cursor.execute(self.sql(text), params)
            rows = cursor.fetchall() if cursor.description else None
            connection.commit()
            return rows
        finally:
            connection.close()

    def analyze(self, vacuum=False):
        """Gather planner statistics, as autovacuum (or InnoDB's
        automatic recalculation) would sooner or later: without them a
        freshly loaded database is planned as if it were empty. With
        ``vacuum`` (PostgreSQL), VACUUM too: the dead row versions a load
        left behind are gone, as autovacuum would have them gone, so
        databases loaded by different code start alike.
        """
        connection = self.connect()
        try:
            if vacuum and self.kind == 'postgresql':
                # VACUUM cannot run inside a transaction.
                connection.autocommit = True
                connection.cursor().execute('VACUUM ANALYZE')
                return
            cursor = connection.cursor()
            if self.kind == 'mysql':
                cursor.execute('ANALYZE TABLE nodes, node_traits, '
                               'node_capabilities, reservations')
                cursor.fetchall()
            else:
                cursor.execute('ANALYZE')
            connection.commit()
        finally:
            connection.close()

    # The API's reservation replayed

    def reserve_once(self, connection, api_query, host, pick, rng):
        """Reserve one node as the API does, with its very statements
        (``api_query``, the SQL of one API request as api_statements.py
        captures it: ``{"reads", "reserve"}``): its reads in a
        transaction of their own, then its reserving statements for one
        of the first ``pick`` nodes read, at random, in another.

        Returns ``(node_id, conflicts)``, or ``(None, conflicts)`` when
        no node is free. A lost race (the INSERT inserting nothing, or a
        unique violation) or a deadlock rolls back and tries again.
        """
        conflicts = 0
        while True:
            cursor = connection.cursor()
            try:
                ids = self._read_as_api(api_query, pick, connection, cursor)
                if not ids:
                    connection.rollback()
                    return None, conflicts
                node_id = rng.choice(ids)
                if self._reserve_as_api(api_query, cursor, host, node_id):
                    connection.commit()
                    return node_id, conflicts
                connection.rollback()
                conflicts += 1
            except Exception as exc:
                connection.rollback()
                if not _is_retryable(exc):
                    raise
                conflicts += 1
            finally:
                cursor.close()

    @staticmethod
    def _reserve_as_api(api_query, cursor, host, node_id):
        """The API's reserving statements for ``node_id``; whether the
        node was reserved (its INSERT ... SELECT inserts nothing once the
        node is no longer eligible)."""
        values = {'new_uuid': str(uuid.uuid4()),
                  'new_instance_uuid': str(uuid.uuid4()),
                  'new_host': host, 'new_node_id': node_id,
                  'new_created_at': _utcnow()}
        for statement in api_query['reserve']:
            cursor.execute(statement['sql'],
                           arguments(statement, values))
            if cursor.rowcount < 1:
                return False
        return True

    def _read_as_api(self, api_query, pick, connection, cursor):
        """The API's reads, in a transaction of their own; the ids the
        first one (the candidate query) found, up to ``pick``."""
        ids = None
        for statement in api_query['reads']:
            cursor.execute(statement['sql'], arguments(statement))
            rows = cursor.fetchall()
            if ids is None:
                names = [column[0] for column in cursor.description]
                ids = [row[names.index('id')] for row in rows]
        connection.commit()
        return ids[:pick]


def arguments(statement, values=None):
    """A captured statement's parameters, with ``values`` put in, as its
    driver takes them: by name, or a tuple in ``positions`` order."""
    params = dict(statement['params'], **(values or {}))
    positions = statement['positions']
    if positions is None:
        return params
    return tuple(params[name] for name in positions)


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _is_retryable(exc):
    """A unique violation (someone reserved the node first) or deadlock;
    on MariaDB also 1467, what a deadlock on the AUTO-INC lock of an
    ``INSERT ... SELECT`` surfaces as (the service retries it too:
    reserveapi.db.base.AUTOINC_LOCK_LOST)."""
    name = type(exc).__name__
    if name in ('IntegrityError', 'UniqueViolation'):
        return True
    if name == 'OperationalError':
        text = str(exc).lower()
        return ('deadlock' in text or '1213' in text or 'locked' in text
                or '1205' in text or '1467' in text)
    return name in ('TransactionRollbackError', 'DeadlockDetected',
                    'SerializationFailure')
