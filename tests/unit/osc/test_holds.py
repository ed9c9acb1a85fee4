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


"""``openstack baremetal reservation hold ...``: what each command asks
of the client and shows, without a service (tests/functional/
test_client.py holds the client to the real API)."""

import io
from unittest import mock

import fixtures
from osc_lib import exceptions
from oslotest import base
from wsme import types as wtypes

from reserveapi import client
from reserveapi.api.controllers.v1 import holds as api_holds
from reserveapi.holds import admission
from reserveapi.osc import holds

HOLD = {'uuid': 'h-1', 'project_id': 'p', 'amount': 2,
        'request_spec': {'memory_mb': 1024}, 'state': 'pending',
        'links': [{'href': 'http://x/v1/holds/h-1', 'rel': 'self'}]}


class HoldCommandTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.app = mock.Mock(stdout=io.StringIO())
        self.holds = self.app.client_manager.baremetal_reservation.holds

    def run_command(self, command_class, *argv):
        command = command_class(self.app, None)
        parsed = command.get_parser('openstack').parse_args(list(argv))
        return command.take_action(parsed)


class TestCreate(HoldCommandTestCase):

    def test_options_make_the_request(self):
        self.holds.create.return_value = HOLD
        names, values = self.run_command(
            holds.CreateHold, '--project', 'p', '--amount', '2',
            '--start', '2030-01-31T08:00:00+00:00',
            '--end', '2030-02-01T08:00:00Z',
            '--memory-mb', '1024',
            '--extra-spec', 'resources:CUSTOM_GOLD=1')
        self.holds.create.assert_called_once_with(
            'p', 2, {'memory_mb': 1024,
                     'extra_specs': {'resources:CUSTOM_GOLD': '1'}},
            '2030-01-31T08:00:00+00:00', '2030-02-01T08:00:00Z',
            shard=None, conductor_group=None, at_end=None)
        self.assertEqual(('uuid', 'project_id', 'amount', 'request_spec',
                          'state'), names)
        self.assertEqual({'memory_mb': 1024}, values[3].machine_readable())

    def test_at_end(self):
        self.holds.create.return_value = dict(HOLD, at_end='delete')
        names, values = self.run_command(
            holds.CreateHold, '--project', 'p', '--amount', '1',
            '--start', 's', '--end', 'e', '--at-end', 'delete')
        self.assertEqual('delete',
                         self.holds.create.call_args.kwargs['at_end'])
        self.assertEqual('delete', values[names.index('at_end')])
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', io.StringIO()))
        self.assertRaises(SystemExit, self.run_command, holds.CreateHold,
                          '--project', 'p', '--amount', '1', '--start', 's',
                          '--end', 'e', '--at-end', 'later')

    def test_at_end_choices_are_the_services(self):
        self.assertEqual(admission.AT_END, holds.AT_END)

    def test_project_amount_and_window_are_required(self):
        # argparse prints its usage there.
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', io.StringIO()))
        for missing in ('--project', '--amount', '--start', '--end'):
            argv = ['--project', 'p', '--amount', '1', '--start', 's',
                    '--end', 'e']
            del argv[argv.index(missing):argv.index(missing) + 2]
            self.assertRaises(SystemExit, self.run_command,
                              holds.CreateHold, *argv)


class TestList(HoldCommandTestCase):

    def test_filters_and_paging(self):
        self.holds.list.return_value = iter([HOLD])
        columns, rows = self.run_command(
            holds.ListHolds, '--project', 'p', '--resource-class',
            'CUSTOM_GOLD', '--sort', 'start:desc', '--long')
        self.holds.list.assert_called_once_with(
            marker=None, sort_key='start', sort_dir='desc', project_id='p',
            resource_class='CUSTOM_GOLD')
        self.assertEqual(holds.ListHolds.columns
                         + holds.ListHolds.long_columns, columns)
        self.assertEqual([('h-1', 'p', 2, '', '', '', 'pending', '', '')],
                         [row[:9] for row in rows])

    def test_what_each_hold_pinned(self):
        self.holds.list.return_value = iter([dict(
            HOLD, state='degraded', pinned=1, in_use=2, at_end='delete',
            shortfall=1, flavor_id='f-1',
            boot_resource_class='CUSTOM_HOLD_1')])
        columns, rows = self.run_command(holds.ListHolds, '--long')
        (row,) = rows
        shown = dict(zip(columns, row, strict=True))
        self.assertEqual(
            {'State': 'degraded', 'Pinned': 1, 'In Use': 2,
             'At End': 'delete', 'Shortfall': 1, 'Flavor ID': 'f-1',
             'Boot Resource Class': 'CUSTOM_HOLD_1'},
            {column: shown[column] for column in (
                'State', 'Pinned', 'In Use', 'At End', 'Shortfall',
                'Flavor ID', 'Boot Resource Class')})

    def test_sort_keys_are_the_services(self):
        self.assertEqual(set(api_holds.SORT_KEYS), set(holds.SORT_KEYS))
        self.assertRaises(exceptions.CommandError, self.run_command,
                          holds.ListHolds, '--sort', 'start_at')


class TestSet(HoldCommandTestCase):

    def test_end_and_amount(self):
        self.holds.update.return_value = HOLD
        self.run_command(holds.SetHold, 'h-1', '--amount', '3')
        self.holds.update.assert_called_once_with('h-1', end=None, amount=3)

    def test_nothing_to_set_is_refused(self):
        error = self.assertRaises(exceptions.CommandError, self.run_command,
                                  holds.SetHold, 'h-1')
        self.assertEqual('Give --end, --amount or both.', str(error))
        self.holds.update.assert_not_called()

    def test_only_what_the_service_takes(self):
        self.assertEqual(
            {'end', 'amount'},
            {attribute.name for attribute in
             wtypes.list_attributes(api_holds.HoldUpdate)})


class TestDelete(HoldCommandTestCase):

    def test_each_hold_once_and_failures_counted(self):
        self.holds.cancel.side_effect = [
            None, client.NotFound(404, 'reserveapi.hold_not_found',
                                  'Hold h-2 could not be found.', 'req-1')]
        error = self.assertRaises(exceptions.CommandError, self.run_command,
                                  holds.DeleteHold, 'h-1', 'h-2')
        self.assertEqual('1 of 2 holds could not be cancelled.', str(error))
        self.assertEqual([mock.call('h-1'), mock.call('h-2')],
                         self.holds.cancel.call_args_list)
        self.assertEqual('Cancelled hold h-1.\n', self.app.stdout.getvalue())
