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


"""Which [placement] (or [nova]) options are missing, named one by one."""

import fixtures

from reserveapi.common import exception
from reserveapi.peers import credentials
from tests import base

USUAL = ['auth_url', 'username or user_id', 'password',
         'project_name or project_id']


class TestMissingOptions(base.TestCase):

    def missing(self, group='placement', **options):
        """Set ``options`` in ``[group]``, as a config file would."""
        base.use_plugin_options(self, options.get('auth_type', 'password'),
                           group)
        self.config(group=group, **options)
        return credentials.missing_options(group)

    def test_nothing_set_names_the_usual_options(self):
        self.assertEqual(['auth_type'] + USUAL, self.missing())

    def test_only_auth_type_missing(self):
        self.assertEqual(['auth_type'], self.missing(
            auth_url='http://keystone', username='reserveapi',
            password='secret', project_name='service',
            user_domain_name='Default', project_domain_name='Default'))

    def test_password_plugin(self):
        self.assertEqual(USUAL, self.missing(auth_type='password'))
        self.assertEqual(
            ['password', 'user_domain_name or user_domain_id',
             'project_domain_name or project_domain_id'],
            self.missing(auth_type='password', auth_url='http://keystone',
                         username='reserveapi', project_name='service'))

    def test_ids_need_no_domains(self):
        self.assertEqual([], self.missing(
            auth_type='v3password', auth_url='http://keystone',
            user_id='u1', password='secret', project_id='p1'))

    def test_a_default_domain_serves_user_and_project(self):
        self.assertEqual([], self.missing(
            auth_type='password', auth_url='http://keystone',
            username='reserveapi', password='secret',
            project_name='service', default_domain_id='default'))

    def test_no_identity_service_needs_an_endpoint(self):
        self.assertEqual(['endpoint_override or endpoint'],
                         self.missing(auth_type='none'))
        self.assertEqual([], self.missing(
            auth_type='none', endpoint_override='http://placement'))
        self.assertEqual(['token'], self.missing(
            group='nova', auth_type='admin_token', endpoint='http://nova'))

    def test_application_credential(self):
        self.assertEqual(
            ['application_credential_id or application_credential_name'],
            self.missing(auth_type='v3applicationcredential',
                         auth_url='http://keystone',
                         application_credential_secret='secret'))
        self.assertEqual(
            ['username or user_id'],
            self.missing(auth_type='v3applicationcredential',
                         auth_url='http://keystone',
                         application_credential_secret='secret',
                         application_credential_name='reserveapi'))

    def test_unknown_plugin(self):
        self.assertEqual(["auth_type ('kerberos-ish' is no keystoneauth1 "
                          "plugin)"],
                         self.missing(auth_type='kerberos-ish'))


class TestStartupCheck(base.TestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name='reserveapi.peers.credentials'))

    def test_complete_options_say_nothing(self):
        base.use_plugin_options(self, 'none', 'placement')
        self.config(group='placement', auth_type='none',
                    endpoint_override='http://placement')
        credentials.check_placement_at_startup()
        self.assertEqual('', self.log.output)

    def test_missing_options_are_one_warning(self):
        base.use_plugin_options(self, 'password', 'placement')
        credentials.check_placement_at_startup()
        (line,) = self.log.output.splitlines()
        self.assertIn('[placement] lacks auth_type, auth_url, username or '
                      'user_id, password, project_name or project_id', line)

    def test_required_makes_them_fatal(self):
        base.use_plugin_options(self, 'password', 'placement')
        self.config(group='mirror', require_placement_credentials=True)
        error = self.assertRaises(exception.MissingCredentials,
                                  credentials.check_placement_at_startup)
        self.assertIn('[placement] lacks auth_type', str(error))
        self.assertEqual('', self.log.output)
