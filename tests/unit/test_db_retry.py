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

"""Lost races are retried at once, briefly and quietly, and a write that
must not be lost for a few seconds, by one policy (db/base.py), the
database's own error is named for the log, a ROLLBACK of a transaction
Galera aborted is no error (db/backends.py), and a Galera node out of
the cluster is unavailable, not a bug (db/connection_errors.py)."""

import contextlib
import logging
import types

import fixtures
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import exc_filters
from oslotest import base
import prometheus_client
import pymysql
import sqlalchemy as sa
import webob

from reserveapi.api import errors
from reserveapi.api import expose
from reserveapi.api import routes
from reserveapi.common import exception
from reserveapi.common import outages
from reserveapi.db import backends
from reserveapi.db import base as db_base


def _deadlock():
    """DatabaseBusy as writer() raises it for a Galera certification
    failure: pymysql's error, wrapped by SQLAlchemy, then oslo.db."""
    driver = pymysql.err.OperationalError(
        1213, 'Deadlock found when trying to get lock; try restarting '
              'transaction')
    wrapped = sa.exc.OperationalError('COMMIT', {}, driver)
    try:
        try:
            raise db_exc.DBDeadlock(wrapped)
        except db_exc.DBDeadlock as deadlock:
            raise exception.DatabaseBusy(
                cause=db_base.describe(deadlock)) from deadlock
    except exception.DatabaseBusy as busy:
        return busy


class TestAutoincLockLost(base.BaseTestCase):
    """MariaDB's 1467, a deadlock on the AUTO-INC lock concurrent claims
    (INSERT ... SELECT) take, is a lost race like 1213."""

    @staticmethod
    def _raise_in_a_transaction(error):
        @contextlib.contextmanager
        def transaction():
            yield None
            raise error
        with db_base._unavailable_as_503(transaction()):
            pass

    def _error(self, number, message):
        driver = pymysql.err.OperationalError(number, message)
        return sa.exc.OperationalError('INSERT INTO reservations', {},
                                       driver)

    def test_as_sqlalchemy_raises_it_it_is_busy(self):
        lost = self._error(1467, 'Failed to read auto-increment value '
                                 'from storage engine')
        busy = self.assertRaises(exception.DatabaseBusy,
                                 self._raise_in_a_transaction, lost)
        self.assertIn('OperationalError 1467: Failed to read', busy.cause)

    def test_as_oslo_db_wraps_it_it_is_busy(self):
        lost = db_exc.DBError(self._error(
            1467, 'Failed to read auto-increment value from storage engine'))
        self.assertRaises(exception.DatabaseBusy,
                          self._raise_in_a_transaction, lost)

    def test_other_errors_pass_as_they_are(self):
        other = self._error(1054, "Unknown column 'x'")
        self.assertRaises(sa.exc.OperationalError,
                          self._raise_in_a_transaction, other)


class _RetryTestCase(base.BaseTestCase):
    """Retries without their pauses (recorded), and the log they write."""

    def setUp(self):
        super().setUp()
        self.pauses = []
        self.useFixture(fixtures.MonkeyPatch(
            'reserveapi.db.base.time.sleep', self.pauses.append))
        self.log = self.useFixture(fixtures.FakeLogger(
            level=logging.DEBUG, format='%(levelname)s %(name)s %(message)s'))


