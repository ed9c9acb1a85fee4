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


"""``reserveapi-status upgrade check``: each check against our database,
the real Placement service and a fake Nova; then the command itself, as
an operator runs it, for its exit codes.
"""

import json
import os

from oslo_db.sqlalchemy import engines
from oslo_upgradecheck import upgradecheck

from reserveapi import conf
from reserveapi.cmd import status
from reserveapi.db import base as db_base
from reserveapi.db import migration
from reserveapi_testing import deployment
from reserveapi_testing import inventory
from reserveapi_testing import loopback
from reserveapi_testing import placement as placement_fixture
from tests import base as test_base
from tests.functional.mirror import base as mirror_base

SUCCESS = upgradecheck.Code.SUCCESS
WARNING = upgradecheck.Code.WARNING
FAILURE = upgradecheck.Code.FAILURE


class TestChecks(mirror_base.MirrorAPITestCase):

    def setUp(self):
        super().setUp()
        self.checks = status.Checks()

    def check(self, name):
        result = getattr(self.checks, '_check_' + name)()
        return result.code, result.details

    def unset_placement(self):
        test_base.use_plugin_options(self, 'password', 'placement')
        self.config(group='placement', auth_type=None)

    def test_schema_at_head(self):
        self.assertEqual((SUCCESS, 'At %s.' % migration.head()),
                         self.check('schema'))

    def test_database_health(self):
        self.assertEqual((SUCCESS, 'Database OK.'),
                         self.check('database_health'))
        engine = engines.create_engine(
            'mysql+pymysql://root@127.0.0.1:%d/reserveapi'
            % loopback.free_port(), max_retries=0)
        self.addCleanup(engine.dispose)
        self.addCleanup(db_base.main_context_manager.patch_engine(engine))
        code, details = self.check('database_health')
        self.assertEqual(FAILURE, code)
        self.assertRegex(details, r"^GET /healthcheck answers 503: database "
                                  r"unavailable \(OperationalError 2003: "
                                  r"Can't connect")

    def test_file_source(self):
        path = inventory.use(self, [inventory.node('node-1')])
        self.assertEqual((SUCCESS, '%s lists 1 nodes.' % path),
                         self.check('inventory_source'))
        inventory.use(self, [inventory.node('node-1', cpus='many')])
        code, details = self.check('inventory_source')
        self.assertEqual(FAILURE, code)
        self.assertIn('properties.cpus', details)
        self.config(group='inventory', file=path + '.gone')
        self.assertEqual(
            (FAILURE, 'Cannot read [inventory] file %s.gone: No such file '
                      'or directory.' % path),
            self.check('inventory_source'))

    def test_inventory_sync_age(self):
        code, details = self.check('inventory_sync')
        self.assertEqual(WARNING, code)
        self.assertIn('No complete sync of source file', details)

        inventory.sync(self, [inventory.node('node-1')])
        code, details = self.check('inventory_sync')
        self.assertEqual(SUCCESS, code, details)
        self.assertIn('1 nodes', details)

        self.time.advance_time_seconds(
            3 * conf.CONF.inventory.sync_interval + 1)
        code, details = self.check('inventory_sync')
        self.assertEqual(WARNING, code)
        self.assertIn('Is reserveapi-worker running', details)

        self.config(group='inventory', sync_interval=0)
        code, details = self.check('inventory_sync')
        self.assertEqual(SUCCESS, code)
        self.assertIn('sync_interval is 0', details)

    def test_placement_unused_and_unconfigured(self):
        self.unset_placement()
        code, details = self.check('placement')
        self.assertEqual(SUCCESS, code)
        self.assertIn('not used yet', details)

    def test_placement_used_without_credentials(self):
        self.placement.create_provider('compute-1')
        self.assertEqual(200, self.add_host('compute-1').status_int)
        self.unset_placement()
        code, details = self.check('placement')
        self.assertEqual(FAILURE, code)
        self.assertIn('[placement] lacks auth_type, auth_url', details)
        self.assertIn('1 aggregate memberships are recorded', details)

    def test_placement_accepts_or_refuses(self):
        self.assertEqual((SUCCESS, 'Placement accepted our credentials.'),
                         self.check('placement'))
        self.conf_fixture.config(group='placement', token='nobody')
        code, details = self.check('placement')
        self.assertEqual(FAILURE, code)
        self.assertIn('Placement refused or did not answer', details)
        self.placement.stop()
        self.conf_fixture.config(group='placement',
                                 token=placement_fixture.NOAUTH_TOKEN)
        code, details = self.check('placement')
        self.assertEqual(FAILURE, code)
        self.assertIn('Placement is unavailable', details)

    def test_nova_only_when_a_feature_needs_it(self):
        self.assertEqual((SUCCESS, 'No enabled feature calls Nova.'),
                         self.check('nova'))
        self.config(group='mirror', resolve_hosts_via_nova=True)
        test_base.use_plugin_options(self, 'password', 'nova')
        code, details = self.check('nova')
        self.assertEqual(FAILURE, code)
        self.assertIn('[nova] lacks auth_type', details)
        self.assertIn('needed by [mirror] resolve_hosts_via_nova', details)
        self.use_nova()
        self.assertEqual((SUCCESS, 'Nova accepted our credentials.'),
                         self.check('nova'))

    def test_every_feature_that_calls_nova(self):
        test_base.use_plugin_options(self, 'password', 'nova')
        self.config(group='mirror', reconcile_from_nova_interval=600)
        self.config(group='reservations', orphan_interval=600)
        code, details = self.check('nova')
        self.assertEqual(FAILURE, code)
        self.assertIn('needed by [mirror] reconcile_from_nova_interval, '
                      '[reservations] orphan_interval', details)

    def test_mirror_backlog(self):
        self.assertEqual((SUCCESS, '0 memberships, none pending.'),
                         self.check('mirror_backlog'))
        self.placement.stop()
        self.assertEqual(202, self.add_host('compute-1').status_int)
        code, details = self.check('mirror_backlog')
        self.assertEqual(SUCCESS, code)
        self.assertIn('1 memberships pending, the oldest pending since',
                      details)

        self.time.advance_time_seconds(
            3 * conf.CONF.mirror.backoff_max + 1)
        code, details = self.check('mirror_backlog')
        self.assertEqual(WARNING, code)
        self.assertIn('host compute-1 joining aggregate %s' % self.aggregate,
                      details)
        self.assertIn('Is reserveapi-worker running?', details)

    def test_schema_not_current_skips_the_database_checks(self):
        self.checks._schema_problem = 'The schema is old.'
        self.assertEqual((FAILURE, 'The schema is old.'), self.check('schema'))
        for name in ('inventory_sync', 'placement', 'mirror_backlog'):
            self.assertEqual(
                (WARNING, 'Not checked until the database schema is '
                          'current.'), self.check(name), name)


