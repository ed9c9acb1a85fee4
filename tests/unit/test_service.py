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

"""The options every command takes are accepted after a sub-command;
noauth is only a warning where others can reach it; a command's error is
one line and its exit code.
"""

import io

import fixtures
from oslotest import base

from reserveapi.cmd import api
from reserveapi.common import exception
from reserveapi.common import service


class TestGlobalOptionsFirst(base.BaseTestCase):

    def test_moved_before_the_sub_command(self):
        for argv, expected in (
                (['upgrade', 'check', '--config-file', 'F'],
                 ['--config-file', 'F', 'upgrade', 'check']),
                (['mirror-status', '--config-file=F', '--debug'],
                 ['--config-file=F', '--debug', 'mirror-status']),
                (['sync-aggregates', '--file', 'A', '--config-dir', 'D',
                  '--dry-run', '-d'],
                 ['--config-dir', 'D', '-d', 'sync-aggregates', '--file',
                  'A', '--dry-run']),
                (['--config-file', 'F', 'current'],
                 ['--config-file', 'F', 'current']),
                (['takeover', '--from', 'a', '--to', 'b', '--log-file', 'L'],
                 ['--log-file', 'L', 'takeover', '--from', 'a', '--to',
                  'b'])):
            self.assertEqual(expected, service.global_options_first(argv))

    def test_two_config_files_keep_their_order(self):
        self.assertEqual(
            ['--config-file', 'A', '--config-file', 'B', 'current'],
            service.global_options_first(
                ['--config-file', 'A', 'current', '--config-file', 'B']))

    def test_nothing_after_a_double_dash_moves(self):
        self.assertEqual(
            ['revision', '--', '--config-file', 'F'],
            service.global_options_first(
                ['revision', '--', '--config-file', 'F']))

    def test_a_missing_value_is_left_to_argparse(self):
        self.assertEqual(['current', '--config-file'],
                         service.global_options_first(
                             ['current', '--config-file']))


class TestLoopback(base.BaseTestCase):

    def test_only_loopback_addresses(self):
        for host in ('127.0.0.1', '127.1.2.3', '::1', 'localhost'):
            self.assertTrue(api._loopback(host), host)
        for host in ('0.0.0.0',  # noqa: S104
                     '::', '10.0.0.5', 'api.example.com'):
            self.assertFalse(api._loopback(host), host)


class TestConsoleScript(base.BaseTestCase):

    def _exit(self, error):
        stderr = self.useFixture(fixtures.MockPatch(
            'sys.stderr', io.StringIO())).mock

        @service.console_script
        def main(argv=None):
            raise error

        code = self.assertRaises(SystemExit, main, []).code
        return code, stderr.getvalue()

    def test_a_mistake_exits_2_an_error_of_ours_1(self):
        self.assertEqual(
            (service.USAGE_ERROR, '[api] port is wrong\n'),
            self._exit(exception.ConfigurationError('[api] port is wrong')))
        self.assertEqual(
            (service.RUNTIME_ERROR,
             'Another process is syncing the inventory.\n'),
            self._exit(exception.SyncInProgress()))
        self.assertEqual(
            (service.RUNTIME_ERROR,
             'The database is unavailable; nothing was changed. Retry '
             'later.\n'),
            self._exit(exception.DatabaseUnavailable()))
