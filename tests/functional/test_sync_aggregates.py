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

"""``reserveapi-manage sync-aggregates`` and ``mirror-status``: output and
exit codes, against the real Placement service and a fake Nova.
"""

import json
import os

import fixtures

from reserveapi_testing import inventory
from tests.functional.fixtures import nova as nova_fixture
from tests.functional.mirror import base as mirror_base

new_uuid = mirror_base.new_uuid


class TestSyncAggregates(mirror_base.MirrorAPITestCase):
    """Nova has A (compute-1, compute-2) and B (compute-3); the mirror
    never heard of them, as when nova-api's calls were lost.
    """

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(nova_fixture.NovaFixture())
        self.nova.configure(self.conf_fixture)
        self.rps = {host: self.placement.create_provider(host)
                    for host in ('compute-1', 'compute-2', 'compute-3')}
        self.agg_a, self.agg_b = sorted((new_uuid(), new_uuid()))
        self.nova.add_aggregate(['compute-1', 'compute-2'], uuid=self.agg_a)
        self.nova.add_aggregate(['compute-3'], uuid=self.agg_b)
        self.foreign = new_uuid()
        self.placement.add_aggregates(self.rps['compute-1'], self.foreign)

    def manage(self, *argv):
        return inventory.manage(self, *argv)

    def memberships(self):
        return {host: self.placement.aggregates(rp)
                for host, rp in self.rps.items()}

    def test_dry_run_reports_and_changes_nothing(self):
        before = self.memberships()

        code, out, err = self.manage('sync-aggregates', '--from-nova',
                                     '--dry-run')

        self.assertEqual((1, ''), (code, err))
        self.assertEqual([
            'Aggregate %s:' % self.agg_a,
            '  compute-1: provider %s lacks the aggregate'
            % self.rps['compute-1'],
            '  compute-2: provider %s lacks the aggregate'
            % self.rps['compute-2'],
            'Aggregate %s:' % self.agg_b,
            '  compute-3: provider %s lacks the aggregate'
            % self.rps['compute-3'],
            'Compared 2 aggregates and 3 hosts: 3 differences (dry run: '
            'nothing changed).',
            'Placement does not match the desired state yet.',
        ], out.splitlines())
        self.assertEqual(before, self.memberships())
        self.assertEqual([], self.request(
            'GET', '/v1/aggregates').json['aggregates'])

    def test_from_nova_then_prune(self):
        code, out, _err = self.manage('sync-aggregates', '--from-nova')

        self.assertEqual(0, code, out)
        self.assertIn('3 differences: 3 added.', out)
        self.assertIn('Placement matches the desired state.', out)
        self.assertEqual({'compute-1': {self.agg_a, self.foreign},
                          'compute-2': {self.agg_a},
                          'compute-3': {self.agg_b}}, self.memberships())
        self.assertEqual({'compute-1': (True, 'synced'),
                          'compute-2': (True, 'synced')},
                         self.host_states(self.agg_a))

        # compute-2 leaves A in Nova, and nova-api's call is lost.
        self.nova.host_aggregates[0]['hosts'] = ['compute-1']
        code, out, _err = self.manage('sync-aggregates', '--from-nova')

        self.assertEqual(1, code, out)
        self.assertIn('  compute-2: provider %s has the aggregate but should '
                      'not; kept: prune to remove it'
                      % self.rps['compute-2'], out)
        self.assertIn('--prune removes the extra memberships.', out)
        self.assertEqual({self.agg_a}, self.memberships()['compute-2'])

        code, out, _err = self.manage('sync-aggregates', '--from-nova',
                                      '--prune')

        self.assertEqual(0, code, out)
        self.assertIn('1 difference: 1 removed.', out)
        self.assertEqual({'compute-1': {self.agg_a, self.foreign},
                          'compute-2': set(),
                          'compute-3': {self.agg_b}}, self.memberships())
        code, out, _err = self.manage('sync-aggregates')
        self.assertEqual((0, 'Compared 2 aggregates and 3 hosts: 0 '
                             'differences.\nPlacement matches the desired '
                             'state.\n'), (code, out))

    def test_from_file(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'aggregates.json')
        with open(path, 'w') as desired:
            json.dump([{'uuid': self.agg_a, 'hosts': ['compute-2']}],
                      desired)

        code, out, _err = self.manage('sync-aggregates', '--file', path)

        self.assertEqual(0, code, out)
        self.assertEqual({'compute-1': {self.foreign},
                          'compute-2': {self.agg_a},
                          'compute-3': set()}, self.memberships())

    def test_bad_desired_state(self):
        directory = self.useFixture(fixtures.TempDir()).path
        not_json = os.path.join(directory, 'not.json')
        with open(not_json, 'w') as desired:
            desired.write('compute-1: yes')
        bad_shape = os.path.join(directory, 'shape.json')
        with open(bad_shape, 'w') as desired:
            json.dump([{'uuid': self.agg_a, 'hosts': 'compute-1'}], desired)

        for argv, code, message in (
                (('--file', not_json), 1, 'is not JSON'),
                (('--file', bad_shape), 1,
                 '[0].hosts must be a list of host names'),
                (('--file', os.path.join(directory, 'missing.json')), 1,
                 'No such file'),
                (('--file', not_json, '--from-nova'), 2,
                 'either --from-nova or --file')):
            result = self.manage('sync-aggregates', *argv)
            self.assertEqual(code, result[0], result)
            self.assertIn(message, result[2])
        self.assertEqual({'compute-1': {self.foreign}, 'compute-2': set(),
                          'compute-3': set()}, self.memberships())

    def test_nova_down(self):
        self.nova.stop()

        code, out, err = self.manage('sync-aggregates', '--from-nova')

        self.assertEqual((1, ''), (code, out))
        self.assertIn('Aggregates not synced: Nova is unavailable', err)

    def test_placement_down_leaves_it_to_the_worker(self):
        self.placement.stop()

        code, out, _err = self.manage('sync-aggregates', '--from-nova')

        self.assertEqual(1, code, out)
        self.assertIn('3 differences: 3 pending.', out)
        self.assertIn('  compute-3: not verified: Placement is unavailable',
                      out)

        code, out, _err = self.manage('mirror-status')

        self.assertEqual(0, code)
        lines = out.splitlines()
        self.assertEqual('Memberships: 0 synced, 3 pending.', lines[0])
        self.assertRegex(lines[1], r'^Oldest pending: host compute-\d '
                                   r'joining aggregate [0-9a-f-]{36}, '
                                   r'pending since \d{4}-.* UTC, failed '
                                   r'attempts: 1, next attempt .* UTC\.$')
        self.assertTrue(lines[2].startswith(
            'Last error: Placement is unavailable'))

        self.placement.start()
        self.run_worker()
        code, out, _err = self.manage('mirror-status')
        self.assertEqual((0, 'Memberships: 3 synced, 0 pending.\n'),
                         (code, out))
        self.assertEqual({'compute-1': {self.agg_a, self.foreign},
                          'compute-2': {self.agg_a},
                          'compute-3': {self.agg_b}}, self.memberships())