class TestStatusCommand(test_base.TestCase):
    """The command as an operator runs it: output and exit code."""

    def setUp(self):
        super().setUp()
        self.deployment = self.useFixture(deployment.Deployment(
            [inventory.node('node-%d' % index) for index in range(3)]))

    def status(self, *args):
        return self.deployment.run('reserveapi-status', 'upgrade', 'check',
                                   *args)

    def test_healthy_deployment(self):
        placement = self.useFixture(placement_fixture.PlacementFixture())
        self.deployment.config['placement'] = {
            'auth_type': 'admin_token', 'endpoint': placement.endpoint,
            'token': placement_fixture.NOAUTH_TOKEN}
        self.deployment.write_config()
        self.deployment.migrate()
        synced = self.deployment.run('reserveapi-manage', 'sync-nodes')
        self.assertEqual(0, synced.returncode, synced.stderr)

        result = self.status('--json')

        self.assertEqual(0, result.returncode, result.stdout)
        checks = json.loads(result.stdout)['checks']
        self.assertEqual(
            {'Database schema': 0, 'Database privileges': 0,
             'Derived data': 0, 'Running releases': 0,
             'Database health': 0, 'Inventory source': 0,
             'Inventory sync': 0, 'Placement credentials': 0,
             'Nova credentials': 0, 'Aggregate mirror backlog': 0,
             'Project views': 0, 'Policy file JSON to YAML migration': 0},
            {check['check']: check['result'] for check in checks})
        details = {check['check']: check['details'] for check in checks}
        self.assertEqual('Placement accepted our credentials.',
                         details['Placement credentials'])
        self.assertEqual('Database OK.', details['Database health'])

    def test_placement_credentials_missing(self):
        self.deployment.config['placement'] = {
            'auth_type': 'password', 'auth_url': 'http://127.0.0.1:9/v3'}
        self.deployment.write_config()
        self.deployment.migrate()

        result = self.status()

        self.assertEqual(2, result.returncode, result.stdout)
        text = _unwrapped(result.stdout)
        self.assertIn('Check: Placement credentials Result: Failure', text)
        self.assertIn('[placement] lacks username or user_id, password, '
                      'project_name or project_id', text)

    def test_a_policy_file_that_opens_the_old_views(self):
        path = os.path.join(self.deployment.path, 'policy.yaml')
        with open(path, 'w') as stream:
            stream.write('"reserveapi:node:list_all": "role:reader"\n'
                         '"reserveapi:capacity:get": "role:admin"\n')
        self.deployment.config['oslo_policy'] = {'policy_file': path}
        self.deployment.write_config()
        self.deployment.migrate()
        text = _unwrapped(self.status().stdout)
        self.assertIn('Check: Project views Result: Warning Details: The '
                      'policy file lets every reader of any project use '
                      'reserveapi:node:list_all: each project sees every '
                      'node', text)
        self.assertNotIn('capacity:get', text)

    def test_old_schema(self):
        self.deployment.migrate('0002_mirror_pending_since')

        result = self.status()

        self.assertEqual(2, result.returncode, result.stdout)
        text = _unwrapped(result.stdout)
        self.assertIn('Check: Database schema Result: Failure', text)
        # Unwrapping loses a hyphen that ended a line.
        self.assertIn('The database schema is at 0002_mirror_pending_since, '
                      'older than version 1.0.0\'s: stop every service and '
                      'run "reserveapi dbsync upgrade".',
                      text.replace('reserveapi-dbsync', 'reserveapi dbsync'))

    def test_schema_of_the_previous_version(self):
        self.deployment.migrate(migration.BASELINE)

        result = self.status()

        self.assertEqual(2, result.returncode, result.stdout)
        text = _unwrapped(result.stdout)
        _applied, pending = migration.applied_and_pending(
            migration.BASELINE)
        expand = [m for m in pending if m.phase == migration.EXPAND]
        contract = [m for m in pending if m.phase == migration.CONTRACT]
        self.assertTrue(contract)
        self.assertIn('The database schema is at %s, behind this version '
                      '(%s): run "reserveapi dbsync expand", then '
                      '"migrate".' % (migration.BASELINE, ', '.join(
                          m.revision for m in expand)),
                      text.replace('reserveapi-dbsync', 'reserveapi dbsync'))
        expanded = self.deployment.run('reserveapi-dbsync', 'expand')
        self.assertEqual(0, expanded.returncode, expanded.stderr)
        for applied in expand:
            self.assertIn('Applied %s (expand).' % applied.revision,
                          expanded.stdout)
        self.assertNotIn('(contract)', expanded.stdout)
        text = _unwrapped(self.status().stdout)
        self.assertIn('Check: Database schema Result: Success Details: At '
                      '%s; %d contract migrations to run once no process '
                      'of the previous version runs.'
                      % (expand[-1].revision, len(contract)), text)


def _unwrapped(table):
    """The table's text as one line: wrapped details joined again."""
    return ' '.join(line.strip('|+- ') for line in table.splitlines()
                    if line.strip('|+- '))
