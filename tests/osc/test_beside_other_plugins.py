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

"""``openstack`` with python-blazarclient (Blazar owns ``reservation``)
and python-ironicclient (``baremetal``) installed beside us: no shared
command, API name or option, ``openstack --help`` works, and our commands
run against a served API while Blazar's options are parsed too.
"""

import importlib.metadata
import subprocess

from oslotest import base

from reserveapi.osc import plugin
from reserveapi_testing import deployment
from tests.functional import test_openstack_commands

OUR_GROUP = 'openstack.baremetal_reservation.v1'


def commands(group):
    """The command names (``baremetal reservation list``) of a group."""
    return {entry_point.name.replace('_', ' ') for entry_point
            in importlib.metadata.entry_points(group=group)}


def other_command_groups():
    return {group for distribution in importlib.metadata.distributions()
            for group in {entry_point.group
                          for entry_point in distribution.entry_points}
            if group.startswith('openstack.') and group != OUR_GROUP
            and group != 'openstack.cli.extension'}


class TestNoClash(base.BaseTestCase):

    def test_the_other_plugins_are_installed(self):
        extensions = {entry_point.name: entry_point.value
                      for entry_point in importlib.metadata.entry_points(
                          group='openstack.cli.extension')}
        self.assertEqual('blazarclient.osc.plugin',
                         extensions['reservation'])
        self.assertEqual('ironicclient.osc.plugin', extensions['baremetal'])
        self.assertEqual('reserveapi.osc.plugin',
                         extensions[plugin.API_NAME])

    def test_no_command_of_ours_is_anyone_elses(self):
        ours = commands(OUR_GROUP)
        self.assertIn('baremetal reservation list', ours)
        groups = other_command_groups()
        self.assertIn('openstack.reservation.v1', groups)
        self.assertIn('openstack.baremetal.v1', groups)
        for group in groups:
            self.assertEqual(set(), ours & commands(group), group)
        # Nothing of ours in Blazar's command space.
        self.assertEqual([], [name for name in ours
                              if name.startswith('reservation ')])

    def test_help_lists_every_plugin(self):
        process = subprocess.run(
            [deployment.script('openstack'), '--help'], capture_output=True,
            text=True, check=False, timeout=deployment.COMMAND_TIMEOUT)
        self.assertEqual(0, process.returncode, process.stderr)
        self.assertNotIn('conflicting', process.stderr)
        self.assertNotIn('Traceback', process.stderr)
        # python-blazarclient 4.6 names a class it lacks; nothing else may
        # complain, and nothing of ours.
        self.assertEqual([], [
            line for line in process.stderr.splitlines()
            if not line.startswith("Could not load 'reservation_")])
        for needle in ('--os-baremetal-reservation-api-version',
                       '--os-reservation-api-version',
                       '--os-baremetal-api-version',
                       'baremetal reservation create',
                       'baremetal reservation node list',
                       'reservation lease create', 'baremetal node list'):
            self.assertIn(needle, process.stdout)


class TestOurCommandsBesideBlazar(
        test_openstack_commands.OpenStackCommandTestCase):

    def test_both_version_options_parse(self):
        listed = self.json('--os-reservation-api-version', '1',
                           '--os-baremetal-reservation-api-version', '1.0',
                           'baremetal', 'reservation', 'list')
        self.assertIsInstance(listed, list)

    def test_blazar_commands_are_blazars(self):
        self.openstack('reservation', 'lease', 'list', '--help')
        self.openstack('reservation', 'list', expect=2)
