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

"""What the database user lacks for the migrations to come is found
before they run, on servers of our own: MariaDB with binary logging on
(where creating a trigger needs SUPER or
``log_bin_trust_function_creators``) and a user granted as the install
guide grants, and PostgreSQL with a role that owns nothing.
"""

from oslo_db.sqlalchemy import engines

from reserveapi.common import exception
from reserveapi.db import migration
from reserveapi_testing import dbservers
from tests import base


class BinaryLoggingMariaDB(dbservers.MariaDBServer):
    """A private MariaDB that writes a binary log, as Galera nodes and
    servers with point-in-time backups do."""

    def _server_options(self):
        return super()._server_options() + [
            '--log-bin=%s' % self.path + '/binlog', '--server-id=1']


def _engine(test, url):
    engine = engines.create_engine(url, max_retries=0)
    test.addCleanup(engine.dispose)
    return engine


class TestMariaDBPrivileges(base.TestCase):

    def setUp(self):
        super().setUp()
        self.server = self.useFixture(BinaryLoggingMariaDB())
        root = _engine(self, self.server.url())
        with root.begin() as connection:
            for statement in (
                    'CREATE DATABASE reserveapi CHARACTER SET utf8mb4',
                    "CREATE USER 'reserveapi'@'127.0.0.1' IDENTIFIED BY 'x'",
                    # What doc/source/install/production.rst grants.
                    "GRANT ALL PRIVILEGES ON reserveapi.* TO "
                    "'reserveapi'@'127.0.0.1'",
                    "CREATE USER 'reader'@'127.0.0.1' IDENTIFIED BY 'x'",
                    "GRANT SELECT, INSERT, UPDATE, DELETE ON reserveapi.* "
                    "TO 'reader'@'127.0.0.1'"):
                connection.exec_driver_sql(statement)
        self.root = root

    def engine_of(self, user):
        return _engine(self, 'mysql+pymysql://%s:x@127.0.0.1:%d/reserveapi'
                       % (user, self.server.port))

    def test_triggers_under_binary_logging_are_found_before_they_fail(self):
        engine = self.engine_of('reserveapi')
        missing = migration.missing_privileges(migration.migrations(),
                                               engine=engine)
        self.assertEqual(1, len(missing), missing)
        self.assertIn('Binary logging is on and the database user has no '
                      'SUPER privilege', missing[0])
        # What the check foretold refuses the upgrade before any
        # migration runs (one failing half-way would leave its tables,
        # which the next attempt could not create again).
        self.assertRaisesRegex(exception.UpgradeRefused,
                               'Nothing was migrated: Binary logging',
                               migration.upgrade, engine=engine)
        self.assertIsNone(migration.current(engine))

        with self.root.begin() as connection:
            connection.exec_driver_sql(
                'SET GLOBAL log_bin_trust_function_creators = 1')
        fresh = self.engine_of('reserveapi')
        self.assertEqual([], migration.missing_privileges(
            migration.migrations(), engine=fresh))
        # And then every migration runs as the guide's user, the
        # triggers that stand aside for bulk writes (0012) included.
        migration.upgrade(engine=fresh)
        with fresh.connect() as connection:
            bodies = connection.exec_driver_sql(
                'SELECT action_statement FROM information_schema.triggers '
                'WHERE trigger_schema = DATABASE()').scalars().all()
        self.assertEqual(7, len(bodies))
        for body in bodies:
            self.assertIn('@reserveapi_counted_by_statement IS NULL', body)

    def test_a_user_without_ddl_privileges(self):
        missing = migration.missing_privileges(
            migration.migrations(), engine=self.engine_of('reader'))
        self.assertIn('The database user lacks ALTER, CREATE, DROP, INDEX, '
                      'TRIGGER on this database', missing[0])

    def test_nothing_pending_needs_nothing(self):
        self.assertEqual([], migration.missing_privileges(
            [], engine=self.engine_of('reader')))


class TestPostgreSQLPrivileges(base.TestCase):

    def test_a_role_that_owns_nothing(self):
        server = self.useFixture(dbservers.PostgreSQLServer())
        url = server.create_database('reserveapi')
        migration.upgrade(migration.BASELINE, engine=_engine(self, url))
        with _engine(self, url).begin() as connection:
            connection.exec_driver_sql('CREATE ROLE guest LOGIN')
            connection.exec_driver_sql('REVOKE CREATE ON SCHEMA public '
                                       'FROM PUBLIC')
        guest = _engine(self, url.replace('postgres@', 'guest@'))
        _applied, pending = migration.applied_and_pending(migration.BASELINE)
        missing = migration.missing_privileges(pending, engine=guest)
        self.assertEqual(2, len(missing), missing)
        self.assertIn('may not CREATE in the schema', missing[0])
        self.assertRegex(missing[1], r'^\d+ tables belong to another role')
        self.assertEqual([], migration.missing_privileges(
            pending, engine=_engine(self, url)))
