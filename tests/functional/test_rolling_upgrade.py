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

"""A mixed fleet on one database: heartbeats of the processes and the
version each runs, what ``reserveapi-status upgrade check`` says of
them and of the schema, ``reserveapi-dbsync`` refusing a contract that
would break a running version, and the sync repairing what an older
version's writer left wrong. On every backend.
"""

import contextlib
from unittest import mock

import fixtures
from oslo_upgradecheck import upgradecheck
from oslo_utils import fixture as utils_fixture
from oslo_utils import timeutils
import sqlalchemy as sa

from reserveapi import fleet
from reserveapi import version
from reserveapi.cmd import dbsync
from reserveapi.cmd import status
from reserveapi.db import derived
from reserveapi.db import migration
from reserveapi.db import models
from reserveapi.db import services as db_services
from reserveapi_testing import inventory
from tests.functional import base

SUCCESS = upgradecheck.Code.SUCCESS
WARNING = upgradecheck.Code.WARNING
FAILURE = upgradecheck.Code.FAILURE

FAKE_CONTRACT = migration.Migration(
    revision='0099_contract_example', phase=migration.CONTRACT,
    doc='Drops what versions before 1.1 read.', oldest_version='1.1')


def _beat(holder, running, kind='api', host='ctl-1', schema_head=None,
          lifetime=30):
    db_services.beat(holder, kind, host, 100, running,
                     schema_head or migration.needed(), timeutils.utcnow(),
                     lifetime)


@contextlib.contextmanager
def _with_contract(applied):
    """The migrations as if this version had a contract step after the
    last one, applied to the database or not."""
    every = migration.migrations() + [FAKE_CONTRACT]
    at = FAKE_CONTRACT.revision if applied else migration.head()
    with mock.patch.object(migration, 'migrations', return_value=every), \
            mock.patch.object(migration, 'current', return_value=at), \
            mock.patch.object(migration, 'upgrade') as upgrade:
        yield upgrade


class _FleetTestCase(base.DBTestCase):

    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        self.time = self.useFixture(utils_fixture.TimeFixture())
        # The next version's first build, however this tree was
        # installed.
        self.useFixture(fixtures.MockPatchObject(
            version, 'version_string', return_value='1.1.0.dev3'))
        self.checks = status.Checks()

    def check(self, name):
        result = getattr(status.Checks(), '_check_' + name)()
        return result.code, result.details


class TestHeartbeats(_FleetTestCase):

    def test_a_process_records_its_release_and_leaves(self):
        self.config(service_heartbeat_interval=10)
        heartbeat = fleet.Heartbeat('worker')
        heartbeat.beat()
        (process,) = fleet.live_processes()
        # Its contract migration is not needed: it serves before it.
        self.assertEqual(('worker', version.version_string(),
                          '0017_hold_pins'),
                         (process.kind, process.version,
                          process.schema_head))
        heartbeat.beat()
        self.assertEqual(1, len(fleet.live_processes()))
        heartbeat.stop()
        self.assertEqual([], fleet.live_processes())

    def test_a_killed_process_expires_after_three_intervals(self):
        self.config(service_heartbeat_interval=10)
        fleet.Heartbeat('api').beat()
        self.time.advance_time_seconds(29)
        self.assertEqual(1, len(fleet.live_processes()))
        self.time.advance_time_seconds(2)
        self.assertEqual([], fleet.live_processes())

    def test_long_expired_rows_are_forgotten(self):
        _beat('old-process', '1.1.0')
        self.time.advance_time_seconds(2 * 86400)
        _beat('new-process', '1.1.0')
        with self.engine.connect() as connection:
            self.assertEqual(['new-process'], list(connection.execute(
                sa.select(models.Service.holder)).scalars()))


