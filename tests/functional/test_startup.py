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

"""Misconfiguration at start-up, as an operator meets it: the console
scripts and the WSGI application run as subprocesses.

A service that cannot work says so in one line naming the options, and
does not start; one that can does not leave junk behind.
"""

import configparser
import http.client
import json
import os
import re
import signal
import subprocess
import time

import fixtures
from oslotest import base

from reserveapi.cmd import dbsync
from reserveapi.cmd import manage
from reserveapi.db import migration
from reserveapi_testing import deployment

KEYSTONE_MISSING = (
    '[keystone_authtoken] lacks auth_type, auth_url, username or user_id, '
    'password, project_name or project_id: set them (see the sample '
    'configuration). [api] auth_strategy is keystone, and auth_token needs '
    'them to validate tokens (or set [api] auth_strategy = noauth, for '
    'development only).')
PLACEMENT_MISSING = (
    '[placement] lacks auth_type, auth_url, username or user_id, password, '
    'project_name or project_id: set them (see the sample configuration).')
# A service user that auth_token accepts as complete; no Keystone listens.
AUTHTOKEN = {
    'auth_type': 'password', 'auth_url': 'http://127.0.0.1:9/identity',
    'username': 'reserveapi', 'password': 'secret',
    'project_name': 'service', 'user_domain_name': 'Default',
    'project_domain_name': 'Default',
    'www_authenticate_uri': 'http://127.0.0.1:9/identity',
}
COMMANDS = ('reserveapi-api', 'reserveapi-dbsync', 'reserveapi-manage',
            'reserveapi-worker', 'reserveapi-status')


class StartupTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.deployment = self.useFixture(deployment.Deployment())
        self.deployment.migrate()

    def configure(self, **sections):
        for name, values in sections.items():
            if values is None:
                self.deployment.config.pop(name, None)
            else:
                self.deployment.config.setdefault(name, {}).update(values)
        self.deployment.write_config()

    def get(self, path, method='GET'):
        connection = http.client.HTTPConnection(
            '127.0.0.1', self.deployment.port, timeout=30)
        try:
            connection.request(method, path)
            response = connection.getresponse()
            return response.status, json.loads(response.read() or b'null')
        finally:
            connection.close()


class TestKeystoneWithoutCredentials(StartupTestCase):

    def setUp(self):
        super().setUp()
        self.configure(api={'auth_strategy': 'keystone'})

    def test_the_api_refuses_to_start_with_one_line(self):
        process = self.deployment.run('reserveapi-api')
        self.assertEqual((2, '', [KEYSTONE_MISSING]),
                         (process.returncode, process.stdout,
                          deployment.not_logged(process.stderr)))

    def test_the_wsgi_application_refuses_to_load(self):
        process = self.deployment.load_wsgi()
        # gunicorn's "worker failed to boot": its master stops.
        self.assertEqual(3, process.returncode)
        critical = [line for line in (process.stdout + process.stderr)
                    .splitlines() if ' CRITICAL reserveapi.wsgi.api ' in line]
        self.assertEqual(1, len(critical), process.stderr[-2000:])
        self.assertTrue(critical[0].endswith(KEYSTONE_MISSING), critical[0])

    def test_auth_strategy_under_default_is_read_not_ignored(self):
        # Written in the wrong section, it still decides, with a warning
        # that says where it belongs.
        self.configure(api={'auth_strategy': 'noauth'})
        self.deployment.config['api'].pop('auth_strategy')
        self.configure(DEFAULT={'auth_strategy': 'keystone'})
        process = self.deployment.run('reserveapi-api')
        self.assertEqual((2, KEYSTONE_MISSING),
                         (process.returncode, process.stderr.splitlines()[-1]))
        self.assertIn('Option "auth_strategy" from group "DEFAULT" is '
                      'deprecated. Use option "auth_strategy" from group '
                      '"api"', process.stdout + process.stderr)


class TestKeystoneWithCredentials(StartupTestCase):

    def test_version_discovery_is_public_and_the_rest_is_not(self):
        self.configure(api={'auth_strategy': 'keystone'},
                       keystone_authtoken=AUTHTOKEN)
        self.deployment.start_api()
        for path in ('/', '/v1', '/v1/'):
            status, body = self.get(path)
            self.assertEqual(200, status, body)
        for method, path in (('GET', '/v1/reservations'),
                             ('GET', '/v1/capacity'),
                             ('DELETE', '/v1'), ('GET', '/v1/nope')):
            status, body = self.get(path, method)
            self.assertEqual((401, 'reserveapi.unauthorized'),
                             (status, body['errors'][0]['code']),
                             (method, path))


