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


"""Start-up check of the [placement] options, as an operator meets it:
``reserveapi-worker``, ``reserveapi-api`` and the WSGI application run
as subprocesses.
"""


from oslotest import base

from reserveapi_testing import deployment

MISSING = ('[placement] lacks auth_type, auth_url, username or user_id, '
           'password, project_name or project_id: set them (see the sample '
           'configuration). Until then the aggregate mirror cannot reach '
           'Placement and every change stays pending.')


class TestPlacementCredentialsAtStartup(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.deployment = self.useFixture(deployment.Deployment())
        self.deployment.migrate()

    def require(self):
        self.deployment.config['mirror'] = {
            'require_placement_credentials': 'true'}
        self.deployment.write_config()

    def test_missing_options_are_one_warning(self):
        worker = self.deployment.run('reserveapi-worker', '--once')

        self.assertEqual(0, worker.returncode, worker.stderr)
        warnings = [line for line in (worker.stdout + worker.stderr)
                    .splitlines() if 'reserveapi.peers.credentials' in line]
        self.assertEqual(1, len(warnings), warnings)
        self.assertIn(' WARNING ', warnings[0])
        self.assertTrue(warnings[0].endswith(MISSING), warnings[0])
        # The configuration file the warning is about comes first.
        self.assertTrue(worker.stderr.splitlines()[0].endswith(
            'Configuration: %s' % self.deployment.config_file),
            worker.stderr)

    def test_complete_options_are_silent(self):
        self.deployment.config['placement'] = {
            'auth_type': 'none', 'endpoint_override': 'http://127.0.0.1:9'}
        self.deployment.write_config()

        worker = self.deployment.run('reserveapi-worker', '--once')

        self.assertEqual(0, worker.returncode, worker.stderr)
        self.assertNotIn('[placement] lacks', worker.stdout + worker.stderr)

    def test_required_options_stop_the_commands_with_one_line(self):
        self.require()
        for command, args in (('reserveapi-worker', ['--once']),
                              ('reserveapi-api', [])):
            process = self.deployment.run(command, *args)
            self.assertEqual((2, '', [MISSING]),
                             (process.returncode, process.stdout,
                              deployment.not_logged(process.stderr)), command)

    def test_required_options_stop_the_wsgi_application(self):
        self.require()
        process = self.deployment.load_wsgi()
        self.assertEqual(3, process.returncode)
        critical = [line for line in (process.stdout + process.stderr)
                    .splitlines() if ' CRITICAL reserveapi.wsgi.api ' in line]
        self.assertEqual(1, len(critical), process.stdout[-2000:])
        self.assertTrue(critical[0].endswith(MISSING), critical[0])
