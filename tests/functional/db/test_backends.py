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

"""What each backend gets beyond oslo.db's set-up (db/backends.py): on
SQLite, writers begin IMMEDIATE and wait for the lock, and a lock held
too long is a 503 DatabaseBusy, retried first; on MariaDB/MySQL, the
connection speaks utf8mb4, and only a Galera node (tests/galera) gets
causal reads.
"""

import os
import sqlite3
import threading
import types

import fixtures
from oslo_db.sqlalchemy import engines
import sqlalchemy as sa

from reserveapi.common import exception
from reserveapi.db import backends
from reserveapi.db import base as db_base
from reserveapi.db import migration
from reserveapi.inventory import lifecycle
from tests.functional import base


def _statements(test, engine):
    seen = []

    def record(conn, cursor, statement, parameters, context, many):
        seen.append(' '.join(statement.split()[:2]).upper())

    sa.event.listen(engine, 'before_cursor_execute', record)
    test.addCleanup(sa.event.remove, engine, 'before_cursor_execute', record)
    return seen


class TestSQLiteTransactions(base.DBTestCase):

    def test_writers_begin_immediate_readers_plain(self):
        seen = _statements(self, self.engine)
        with db_base.writer() as session:
            session.execute(sa.text('SELECT 1'))
        with db_base.reader() as session:
            session.execute(sa.text('SELECT 1'))
        self.assertEqual(['BEGIN IMMEDIATE', 'SELECT 1', 'BEGIN',
                          'SELECT 1'], seen)


class TestSQLiteLock(base.DBTestCase):
    """A file database, as the demo has, locked by another process."""

    def setUp(self):
        super().setUp()
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'state', 'reserveapi.sqlite')
        self.useFixture(fixtures.MonkeyPatch(
            'reserveapi.db.backends.BUSY_TIMEOUT', 0.2))
        engine = engines.create_engine('sqlite:///%s' % path, max_retries=0)
        backends.configure(engine)
        self.addCleanup(engine.dispose)
        migration.upgrade(engine=engine)
        self.addCleanup(db_base.main_context_manager.patch_engine(engine))
        self.other = sqlite3.connect(path, isolation_level=None,
                                     check_same_thread=False)
        self.addCleanup(self.other.close)

    def lock(self):
        self.other.execute('BEGIN EXCLUSIVE')

    def test_a_lock_held_too_long_is_busy(self):
        self.lock()
        error = self.assertRaises(exception.DatabaseBusy,
                                  self._delete_everything)
        self.assertEqual(503, error.status)
        self.other.execute('ROLLBACK')

    def test_a_writer_retries_until_the_lock_is_free(self):
        self.lock()
        timer = threading.Timer(0.5, self.other.execute, ('COMMIT',))
        timer.start()
        self.addCleanup(timer.join)
        gone = types.SimpleNamespace(
            uuid='f6a9b9c2-8a0e-4b8a-9d8e-4f3c2b1a0e9d', node_id=1)
        self.assertRaises(exception.ReservationNotFound,
                          lifecycle.release_record, gone, self.fail)

    @staticmethod
    def _delete_everything():
        with db_base.writer() as session:
            session.execute(sa.text('DELETE FROM reservations'))


class TestSQLiteFilePool(base.DBTestCase):
    """A file database keeps its connections open between transactions,
    with everything oslo.db and backends.py set on a new one."""

    def setUp(self):
        super().setUp()
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'reserveapi.sqlite')
        self.file_engine = engines.create_engine('sqlite:///%s' % path,
                                            sqlite_fk=True)
        backends.configure(self.file_engine)
        self.addCleanup(self.file_engine.dispose)

    def _driver_connection(self):
        with self.file_engine.connect() as connection:
            return (connection.connection.driver_connection,
                    connection.exec_driver_sql(
                        'PRAGMA foreign_keys').scalar(),
                    connection.exec_driver_sql(
                        'PRAGMA busy_timeout').scalar())

    def test_transactions_share_an_open_connection(self):
        self.assertIsInstance(self.file_engine.pool, sa.pool.QueuePool)
        first = self._driver_connection()
        self.assertEqual(first, self._driver_connection())
        self.assertEqual((1, backends.BUSY_TIMEOUT * 1000), first[1:])

    def test_another_thread_uses_the_pooled_connection(self):
        opened = self._driver_connection()
        found = []
        thread = threading.Thread(
            target=lambda: found.append(self._driver_connection()))
        thread.start()
        thread.join(10)
        self.assertEqual([opened], found)

    def test_writers_still_begin_immediate(self):
        seen = _statements(self, self.file_engine)
        self.addCleanup(db_base.main_context_manager.patch_engine(
            self.file_engine))
        with db_base.writer() as session:
            session.execute(sa.text('SELECT 1'))
        self.assertEqual(['BEGIN IMMEDIATE', 'SELECT 1'], seen)


