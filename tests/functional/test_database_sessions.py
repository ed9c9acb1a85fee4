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

"""The database's own sessions against the heartbeats: each process
names its connections, and ``reserveapi-status upgrade check`` and
``reserveapi-dbsync contract`` see a process that records no heartbeat
(version 1.0.0 records none and names nothing).

On the machine's PostgreSQL and MariaDB, whose performance_schema is off
(as MariaDB's default is: no session can be told from another), and on
a private MariaDB with performance_schema on; then version 1.0.0's own
worker (built from git by ``python -m tests.system.upgrade.run``, cached) on
PostgreSQL, as the operator met it.
"""

import contextlib
import json
import logging
import os
import socket
import subprocess
from unittest import mock
import uuid

import fixtures
from oslo_db.sqlalchemy import engines
from oslo_db.sqlalchemy import provision
from oslo_upgradecheck import upgradecheck
from oslo_utils import timeutils
import sqlalchemy as sa

from reserveapi import version
from reserveapi.cmd import dbsync
from reserveapi.cmd import status
from reserveapi.db import backends
from reserveapi.db import base as db_base
from reserveapi.db import migration
from reserveapi.db import services as db_services
from reserveapi.db import sessions as db_sessions
from reserveapi_testing import dbservers
from reserveapi_testing import deployment
from reserveapi_testing import inventory
from reserveapi_testing import loopback
from reserveapi_testing import old_version
from tests import base as test_base
from tests.functional import base

SUCCESS = upgradecheck.Code.SUCCESS
WARNING = upgradecheck.Code.WARNING
EXPANDED = '0017_hold_pins'
"""Expanded, not contracted: 0015 drops what version 1.0 reads."""
CONTRACT = '0015_claim_columns_dropped'
VERSION = '1.1.0.dev3'


@contextlib.contextmanager
def _expanded():
    """The database as if at EXPANDED, its contract to run (not run)."""
    with mock.patch.object(migration, 'current', return_value=EXPANDED), \
            mock.patch.object(migration, 'upgrade') as upgrade:
        yield upgrade