class TestRetries(_RetryTestCase):

    def _losing(self, times):
        calls = []

        @db_base.retrying()
        def transaction():
            calls.append(1)
            if len(calls) <= times:
                raise _deadlock()
            return 'committed'
        return transaction, calls

    def test_a_lost_race_is_retried_at_once_and_logged_at_debug(self):
        transaction, calls = self._losing(2)
        self.assertEqual('committed', transaction())
        self.assertEqual(3, len(calls))
        self.assertEqual(2, len(self.pauses))
        self.assertTrue(all(0 <= pause < db_base.BACKOFF_FIRST * 2 ** n
                            for n, pause in enumerate(self.pauses)),
                        self.pauses)
        lines = self.log.output.splitlines()
        self.assertEqual(2, len(lines), lines)
        for line in lines:
            self.assertTrue(line.startswith('DEBUG reserveapi.db.base '),
                            line)
            self.assertIn('lost a race (OperationalError 1213: Deadlock '
                          'found', line)
        self.assertNotIn('Traceback', self.log.output)

    def test_retries_are_bounded_then_busy(self):
        transaction, calls = self._losing(100)
        error = self.assertRaises(exception.DatabaseBusy, transaction)
        self.assertEqual(503, error.status)
        self.assertEqual(db_base.MAX_RETRIES + 1, len(calls))
        self.assertEqual(db_base.MAX_RETRIES, len(self.pauses))
        self.assertLessEqual(max(self.pauses), db_base.BACKOFF_MAX)
        # Half a second of waiting at worst, not oslo.db's 1 + 2 + 4 ...
        self.assertLess(sum(min(db_base.BACKOFF_MAX,
                                db_base.BACKOFF_FIRST * 2 ** n)
                            for n in range(db_base.MAX_RETRIES)), 0.6)
        self.assertIn('WARNING reserveapi.db.base ', self.log.output)
        self.assertIn('lost 6 races in a row, giving up: OperationalError '
                      '1213', self.log.output)
        self.assertNotIn('Traceback', self.log.output)

    def test_duplicate_insert_is_retried(self):
        calls = []

        @db_base.retrying(duplicates=True)
        def insert():
            calls.append(1)
            if len(calls) == 1:
                raise db_exc.DBDuplicateEntry(columns=['uuid'])
            return 'found'

        self.assertEqual('found', insert())
        self.assertEqual(2, len(calls))

    def test_retries_and_deadlocks_are_counted(self):
        def sample(name, **labels):
            return prometheus_client.REGISTRY.get_sample_value(
                'reserveapi_database_' + name, labels) or 0

        before = {error: sample('retries_total', error=error)
                  for error in ('deadlock', 'duplicate')}
        deadlocks = sample('deadlocks_total')
        transaction, _calls = self._losing(2)
        transaction()
        calls = []

        @db_base.retrying(duplicates=True)
        def insert():
            calls.append(1)
            if len(calls) == 1:
                raise db_exc.DBDuplicateEntry(columns=['uuid'])

        insert()
        self.assertEqual({'deadlock': before['deadlock'] + 2,
                          'duplicate': before['duplicate'] + 1},
                         {error: sample('retries_total', error=error)
                          for error in before})
        self.assertRaises(exception.DatabaseBusy,
                          TestAutoincLockLost._raise_in_a_transaction,
                          db_exc.DBDeadlock())
        self.assertEqual(deadlocks + 1, sample('deadlocks_total'))

    def test_other_errors_are_not_retried(self):
        calls = []

        @db_base.retrying(duplicates=True)
        def broken():
            calls.append(1)
            raise exception.DatabaseUnavailable()

        self.assertRaises(exception.DatabaseUnavailable, broken)
        self.assertEqual(1, len(calls))
        self.assertEqual([], self.pauses)

    def test_a_duplicate_is_no_lost_race_unless_said_so(self):
        calls = []

        @db_base.retrying()
        def insert():
            calls.append(1)
            raise db_exc.DBDuplicateEntry(columns=['uuid'])

        self.assertRaises(db_exc.DBDuplicateEntry, insert)
        self.assertEqual(1, len(calls))


class TestPersistentRetries(_RetryTestCase):
    """A write that must not be lost is run again whatever the database
    answers, for a few seconds, with the same policy."""

    def _failing(self, errors):
        calls = []

        @db_base.retrying(persistent=True)
        def undo():
            calls.append(1)
            if errors:
                raise errors.pop(0)
            return 'undone'
        return undo, calls

    def test_any_database_failure_is_retried(self):
        undo, calls = self._failing([
            exception.DatabaseUnavailable(), _deadlock(),
            db_exc.DBError(RuntimeError('server has gone away')),
            sa.exc.OperationalError('DELETE', {}, Exception('lost')),
            db_exc.DBDuplicateEntry(columns=['node_uuid'])])
        self.assertEqual('undone', undo())
        self.assertEqual(6, len(calls))
        self.assertIn('DEBUG reserveapi.db.base ', self.log.output)
        self.assertIn('failed (The database is unavailable', self.log.output)
        self.assertIn('lost a race (OperationalError 1213', self.log.output)

    def test_for_a_few_seconds_then_raised(self):
        undo, calls = self._failing(
            [exception.DatabaseUnavailable()] * 100)
        self.assertRaises(exception.DatabaseUnavailable, undo)
        self.assertEqual(db_base.PERSISTENT_RETRIES + 1, len(calls))
        self.assertEqual(db_base.PERSISTENT_RETRIES, len(self.pauses))
        self.assertTrue(all(0 <= pause < min(
            db_base.PERSISTENT_BACKOFF_MAX,
            db_base.PERSISTENT_BACKOFF_FIRST * 2 ** n)
            for n, pause in enumerate(self.pauses)), self.pauses)
        longest = sum(min(db_base.PERSISTENT_BACKOFF_MAX,
                          db_base.PERSISTENT_BACKOFF_FIRST * 2 ** n)
                      for n in range(db_base.PERSISTENT_RETRIES))
        self.assertTrue(3 < longest < 10, longest)
        self.assertIn('WARNING reserveapi.db.base ', self.log.output)
        self.assertIn('failed 11 times in a row, giving up',
                      self.log.output)

    def test_not_what_is_no_database_failure(self):
        undo, calls = self._failing([exception.ReservationNotFound(
            reservation='r')])
        self.assertRaises(exception.ReservationNotFound, undo)
        self.assertEqual(1, len(calls))
        self.assertEqual([], self.pauses)