class TestMySQLCharset(base.DBTestCase):
    scenarios = [base.MYSQL]

    def test_connection_speaks_utf8mb4(self):
        with db_base.reader() as session:
            charset = session.execute(sa.text(
                'SELECT @@character_set_connection')).scalar()
        self.assertEqual('utf8mb4', charset)

    def test_a_url_naming_a_charset_keeps_it(self):
        url = self.engine.url.update_query_dict({'charset': 'utf8'})
        engine = engines.create_engine(
            url.render_as_string(hide_password=False), max_retries=0)
        backends.configure(engine)
        self.addCleanup(engine.dispose)
        with engine.connect() as connection:
            self.assertEqual('utf8mb3', connection.execute(sa.text(
                'SELECT @@character_set_connection')).scalar())


class TestMySQLWithoutGalera(base.DBTestCase):
    """A plain MariaDB/MySQL server: causal reads are Galera's, so the
    session is left as the server made it."""

    scenarios = [base.MYSQL]

    def test_wsrep_sync_wait_is_not_set(self):
        self.assertEqual(1, backends.sync_wait())
        with self.engine.connect() as connection:
            self.assertIs(False, backends.is_galera(connection))
            wsrep_on, session, default = connection.execute(sa.text(
                'SELECT @@wsrep_on, @@session.wsrep_sync_wait, '
                '@@global.wsrep_sync_wait')).one()
        self.assertEqual(0, wsrep_on)
        self.assertEqual((0, 0), (default, session))


class TestOneStatementOnPostgreSQL(base.DBTestCase):
    """base.one_statement: its statement is its own transaction, with no
    BEGIN, COMMIT or ROLLBACK sent, and the connection is as it was
    after."""

    scenarios = [base.POSTGRESQL]
    IDLE = 0  # psycopg2's TRANSACTION_STATUS_IDLE

    def test_the_statement_opens_no_transaction(self):
        with db_base.writer() as session:
            with db_base.one_statement(session) as connection:
                connection.execute(sa.text(
                    'CREATE TEMPORARY TABLE seen (n int)'))
                driver = connection.connection.driver_connection
                # psycopg2 would have sent BEGIN: a transaction is open.
                self.assertEqual(self.IDLE, driver.get_transaction_status())
            self.assertFalse(driver.autocommit)
            session.execute(sa.text('SELECT 1'))
            self.assertNotEqual(self.IDLE, driver.get_transaction_status())

    def test_an_open_transaction_is_left_as_it_is(self):
        with db_base.writer() as session:
            session.execute(sa.text('SELECT 1'))
            with db_base.one_statement(session) as connection:
                driver = connection.connection.driver_connection
                self.assertFalse(driver.autocommit)
                connection.execute(sa.text('SELECT 2'))
                self.assertNotEqual(self.IDLE,
                                    driver.get_transaction_status())


class TestCheckin(base.DBTestCase):
    """No sleep(0) at a connection's checkin (oslo.db's yield to
    eventlet, which no reserveapi process runs)."""

    scenarios = base.EVERY_BACKEND

    def test_checkin_does_not_sleep(self):
        engine = db_base.get_engine()
        self.assertFalse(sa.event.contains(engine, 'checkin',
                                           engines._thread_yield))
        sleep = self.useFixture(fixtures.MockPatch('time.sleep')).mock
        with db_base.reader() as session:
            session.execute(sa.text('SELECT 1'))
        sleep.assert_not_called()