class _SessionsMixin:
    """Connections of other processes, simulated by connections of this
    one that no hook named (or that name themselves)."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatchObject(
            version, 'version_string', return_value=VERSION))

    def connect(self, name=None):
        """A connection as another process makes it, with ``name`` or
        none, and its id on the server."""
        dialect = self.engine.dialect.name
        parameter = {'postgresql': 'application_name',
                     'mysql': 'program_name'}[dialect]
        other = sa.create_engine(
            self.engine.url, poolclass=sa.pool.NullPool,
            connect_args={parameter: name} if name else {})
        self.addCleanup(other.dispose)
        connection = other.connect()
        self.addCleanup(connection.close)
        return connection, connection.exec_driver_sql(
            'SELECT pg_backend_pid()' if dialect == 'postgresql'
            else 'SELECT CONNECTION_ID()').scalar()

    def check(self):
        result = status.Checks()._check_versions()
        return result.code, result.details

    def dbsync(self, *argv):
        code, out, _err = inventory.run_command(self, dbsync, *argv)
        return code, out

    def beat(self, pid, running=VERSION, host=None):
        db_services.beat('holder-%d' % pid, 'worker',
                         host or socket.gethostname(), pid, running,
                         migration.needed(), timeutils.utcnow(), 30)

    def own_name(self):
        """What this process's connection to the database is named."""
        with self.engine.connect() as connection:
            if connection.dialect.name == 'postgresql':
                return connection.exec_driver_sql(
                    'SELECT application_name FROM pg_stat_activity '
                    'WHERE pid = pg_backend_pid()').scalar()
            return connection.exec_driver_sql(
                "SELECT ATTR_VALUE FROM performance_schema."
                "session_connect_attrs WHERE ATTR_NAME = 'program_name' "
                "AND PROCESSLIST_ID = CONNECTION_ID()").scalar()

    def assert_named(self):
        # Connections made before VERSION was patched in go.
        self.engine.dispose()
        name = self.own_name()
        self.assertEqual(db_sessions.name(), name)
        named = db_sessions.parse(name)
        self.assertEqual((os.getpid(), VERSION),
                         (named.pid, named.version))
        self.assertTrue(socket.gethostname().startswith(named.host))

    def assert_an_unnamed_session_blocks(self, said):
        """With a session that names nothing connected, the check warns
        and ``contract`` refuses, both saying ``said``; ``--force``
        contracts."""
        self.beat(4242)
        with _expanded() as upgrade:
            code, details = self.check()
            self.assertEqual(WARNING, code, details)
            self.assertIn(said, details)
            self.assertIn('1 contract migrations are pending and must wait '
                          'until the processes behind those sessions stop.',
                          details)
            code, _out = self.dbsync('contract')
            self.assertIsInstance(code, str)
            self.assertTrue(code.startswith('Refusing to contract: '), code)
            self.assertIn(said, code)
            self.assertIn('"reserveapi-dbsync contract --force"', code)
            upgrade.assert_not_called()
            code, out = self.dbsync('contract', '--force')
            self.assertEqual(0, code, out)
            upgrade.assert_called_once_with(CONTRACT, engine=mock.ANY)

    def assert_named_processes_are_judged_by_version(self):
        """A process of ours with a heartbeat, or of this version without
        one, lets ``contract`` run; one of an older version refuses it,
        ``--force`` or not; another program's session is none of ours.
        """
        host = socket.gethostname()
        self.beat(4242)
        self.connect('reserveapi:worker:4242:%s:%s' % (VERSION, host))
        self.connect('reserveapi:manage:4343:%s:ctl-9' % VERSION)
        self.connect('psql')
        with _expanded() as upgrade:
            code, details = self.check()
            self.assertEqual(WARNING, code, details)
            self.assertEqual(
                'Running: 1 manage on ctl-9, 1 worker on %s (version %s). '
                'Connected without a heartbeat: manage pid 4343 on ctl-9 '
                '(version %s). 1 contract migrations are pending and no '
                'older version runs: finish the upgrade with '
                '"reserveapi-dbsync contract".' % (host, VERSION, VERSION),
                details)
            self.assertEqual(0, self.dbsync('contract')[0])
            upgrade.assert_called_once_with(CONTRACT, engine=mock.ANY)
            self.connect('reserveapi:worker:4444:1.0.9:ctl-9')
            self.assertIn('must wait until worker pid 4444 on ctl-9 '
                          '(version 1.0.9) stop.', self.check()[1])
            code, _out = self.dbsync('contract', '--force')
        self.assertEqual(
            'Refusing to contract: processes of a version older than 1.1 '
            'still run against this database: worker pid 4444 on ctl-9 '
            '(version 1.0.9). Stop or upgrade them first (a killed process '
            'counts as stopped 3 heartbeat intervals after its last).', code)