class TestPatientRetries(_RetryTestCase):
    """A transaction that takes its turn on one hot row retries lost
    races for as long as a persistent write, and nothing else."""

    def _failing(self, errors):
        calls = []

        @db_base.retrying(patient=True)
        def admit():
            calls.append(1)
            if errors:
                raise errors.pop(0)
            return 'admitted'
        return admit, calls

    def test_lost_races_for_a_few_seconds(self):
        admit, calls = self._failing([_deadlock()] * 100)
        self.assertRaises(exception.DatabaseBusy, admit)
        self.assertEqual(db_base.PERSISTENT_RETRIES + 1, len(calls))
        self.assertEqual(db_base.PERSISTENT_RETRIES, len(self.pauses))

    def test_other_failures_are_not_retried(self):
        admit, calls = self._failing([exception.DatabaseUnavailable()])
        self.assertRaises(exception.DatabaseUnavailable, admit)
        self.assertEqual(1, len(calls))


class TestDescribe(base.BaseTestCase):

    def test_mysql_error_class_and_number(self):
        driver = pymysql.err.OperationalError(
            2003, "Can't connect to MySQL server on '127.0.0.1'")
        error = db_exc.DBConnectionError(
            sa.exc.OperationalError('SELECT 1', {}, driver))
        self.assertEqual("OperationalError 2003: Can't connect to MySQL "
                         "server on '127.0.0.1'", db_base.describe(error))

    def test_through_our_exception(self):
        self.assertEqual('OperationalError 1213: Deadlock found when trying '
                         'to get lock; try restarting transaction',
                         db_base.describe(_deadlock().__cause__))

    def test_nothing_underneath(self):
        self.assertIsNone(db_base.describe(RuntimeError('no database')))

    def test_the_503_log_line_names_the_cause(self):
        log = self.useFixture(fixtures.FakeLogger(
            level=logging.INFO, format='%(levelname)s %(message)s'))
        self.useFixture(fixtures.MockPatchObject(
            errors, 'OUTAGES', outages.OutageLog(errors.LOG, '%s')))

        def busy(environ, start_response):
            # Routed, as RouteHook does, before the database refused.
            environ[expose.ROUTE_KEY] = next(
                route for route in routes.routes()
                if (route.method, route.template) == (
                    'POST', '/v1/reservations'))
            raise _deadlock()

        response = webob.Request.blank(
            '/v1/reservations', method='POST').get_response(
            errors.ErrorFormatter(busy))
        self.assertEqual(503, response.status_int)
        self.assertNotIn('1213', response.text)
        self.assertEqual(
            'WARNING POST /v1/reservations failed: database: '
            'OperationalError: 1213: Deadlock found when trying to get lock; '
            'try restarting transaction\n', log.output)


class TestGaleraNodeNotReady(base.BaseTestCase):

    def _filtered(self, number, message):
        driver = pymysql.err.OperationalError(number, message)
        wrapped = sa.exc.OperationalError('SELECT 1', {}, driver)
        context = types.SimpleNamespace(
            dialect=types.SimpleNamespace(name='mysql'),
            sqlalchemy_exception=wrapped, original_exception=driver,
            is_disconnect=False, connection=None)
        return exc_filters.handler(context)

    def test_1047_is_a_connection_error(self):
        error = self._filtered(1047, 'WSREP has not yet prepared node for '
                                     'application use')
        self.assertIsInstance(error, db_exc.DBConnectionError)
        self.assertEqual('OperationalError 1047: WSREP has not yet prepared '
                         'node for application use', db_base.describe(error))

    def test_other_operational_errors_stay_as_they_are(self):
        # oslo.db's own rule, which 1047 followed before: a 500.
        self.assertRaises(sa.exc.OperationalError, self._filtered, 1064,
                          'You have an error in your SQL syntax')


class TestRollbackDoneByGalera(base.BaseTestCase):

    def _dialect(self, error):
        def do_rollback(dbapi_connection):
            raise error

        dialect = types.SimpleNamespace(do_rollback=do_rollback,
                                        loaded_dbapi=pymysql)
        backends._rollback_done_by_galera(dialect)
        return dialect

    def test_1213_means_rolled_back_already(self):
        dialect = self._dialect(pymysql.err.OperationalError(
            1213, 'Deadlock found when trying to get lock; try restarting '
                  'transaction'))
        self.assertIsNone(dialect.do_rollback(object()))

    def test_other_failures_still_raise(self):
        lost = pymysql.err.OperationalError(
            2013, 'Lost connection to MySQL server during query')
        dialect = self._dialect(lost)
        self.assertRaises(pymysql.err.OperationalError, dialect.do_rollback,
                          object())