class TestVersionsCheck(_FleetTestCase):

    def test_nothing_connected(self):
        self.assertEqual((SUCCESS, 'No process is connected.'),
                         self.check('versions'))

    def test_contract_pending_before_any_process_of_this_version(self):
        with mock.patch.object(migration, 'current',
                               return_value='0017_hold_pins'):
            code, details = self.check('versions')
        self.assertEqual(WARNING, code)
        self.assertEqual('No process is connected. 1 contract migrations '
                         'are pending and no older version runs: finish '
                         'the upgrade with "reserveapi-dbsync contract".',
                         details)

    def test_this_release_alone(self):
        _beat('a', version.version_string())
        _beat('b', version.version_string(), kind='worker', host='ctl-2')
        code, details = self.check('versions')
        self.assertEqual(SUCCESS, code, details)
        self.assertEqual('Running: 1 api on ctl-1, 1 worker on ctl-2 '
                         '(version 1.1.0.dev3).', details)

    def test_a_process_ahead_of_the_schema(self):
        _beat('a', '9.0.0', schema_head='0200_from_the_future')
        code, details = self.check('versions')
        self.assertEqual(FAILURE, code)
        self.assertIn('The schema is behind the code of 1 api on ctl-1 '
                      '(version 9.0.0): run "reserveapi-dbsync expand"',
                      details)

    def test_contract_pending_while_an_older_release_runs(self):
        _beat('a', '1.0.5')
        _beat('b', version.version_string())
        # Expanded, not contracted: 0015 drops what 1.0.x reads.
        with mock.patch.object(migration, 'current',
                               return_value='0017_hold_pins'):
            code, details = self.check('versions')
        self.assertEqual(WARNING, code)
        self.assertIn('1 contract migrations are pending and must wait '
                      'until api pid 100 on ctl-1 (version 1.0.5) stop',
                      details)

    def test_contract_pending_once_the_older_release_is_gone(self):
        _beat('b', version.version_string())
        with _with_contract(applied=False):
            code, details = self.check('versions')
        self.assertEqual(WARNING, code)
        self.assertIn('"reserveapi-dbsync contract"', details)

    def test_contract_applied_while_an_older_release_runs(self):
        _beat('a', '1.0.5')
        with _with_contract(applied=True):
            code, details = self.check('versions')
        self.assertEqual(FAILURE, code)
        self.assertIn('contracted for newer versions while api pid 100 on '
                      'ctl-1 (version 1.0.5) still run', details)


class TestContractCommand(_FleetTestCase):

    def dbsync(self, *argv):
        code, out, _err = inventory.run_command(self, dbsync, *argv)
        return code, out

    def test_refused_while_an_older_release_runs(self):
        _beat('a', '1.0.5', host='ctl-3')
        with _with_contract(applied=False) as upgrade:
            code, _out = self.dbsync('contract')
        upgrade.assert_not_called()
        self.assertEqual(
            'Refusing to contract: processes of a version older than 1.1 '
            'still run against this database: api pid 100 on ctl-3 (version '
            '1.0.5). Stop or upgrade them first (a killed process counts '
            'as stopped 3 heartbeat intervals after its last).', code)

    def test_runs_once_they_are_gone(self):
        _beat('a', version.version_string())
        with _with_contract(applied=False) as upgrade:
            code, out = self.dbsync('contract')
        self.assertEqual(0, code)
        upgrade.assert_called_once_with(FAKE_CONTRACT.revision,
                                        engine=mock.ANY)
        self.assertIn('Applied 0099_contract_example (contract).', out)

    def test_migrate_reports_and_repairs(self):
        inventory.sync(self, [inventory.node('node-%d' % index,
                                             traits=['CUSTOM_RAID'])
                              for index in range(5)])
        with self.engine.begin() as connection:
            connection.execute(sa.update(models.Node).values(
                traits_text=','))
        code, details = self.check('derived_data')
        self.assertEqual(FAILURE, code)
        self.assertIn('5 node texts', details)
        code, out = self.dbsync('migrate', '--max-count', '2')
        self.assertEqual(1, code, out)
        self.assertIn('run "reserveapi-dbsync migrate" again', out)
        code, out = self.dbsync('migrate')
        self.assertEqual(0, code, out)
        self.assertIn('Nothing left to migrate.', out)
        self.assertEqual(SUCCESS, self.check('derived_data')[0])


class TestSyncRepairs(_FleetTestCase):
    """What an older version's sync leaves (the rows of record written,
    the texts not) is found by the next sync of this version, although
    the document did not change."""

    def test_the_sync_repairs_texts_it_calls_unchanged(self):
        nodes = [inventory.node('node-%d' % index,
                                traits=['CUSTOM_NVME'],
                                capabilities='boot_mode:uefi')
                 for index in range(7)]
        path = inventory.sync_path(self, nodes)
        with self.engine.begin() as connection:
            connection.execute(sa.update(models.Node).values(
                traits_text=',', capabilities_text=','))
        self.assertEqual(7, derived.check_all()['node texts'].found)
        self.config(group='inventory', file=path)
        counts = inventory.inventory_sync.sync()
        self.assertEqual(7, counts['unchanged'])
        self.assertEqual(0, derived.check_all()['node texts'].found)
