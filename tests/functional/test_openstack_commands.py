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


"""``openstack baremetal reservation ...`` as a user runs it: the ``openstack``
command of python-openstackclient, in a subprocess, against
``reserveapi-api`` serving on loopback without Keystone (auth type
``none``), its aggregate mirror writing into the real Placement.

One deployment per test class: each ``openstack`` run costs a second of
Python start-up already.
"""

import json
import os
import re
import subprocess
import uuid

import fixtures
from oslotest import base
import testresources

from reserveapi.api import microversion
from reserveapi_testing import deployment
from reserveapi_testing import examples
from reserveapi_testing import inventory
from reserveapi_testing import placement as placement_fixture

FOREIGN_PLUGIN_ERROR = re.compile(
    r"Could not load '(?!baremetal_reservation_)")
"""What cliff prints for another plugin's broken entry point, on every
command (python-blazarclient 4.6 names a class it lacks, tox -e osc)."""
NODES = 6
MAX_LIMIT = 2
"""The service's page size, so that listings cross pages."""


class ServedDeployment(fixtures.Fixture):
    """The real Placement, and a deployment whose API serves on loopback
    and mirrors into it; ``NODES`` nodes synced by reserveapi-manage.
    """

    def _setUp(self):
        self.placement = self.useFixture(
            placement_fixture.PlacementFixture())
        self.deployment = self.useFixture(deployment.Deployment(
            [inventory.node('node-%d' % index) for index in range(NODES)]))
        self.deployment.config['api']['max_limit'] = str(MAX_LIMIT)
        self.deployment.config['placement'] = {
            'auth_type': 'admin_token', 'endpoint': self.placement.endpoint,
            'token': placement_fixture.NOAUTH_TOKEN}
        self.deployment.write_config()
        self.deployment.migrate()
        synced = self.deployment.run('reserveapi-manage', 'sync-nodes')
        if synced.returncode:
            raise RuntimeError(synced.stderr)
        self.deployment.start_api()


class _ServedDeploymentResource(testresources.TestResourceManager):
    """Shared by every test here: made once per test process (the test
    suite is testresources' OptimisingTestSuite), not once per test.
    """

    def make(self, dependency_resources):
        served = ServedDeployment()
        served.setUp()
        return served

    def clean(self, served):
        served.cleanUp()


class OpenStackCommandTestCase(testresources.ResourcedTestCase,
                               base.BaseTestCase):

    resources = [('served', _ServedDeploymentResource())]

    @property
    def deployment(self):
        return self.served.deployment

    @property
    def placement(self):
        return self.served.placement

    def openstack(self, *args, expect=0):
        """Run ``openstack ARGS``; its stdout, after checking the exit
        code (and that nothing went to stderr on success).
        """
        environ = {name: value for name, value in os.environ.items()
                   if not name.startswith('OS_')}
        process = subprocess.run(
            [deployment.script('openstack'), '--os-auth-type', 'none',
             '--os-endpoint', self.deployment.endpoint] + list(args),
            capture_output=True, text=True, env=environ, check=False,
            timeout=deployment.COMMAND_TIMEOUT)
        self.assertEqual(expect, process.returncode,
                         process.stdout + process.stderr)
        self.stderr = ''.join(
            line for line in process.stderr.splitlines(keepends=True)
            if not FOREIGN_PLUGIN_ERROR.match(line))
        if expect == 0:
            self.assertEqual('', self.stderr)
        return process.stdout

    def json(self, *args):
        return json.loads(self.openstack(*(args + ('-f', 'json'))))

    def reserve(self, *args):
        """Create a reservation; its fields as ``-f json`` shows them."""
        spec = os.path.join(self.deployment.path, 'spec.json')
        with open(spec, 'w') as stream:
            json.dump(examples.REQUEST_SPEC, stream)
        return self.json('baremetal', 'reservation', 'create',
                         '--instance-uuid', str(uuid.uuid4()),
                         '--request-spec', '@' + spec, *args)

    def assertOneLineError(self, *needles):
        (line,) = self.stderr.splitlines()
        for needle in needles:
            self.assertIn(needle, line)


