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

"""The libraries installed are the versions reserveapi/compat.py's
patches were written for, a patch refuses any other, and each still
finds what it reaches into."""

import importlib.metadata
import types

import fixtures
from oslo_config import cfg
from oslo_db.sqlalchemy import engines
from oslotest import base
from pecan import util as pecan_util
import sqlalchemy as sa

from reserveapi import compat
from reserveapi.common import exception


class VersionsTest(base.BaseTestCase):

    def test_installed_versions_are_the_ones_written_for(self):
        for library in compat.LIBRARIES:
            self.assertEqual(importlib.metadata.version(library.name),
                             compat.check(library))

    def test_another_version_is_named_with_the_range(self):
        installed = importlib.metadata.version('pecan')
        error = self.assertRaises(exception.UnsupportedLibrary, compat.check,
                                  compat.Library('pecan', '>=99,<100'))
        self.assertEqual(
            'pecan %s is installed, but reserveapi/compat.py uses private '
            'API of pecan as it is in versions >=99,<100: install one of '
            'those, or check the patch against %s and widen its range.'
            % (installed, installed), str(error))

    def test_a_patch_is_not_applied_on_another_version(self):
        self.useFixture(fixtures.MockPatchObject(
            compat, 'PECAN', compat.Library('pecan', '<1')))
        original = pecan_util._getargspec
        self.assertRaises(exception.UnsupportedLibrary,
                          compat.remember_pecan_argspecs)
        self.assertIs(original, pecan_util._getargspec)


class PatchesTest(base.BaseTestCase):

    def test_pool_like_connects_as_the_old_pool(self):
        engine = sa.create_engine('sqlite://', poolclass=sa.pool.NullPool)
        self.addCleanup(engine.dispose)
        pool = compat.pool_like(engine.pool, sa.pool.QueuePool,
                                pool_size=2, max_overflow=0)
        self.addCleanup(pool.dispose)
        self.assertIsInstance(pool, sa.pool.QueuePool)
        self.assertEqual(2, pool.size())
        self.assertIs(engine.pool._creator, pool._creator)
        self.assertIs(engine.pool._dialect, pool._dialect)
        connection = pool.connect()
        self.addCleanup(connection.close)
        self.assertEqual([(1,)], connection.cursor().execute(
            'SELECT 1').fetchall())

    def test_wrap_rollback(self):
        calls = []
        dialect = types.SimpleNamespace(
            do_rollback=lambda connection: calls.append(('rollback',
                                                         connection)))

        def wrapper(rollback, connection):
            calls.append(('wrapper', connection))
            rollback(connection)

        compat.wrap_rollback(dialect, wrapper)
        dialect.do_rollback('connection')
        self.assertEqual([('wrapper', 'connection'),
                          ('rollback', 'connection')], calls)

    def test_oslo_db_sqlite_begin_listener_is_found(self):
        engine = engines.create_engine('sqlite://')
        self.addCleanup(engine.dispose)
        self.assertEqual(
            [compat.OSLO_DB_SQLITE_BEGIN],
            [listener.__name__ for listener in
             compat.oslo_db_sqlite_begin_listeners(engine)])


class OsloConfigTest(base.BaseTestCase):
    """What the operator's mistakes are read back with."""

    def test_an_option_and_the_value_it_refused(self):
        conf = cfg.ConfigOpts()
        conf.register_opt(cfg.IntOpt('workers', min=1,
                                     deprecated_name='threads'), 'api')
        path = self.useFixture(fixtures.TempDir()).join('a.conf')
        with open(path, 'w') as stream:
            stream.write('[api]\nworkers = many\n')
        conf(['--config-file', path])
        self.assertEqual(['threads'], [
            deprecated.name for deprecated in compat.registered_option(
                conf, 'workers', 'api').deprecated_opts])
        value, location = compat.given_value(conf, 'workers', 'api')
        self.assertEqual(('many', path), (value, location.detail))

    def test_not_on_another_version(self):
        self.useFixture(fixtures.MockPatchObject(
            compat, 'OSLO_CONFIG', compat.Library('oslo.config', '<1')))
        self.assertRaises(exception.UnsupportedLibrary,
                          compat.registered_option, cfg.CONF, 'debug')
