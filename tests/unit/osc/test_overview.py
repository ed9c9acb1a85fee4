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

"""``openstack baremetal reservation [--help]`` lists our commands, not
every ``baremetal`` command python-ironicclient has."""

import importlib.metadata
import os
import subprocess
import sys

from oslotest import base

from reserveapi.osc import overview


class TestOverview(base.BaseTestCase):

    def test_every_command_of_ours_once(self):
        names = sorted(
            entry_point.name[len(overview.PREFIX) + 1:].replace('_', ' ')
            for entry_point in importlib.metadata.entry_points(
                group=overview.COMMAND_GROUP)
            if entry_point.name != overview.PREFIX)
        self.assertIn('capacity', names)
        listed = [line.strip().split('  ')[0]
                  for line in overview.listing().splitlines()
                  if not line.startswith('    ')]
        self.assertEqual(names, listed)

    def openstack(self, *args):
        return subprocess.run(
            [os.path.join(os.path.dirname(sys.executable), 'openstack'),
             'baremetal', 'reservation'] + list(args), capture_output=True,
            text=True, check=False, timeout=120)

    def test_help_of_the_group(self):
        process = self.openstack('--help')
        self.assertEqual(0, process.returncode, process.stderr)
        self.assertIn('  node list ', process.stdout)
        self.assertNotIn('baremetal allocation', process.stdout)
        self.assertLess(len(process.stdout.splitlines()), 40)

    def test_a_mistyped_command_is_one_line(self):
        process = self.openstack('lsit')
        self.assertEqual(
            (1, ['"openstack baremetal reservation lsit" is no command; '
                 '"openstack baremetal reservation" lists them.']),
            (process.returncode, process.stderr.splitlines()))