class TestReservationCommands(OpenStackCommandTestCase):

    def test_create_from_options_then_show_and_list(self):
        instance = str(uuid.uuid4())
        table = self.openstack(
            'baremetal', 'reservation', 'create', '--instance-uuid',
            instance, '--host', 'compute-1', '--memory-mb', '1024',
            '--vcpus', '8',
            '--extra-spec', 'resources:CUSTOM_BAREMETAL_GOLD=1',
            '--extra-spec', 'trait:CUSTOM_RAID=required',
            '--image-property', 'hw_architecture=x86_64')
        self.assertRegex(table, r'\| state +\| reserved +\|')
        self.assertRegex(table, r'\| instance_uuid +\| %s +\|' % instance)

        listed = self.json('baremetal', 'reservation', 'list', '--host',
                           'compute-1', '--long')
        (mine,) = [row for row in listed if row['Instance UUID'] == instance]
        self.assertEqual(
            ['UUID', 'Instance UUID', 'Host', 'Node Name', 'State',
             'Node UUID', 'Resource Class', 'Project ID', 'Created At',
             'Updated At', 'Expires At'], list(mine))
        shown = self.json('baremetal', 'reservation', 'show', mine['UUID'])
        self.assertEqual(
            (mine['UUID'], 'compute-1', 'reserved', mine['Node Name'],
             'CUSTOM_BAREMETAL_GOLD'),
            (shown['uuid'], shown['host'], shown['state'],
             shown['node_name'], shown['resource_class']))
        self.assertNotIn('links', shown)

    def test_confirm_takeover_delete(self):
        reservation = self.reserve('--host', 'compute-2')
        uuid_ = reservation['uuid']
        self.assertEqual('active', self.json(
            'baremetal', 'reservation', 'confirm', uuid_)['state'])
        moved = self.json('baremetal', 'reservation', 'takeover', uuid_,
                          '--host', 'compute-3')
        self.assertEqual(('compute-3', 'active'),
                         (moved['host'], moved['state']))

        self.assertEqual(
            'Released reservation %s.\n' % uuid_,
            self.openstack('baremetal', 'reservation', 'delete', uuid_))
        self.openstack('baremetal', 'reservation', 'show', uuid_, expect=1)
        self.assertOneLineError(
            'Reservation %s could not be found.' % uuid_,
            '(HTTP 404 reserveapi.reservation_not_found)', 'Request-ID: req-')

    def test_an_empty_list_is_a_table_with_its_header(self):
        table = self.openstack('baremetal', 'reservation', 'list', '--host',
                               'compute-without-reservations')
        self.assertEqual(
            ['+------+---------------+------+-----------+-------+',
             '| UUID | Instance UUID | Host | Node Name | State |',
             '+------+---------------+------+-----------+-------+',
             '+------+---------------+------+-----------+-------+'],
            table.splitlines())
        self.assertEqual([], self.json('baremetal', 'reservation', 'list',
                                       '--host', 'compute-nothing'))

    def test_a_delete_of_several_confirms_each(self):
        first = self.reserve('--host', 'compute-5')['uuid']
        second = self.reserve('--host', 'compute-5')['uuid']
        missing = str(uuid.uuid4())
        output = self.openstack('baremetal', 'reservation', 'delete', first,
                                missing, second, expect=1)
        self.assertEqual(['Released reservation %s.' % first,
                          'Released reservation %s.' % second],
                         output.splitlines())
        self.assertIn('Reservation %s not released' % missing, self.stderr)
        self.assertIn('1 of 3 reservations could not be released.',
                      self.stderr)

    def test_refusal_is_one_line_with_the_detail(self):
        self.openstack('baremetal', 'reservation', 'create',
                       '--instance-uuid', str(uuid.uuid4()), '--host',
                       'compute-1',
                       '--extra-spec', 'resources:CUSTOM_NOPE=1', expect=1)
        self.assertOneLineError(
            'No valid node: %d nodes: ' % NODES, ' wrong resource class',
            '(HTTP 409 reserveapi.no_valid_node) (Request-ID: req-')

    def test_capacity(self):
        self.reserve('--host', 'compute-4')
        table = self.openstack('baremetal', 'reservation', 'capacity')
        self.assertIn('| Resource Class        | Total | Available | '
                      'Reserved | Memory MB | VCPUs | Local GB |', table)
        (gold,) = self.json('baremetal', 'reservation', 'capacity',
                            '--host', 'compute-4')
        self.assertEqual(
            {'Resource Class': 'CUSTOM_BAREMETAL_GOLD', 'Total': NODES,
             'Reserved By Host': 1},
            {key: gold[key] for key in ('Resource Class', 'Total',
                                        'Reserved By Host')})
        self.assertEqual(NODES, gold['Available'] + gold['Reserved'])

    def test_candidates_from_a_spec_file(self):
        # The flavor and image path: tests/unit/osc/test_candidates.py.
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'spec.json')
        with open(path, 'w') as stream:
            json.dump(examples.REQUEST_SPEC, stream)
        output = self.openstack('baremetal', 'reservation', 'candidates',
                                '--spec', path, '--limit', '1')
        (gold,) = self.json('baremetal', 'reservation', 'capacity')
        self.assertIn('%d of %d nodes could be reserved now.'
                      % (gold['Available'], NODES), output)
        self.assertIn('| Shard | Conductor Group | Nodes |', output)
        if gold['Available']:
            self.assertRegex(output, r'Best fit first: node-\d\n$')
        self.openstack('baremetal', 'reservation', 'candidates', '--spec',
                       path, '--shard', 'nowhere', '--limit', '0')
        self.assertIn('| in another partition | ',
                      self.openstack('baremetal', 'reservation',
                                     'candidates', '--spec', path,
                                     '--shard', 'nowhere'))

    def test_microversion_option(self):
        self.json('--os-baremetal-reservation-api-version', '1.0',
                  'baremetal', 'reservation', 'list')
        self.openstack('--os-baremetal-reservation-api-version', '1.9',
                       'baremetal', 'reservation', 'list', expect=1)
        self.assertIn('Version 1.9 is not supported; this service supports '
                      '1.0 to %s. (HTTP 406 '
                      'reserveapi.version_not_acceptable)'
                      % microversion.VERSIONS[-1], self.stderr)