class TestPlacementUnset(StartupTestCase):

    def add_host(self):
        status, body = self.get(
            '/v1/aggregates/6f1c0a2e-5b4d-4c3e-9a8f-7e6d5c4b3a21/hosts/c-1',
            'PUT')
        self.assertEqual(202, status, body)
        return body['last_error']

    def test_pending_reason_names_the_missing_options(self):
        self.deployment.start_api()
        self.assertIn(PLACEMENT_MISSING, self.add_host())

    def test_so_does_a_plugin_that_lacks_its_own(self):
        self.configure(placement={'auth_type': 'password',
                                  'username': 'reserveapi'})
        self.deployment.start_api()
        self.assertIn('[placement] lacks auth_url, password, '
                      'user_domain_name or user_domain_id, project_name or '
                      'project_id: set them', self.add_host())


class TestOperatorSurprises(StartupTestCase):

    def test_a_busy_port_is_one_line(self):
        self.deployment.start_api()
        process = self.deployment.run('reserveapi-api')
        self.assertEqual(1, process.returncode)
        self.assertEqual(
            ['Cannot serve on 127.0.0.1:%d: Address already in use ([api] '
             'host_ip and port).' % self.deployment.port],
            deployment.not_logged(process.stderr))
        self.assertNotIn('Traceback', process.stdout + process.stderr)

    def test_a_command_without_configuration_leaves_no_state_directory(self):
        home = self.useFixture(fixtures.TempDir()).path
        process = subprocess.run(
            [deployment.script('reserveapi-manage'), 'sync-nodes'],
            env=dict(os.environ, HOME=home), cwd=home, capture_output=True,
            text=True, check=False, timeout=deployment.COMMAND_TIMEOUT)
        self.assertEqual(1, process.returncode, process.stderr)
        self.assertIn('Inventory not synced', process.stderr)
        self.assertEqual([], os.listdir(home))

    def test_help_opens_with_what_the_command_does(self):
        for command in COMMANDS:
            process = subprocess.run(
                [deployment.script(command), '--help'], capture_output=True,
                text=True, check=False, timeout=deployment.COMMAND_TIMEOUT)
            self.assertEqual(0, process.returncode, process.stderr)
            opening = process.stdout.split('options:')[0]
            self.assertLess(len(opening.splitlines()), 20, command)
            self.assertNotIn('--log', opening, command)
            self.assertNotIn('--debug, -d', opening, command)

    def test_manage_help_lists_every_command_in_full(self):
        process = subprocess.run(
            [deployment.script('reserveapi-manage'), '--help'],
            capture_output=True, text=True, check=False,
            timeout=deployment.COMMAND_TIMEOUT)
        opening = ' '.join(process.stdout.split('options:')[0].split())
        for text in ('sync-nodes Upsert the inventory source into the '
                     'database.',
                     'expire-reservations Expire reserved reservations '
                     'older than [reservations] reserved_ttl.',
                     'sync-aggregates Compare Placement',
                     'mirror-status Count synced and pending'):
            self.assertIn(text, opening)


class TestHelp(base.BaseTestCase):

    def help(self, command, *args):
        process = subprocess.run(
            [deployment.script(command)] + list(args) + ['--help'],
            capture_output=True, text=True, check=False,
            timeout=deployment.COMMAND_TIMEOUT)
        self.assertEqual(0, process.returncode, process.stderr)
        return process.stdout

    def test_each_command_is_listed_once(self):
        # Argparse's own list is left out, and the deprecated alias.
        for command, names in (('reserveapi-manage', manage.COMMANDS),
                               ('reserveapi-dbsync', dbsync.COMMANDS)):
            text = self.help(command)
            for name in names:
                self.assertEqual(1, len(re.findall(r'^  %s ' % name, text,
                                                   re.M)), (command, name))
            self.assertNotIn('{', text)
        self.assertNotIn('reconcile-reservations',
                         self.help('reserveapi-manage'))


