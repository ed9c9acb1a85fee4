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

"""What an operator's terminal shows of our commands: their own output
only, whatever the installed libraries warn about.

tox -e py3 runs this with the pinned libraries, tox -e latest with the
newest releases, where a new library's warning shows first.
"""

import importlib.metadata
import os
import subprocess
import sys

from oslotest import base

import reserveapi
from reserveapi_testing import deployment

SERVICE_COMMANDS = sorted(
    entry.name for entry in importlib.metadata.entry_points(
        group='console_scripts')
    if entry.value.startswith('reserveapi.cmd.'))
"""Every console script of the service (reserveapi-nova-compute is
nova-compute's own process, with Nova's logging)."""

TIMEOUT = 60


def run(argv):
    return subprocess.run(argv, capture_output=True, text=True, check=False,
                          timeout=TIMEOUT)


def warned(output):
    return [line for line in output.splitlines()
            if 'Warning' in line or 'warnings.warn' in line]


class TestCommandsSayOnlyTheirOwn(base.BaseTestCase):

    def test_every_command_is_found(self):
        self.assertEqual(
            ['reserveapi-api', 'reserveapi-dbsync', 'reserveapi-manage',
             'reserveapi-status', 'reserveapi-worker'], SERVICE_COMMANDS)

    def test_version_is_one_line_and_stderr_is_silent(self):
        said = {name: run([deployment.script(name), '--version'])
                for name in SERVICE_COMMANDS}
        versions = {process.stdout for process in said.values()}
        self.assertEqual(1, len(versions), said)
        self.assertRegex(versions.pop(), r'^\d+\.\d+\.\d+\S*\n$')
        self.assertEqual(
            {name: (0, '') for name in SERVICE_COMMANDS},
            {name: (process.returncode, process.stderr)
             for name, process in said.items()})

    def test_help_prints_no_warning(self):
        said = {name: run([deployment.script(name), '--help'])
                for name in SERVICE_COMMANDS}
        self.assertEqual(
            {name: (0, []) for name in SERVICE_COMMANDS},
            {name: (process.returncode,
                    warned(process.stdout + process.stderr))
             for name, process in said.items()})
        for process in said.values():
            self.assertIn('usage:', process.stdout)

    def test_the_wsgi_module_prints_no_warning(self):
        process = run([sys.executable, '-c', 'import reserveapi.wsgi'])
        self.assertEqual((0, '', ''), (
            process.returncode, process.stdout, process.stderr))


class TestWarningsAreRouted(base.BaseTestCase):
    """A warning raised where a library's file is, and one raised in our
    code, as our commands see them before logging is set up."""

    def warn_from(self, filename):
        return run([sys.executable, '-c', (
            'import reserveapi.cmd, warnings\n'
            'warnings.warn_explicit("the message", UserWarning, %r, 7)'
            % filename)])

    def test_a_library_warning_is_not_shown(self):
        library = '/usr/lib/python3/dist-packages/somelib/__init__.py'
        process = self.warn_from(library)
        self.assertEqual((0, '', ''), (
            process.returncode, process.stdout, process.stderr))

    def test_our_warning_is_one_line(self):
        ours = os.path.join(os.path.dirname(reserveapi.__file__),
                            'reservations.py')
        process = self.warn_from(ours)
        self.assertEqual(
            (0, ['%s:7: UserWarning: the message' % ours]),
            (process.returncode, process.stderr.splitlines()))