class TestSessions(_SessionsMixin, base.DBTestCase):
    """The machine's PostgreSQL, and its MariaDB with performance_schema
    off."""

    scenarios = base.SERVER_BACKENDS

    def blind(self):
        """The server cannot say which client named itself how."""
        if self.engine.dialect.name != 'mysql':
            return False
        with self.engine.connect() as connection:
            return not int(connection.exec_driver_sql(
                'SELECT @@performance_schema').scalar())

    def test_this_process_names_its_connections(self):
        if self.blind():
            # The names are sent, but this server keeps none to read back
            # (TestNamesOnMariaDB reads them): it says why instead.
            self.connect('reserveapi:worker:4242:%s:ctl-9' % VERSION)
            found, unnamed = db_services.sessions()
            self.assertEqual('performance_schema is off', unnamed)
            self.assertEqual([None], [session.name for session in found])
            return
        self.assert_named()

    def test_an_unnamed_session_warns_and_contract_refuses(self):
        _connection, server_id = self.connect()
        if self.engine.dialect.name == 'postgresql':
            said = ("1 sessions on this database name no process: "
                    "127.0.0.1:")
            label = 'backend pid %d' % server_id
        else:
            said = ("The server's performance_schema is off, so its 1 other "
                    "sessions on this database cannot be told apart: "
                    "127.0.0.1:")
            label = 'connection %d' % server_id
        if self.blind():
            self.assert_a_blind_server_contracts_with_a_warning(said)
        else:
            self.assert_an_unnamed_session_blocks(said)
        self.assertIn(label, self.check()[1])

    def assert_a_blind_server_contracts_with_a_warning(self, said):
        """Where no session can be told apart, refusing would refuse
        every rolling upgrade: the check warns while a contract is
        pending, and ``contract`` says why it cannot tell, and runs."""
        self.beat(4242)
        logged = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        with _expanded() as upgrade:
            code, details = self.check()
            self.assertEqual(WARNING, code, details)
            self.assertIn(said, details)
            self.assertEqual(0, self.dbsync('contract')[0])
            upgrade.assert_called_once_with(CONTRACT, engine=mock.ANY)
        self.assertIn(said, logged.output)
        self.assertIn('Contracting anyway.', logged.output)

    def test_named_processes_are_judged_by_version(self):
        if self.blind():
            # Even an older version's named process cannot be told from
            # another session here: said, and contract runs.
            self.connect('reserveapi:worker:4444:1.0.9:ctl-9')
            self.assert_a_blind_server_contracts_with_a_warning(
                "The server's performance_schema is off, so its 1 other "
                "sessions on this database cannot be told apart")
            return
        self.assert_named_processes_are_judged_by_version()

    def test_this_process_does_not_count(self):
        with self.engine.connect(), self.engine.connect():
            self.assertEqual((SUCCESS, 'No process is connected.'),
                             self.check())

    def test_an_unnamed_session_on_a_contracted_schema(self):
        self.connect()
        code, details = self.check()
        if self.blind():
            # Every session would warn, for good: said, not warned.
            self.assertEqual(SUCCESS, code, details)
            self.assertIn('cannot be told apart', details)
            return
        self.assertEqual(WARNING, code)
        self.assertIn('If one is a process of a version before 1.1, it '
                      'fails on this contracted schema: upgrade or stop it.',
                      details)


class _PerformanceSchemaMariaDB(dbservers.MariaDBServer):
    """A private MariaDB that keeps every session's attributes."""

    def _server_options(self):
        return super()._server_options() + ['--performance-schema=ON']


class TestNamesOnMariaDB(_SessionsMixin, base.DBTestCase):
    """MariaDB with performance_schema on: the connections' names."""

    def setUp(self):
        super().setUp()
        server = self.useFixture(_PerformanceSchemaMariaDB())
        engine = engines.create_engine(server.create_database('reserveapi'),
                                       max_retries=0)
        # As enginefacade sets an engine up (reserveapi.db.base).
        backends.configure(engine)
        db_sessions.name_connections(engine)
        self.addCleanup(engine.dispose)
        migration.upgrade(engine=engine)
        self.addCleanup(db_base.main_context_manager.patch_engine(engine))
        self.server_engine = engine

    @property
    def engine(self):
        return getattr(self, 'server_engine', None) or db_base.get_engine()

    def test_sessions(self):
        self.assert_named()
        connection, server_id = self.connect()
        self.assert_an_unnamed_session_blocks(
            '1 sessions on this database name no process: 127.0.0.1:')
        self.assertRegex(self.check()[1], r'127\.0\.0\.1:\d+ \(client pid '
                         r'%d, connection %d\)' % (os.getpid(), server_id))
        connection.close()
        self.assert_named_processes_are_judged_by_version()


REQUIRE_OLD_RELEASE = 'RESERVEAPI_TEST_REQUIRE_OLD_RELEASE'
"""Set (as .ci/run does): build version 1.0.0 if need be, never skip."""