class TestNodeAndAggregateCommands(OpenStackCommandTestCase):

    def test_node_list_reads_every_page_or_stops_at_the_limit(self):
        names = self.openstack('baremetal', 'reservation', 'node', 'list',
                               '--sort', 'name', '-f', 'value', '-c', 'Name')
        self.assertEqual(['node-%d' % index for index in range(NODES)],
                         names.split())
        page = self.json('baremetal', 'reservation', 'node', 'list',
                         '--sort', 'name', '--limit', '3', '--marker',
                         inventory.node_uuid('node-0'), '--long')
        self.assertEqual(['node-1', 'node-2', 'node-3'],
                         [node['Name'] for node in page])
        self.assertEqual(['CUSTOM_RAID', 'HW_CPU_X86_AVX2'],
                         page[0]['Traits'])
        self.assertEqual('uefi', page[0]['Capabilities']['boot_mode'])

    def test_node_show_by_name(self):
        table = self.openstack('baremetal', 'reservation', 'node', 'show',
                               'node-2')
        self.assertRegex(table, r'\| uuid +\| %s +\|'
                         % inventory.node_uuid('node-2'))
        self.assertRegex(table, r"\| traits +\| CUSTOM_RAID, "
                                r"HW_CPU_X86_AVX2 +\|")

    def test_aggregate_sync_list_show(self):
        provider = self.placement.create_provider('compute-7')
        aggregate = str(uuid.uuid4())
        dry = self.json('baremetal', 'reservation', 'aggregate', 'sync',
                        '--dry-run', '--aggregate', '%s=compute-7' % aggregate)
        self.assertEqual([{'Aggregate UUID': aggregate, 'Host': 'compute-7',
                           'Provider UUID': provider,
                           'Difference': 'missing', 'Action': 'none',
                           'Detail': None}], dry)
        self.assertEqual(set(), self.placement.aggregates(provider))

        done = self.json('baremetal', 'reservation', 'aggregate', 'sync',
                         '--aggregate', '%s=compute-7' % aggregate)
        self.assertEqual(['added'], [row['Action'] for row in done])
        self.assertEqual({aggregate}, self.placement.aggregates(provider))

        (listed,) = [row for row in self.json(
            'baremetal', 'reservation', 'aggregate', 'list')
            if row['UUID'] == aggregate]
        self.assertEqual({'UUID': aggregate, 'State': 'synced',
                          'Member Hosts': ['compute-7'],
                          'Pending Hosts': []}, listed)
        table = self.openstack('baremetal', 'reservation', 'aggregate',
                               'show', aggregate)
        self.assertRegex(table, r'\| hosts +\| compute-7: member, synced +\|')