class TestFirstDeployment(StartupTestCase):
    """What the CLI reference and the install guide show, verbatim."""

    def run_with_config_last(self, command, *args):
        return subprocess.run(
            [deployment.script(command)] + list(args)
            + ['--config-file', self.deployment.config_file],
            capture_output=True, text=True, check=False,
            timeout=deployment.COMMAND_TIMEOUT)

    def test_config_file_after_the_sub_command(self):
        for command, args, expected in (
                ('reserveapi-dbsync', ['current'], migration.head()),
                ('reserveapi-dbsync', ['upgrade'], 'Database is at revision'),
                ('reserveapi-manage', ['mirror-status'],
                 'Memberships: 0 synced, 0 pending.'),
                ('reserveapi-manage', ['sync-nodes'], 'Nodes: '),
                ('reserveapi-status', ['upgrade', 'check', '--json'],
                 '"Database schema"'),
                ('reserveapi-worker', ['--once'], '')):
            process = self.run_with_config_last(command, *args)
            self.assertEqual(0, process.returncode,
                             '%s %s: %s' % (command, args, process.stderr))
            self.assertIn(expected, process.stdout)

    def test_config_file_after_the_sub_command_is_really_read(self):
        # A file naming another database: the command must use it.
        self.configure(database={'connection': 'sqlite:///%s' % os.path.join(
            self.deployment.path, 'other.sqlite')})
        process = self.run_with_config_last('reserveapi-dbsync', 'current')
        self.assertEqual(0, process.returncode, process.stderr)
        self.assertEqual('The database has no schema yet.\n', process.stdout)
        # So is --debug, another option every command takes (argparse
        # refuses it after a sub-command: exit 2).
        process = self.run_with_config_last(
            'reserveapi-dbsync', 'current', '--debug')
        self.assertEqual(0, process.returncode, process.stderr)

    def test_status_help_opens_with_a_description(self):
        process = subprocess.run(
            [deployment.script('reserveapi-status'), '--help'],
            capture_output=True, text=True, check=False,
            timeout=deployment.COMMAND_TIMEOUT)
        self.assertEqual(0, process.returncode, process.stderr)
        lines = process.stdout.splitlines()
        self.assertEqual('usage: reserveapi-status [--config-file PATH] '
                         'upgrade check [--json]', lines[0])
        self.assertTrue(lines[2].startswith(
            'Checks whether this deployment is ready'), lines[2])

    def test_nova_compute_without_nova_is_one_line(self):
        try:
            import nova  # noqa: F401
        except ImportError:
            pass
        else:
            self.skipTest('Nova is installed here')
        process = subprocess.run(
            [deployment.script('reserveapi-nova-compute'), '--help'],
            capture_output=True, text=True, check=False,
            timeout=deployment.COMMAND_TIMEOUT)
        self.assertEqual(1, process.returncode)
        self.assertEqual('', process.stdout)
        self.assertEqual(["reserveapi-nova-compute needs Nova: pip install "
                          "'reserveapi[nova]'"], process.stderr.splitlines())

    def test_the_api_stops_cleanly_on_sigint_and_sigterm(self):
        # Where it hangs, if it does (SIGABRT dumps every thread).
        self.useFixture(fixtures.EnvironmentVariable('PYTHONFAULTHANDLER',
                                                     '1'))
        for number in (signal.SIGINT, signal.SIGTERM):
            log_path = self.deployment.start_api()
            server = self.deployment.api_process
            started = time.monotonic()
            server.send_signal(number)
            # A second signal while it stops, as tox forwards its own
            # after the terminal's.
            server.send_signal(number)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.send_signal(signal.SIGABRT)
                server.wait()
            with open(log_path) as stream:
                self.assertEqual(0, server.returncode, stream.read())
            # tox waits 0.3 s after SIGINT before it sends SIGTERM.
            self.assertLess(time.monotonic() - started, 3)
            with open(log_path) as stream:
                log = stream.read()
            self.assertIn('Stopped by %s' % number.name, log)
            self.assertNotIn('Traceback', log)

    def test_the_demo_configuration_starts_without_a_warning(self):
        demo = configparser.ConfigParser(interpolation=None)
        demo.read(os.path.join(os.path.dirname(__file__), '..', '..', 'etc',
                               'reserveapi', 'reserveapi-demo.conf'))
        self.configure(api={'auth_strategy': demo['api']['auth_strategy']},
                       placement=dict(demo['placement']))
        log_path = self.deployment.start_api()
        with open(log_path) as stream:
            log = stream.read()
        self.assertIn('auth_strategy is noauth', log)
        self.assertNotIn(' WARNING ', log)