class TestRelease100Worker(test_base.TestCase):
    """Version 1.0.0's worker, running on a database expanded for this
    version: it records no heartbeat and names no connection."""

    def setUp(self):
        super().setUp()
        commit = old_version.resolve('d005916')
        if not (old_version.DEFAULT_CACHE / ('%s-1.0.0' % commit[:12])
                / old_version.READY).exists() and not os.environ.get(
                    REQUIRE_OLD_RELEASE):
            self.skipTest('version 1.0.0 is not built: python -m '
                          'tests.system.upgrade.run (or tox -e upgrade) '
                          'builds it, or set %s=1' % REQUIRE_OLD_RELEASE)
        self.old = old_version.build(commit, '1.0.0')
        admin_url = provision.Backend.backends_by_database_type[
            'postgresql'].url
        admin = sa.create_engine(admin_url, isolation_level='AUTOCOMMIT',
                                 poolclass=sa.pool.NullPool)
        try:
            admin.connect().close()
        except sa.exc.OperationalError:
            self.skipTest(base.why_unavailable('postgresql',
                                               'No PostgreSQL'))
        name = 'reserveapi_old_%s' % uuid.uuid4().hex[:12]
        with admin.connect() as connection:
            connection.exec_driver_sql('CREATE DATABASE %s' % name)
        self.addCleanup(admin.dispose)
        self.addCleanup(self._drop, admin, name)
        self.url = sa.engine.make_url(admin_url).set(database=name)
        self.database = sa.create_engine(self.url, poolclass=sa.pool.NullPool)
        self.addCleanup(self.database.dispose)
        migration.upgrade(EXPANDED, engine=self.database)
        self.deployment = self.useFixture(deployment.Deployment(
            [inventory.node('node-%d' % index) for index in range(3)]))
        self.deployment.config['database']['connection'] = (
            self.url.render_as_string(hide_password=False))
        self.deployment.write_config()

    @staticmethod
    def _drop(admin, name):
        with admin.connect() as connection:
            connection.execute(sa.text(
                'SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
                'WHERE datname = :name'), {'name': name})
            connection.exec_driver_sql('DROP DATABASE IF EXISTS %s' % name)

    def sessions(self):
        """The application names of the sessions on the database."""
        with self.database.connect() as connection:
            return connection.exec_driver_sql(
                'SELECT application_name FROM pg_stat_activity WHERE '
                'datname = current_database() AND pid <> '
                'pg_backend_pid()').scalars().all()

    def test_contract_waits_for_the_old_worker(self):
        log = open(os.path.join(self.deployment.path, 'old-worker.log'), 'w')
        self.addCleanup(log.close)
        worker = subprocess.Popen(
            [os.path.join(self.old.bin_dir, 'reserveapi-worker'),
             '--config-file', self.deployment.config_file],
            stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(deployment.stop, worker)
        self.assertTrue(loopback.wait_until(
            lambda: '' in self.sessions(), 30, worker),
            'the 1.0.0 worker did not connect: %s' % self.sessions())

        checked = self.deployment.run('reserveapi-status', 'upgrade',
                                      'check', '--json')
        self.assertEqual(1, checked.returncode, checked.stderr)
        (versions,) = [check for check in json.loads(
            checked.stdout)['checks'] if check['check'] == 'Running releases']
        self.assertEqual(1, versions['result'])
        self.assertRegex(
            versions['details'],
            r'^\d+ sessions on this database name no process: 127\.0\.0\.1:'
            r'\d+ \(backend pid \d+\)\. .* 1 contract migrations are '
            r'pending and must wait until the processes behind those '
            r'sessions stop\.$')

        refused = self.deployment.run('reserveapi-dbsync', 'contract')
        self.assertEqual(1, refused.returncode, refused.stdout)
        self.assertRegex(
            deployment.not_logged(refused.stderr)[-1],
            r'^Refusing to contract: \d+ sessions on this database name no '
            r'process: 127\.0\.0\.1:\d+ \(backend pid \d+\)\. ')
        self.assertEqual(EXPANDED, migration.current(self.database))

        deployment.stop(worker)
        self.assertTrue(loopback.wait_until(lambda: not self.sessions(), 10))
        contracted = self.deployment.run('reserveapi-dbsync', 'contract')
        self.assertEqual(0, contracted.returncode, contracted.stderr)
        self.assertIn('Applied %s (contract).' % CONTRACT, contracted.stdout)
