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

"""Which service tokens the check refuses, on keystoneauth1's own
AccessInfo as auth_token builds it; tests/keystone/test_service_tokens.py
does it with real tokens."""

from keystoneauth1 import access
from keystonemiddleware.auth_token import _user_plugin
from oslotest import base
import webob

from reserveapi.api import service_token

RULES = [{'service': 'reservation', 'method': 'GET', 'path': '/v1/nodes'}]


def _access(token, access_rules=None, credential=False):
    body = {'token': {
        'methods': ['application_credential' if credential else 'password'],
        'user': {'id': 'user-' + token, 'name': 'nova',
                 'domain': {'id': 'default', 'name': 'Default'}},
        'project': {'id': 'service', 'name': 'service',
                    'domain': {'id': 'default', 'name': 'Default'}},
        'roles': [{'id': 'r', 'name': 'service'}],
        'expires_at': '2999-01-01T00:00:00.000000Z',
        'issued_at': '2000-01-01T00:00:00.000000Z',
    }}
    if credential:
        body['token']['application_credential'] = {
            'id': 'credential', 'name': 'limited', 'restricted': True}
        if access_rules is not None:
            body['token']['application_credential'][
                'access_rules'] = access_rules
    return access.create(body=body, auth_token=token)


class TestRefusal(base.BaseTestCase):

    def refusal(self, user, service):
        return service_token.refusal(_user_plugin.UserAuthPlugin(user,
                                                                 service))

    def test_a_services_own_token_beside_a_user_token_passes(self):
        self.assertIsNone(self.refusal(_access('user'), _access('nova')))
        # The user's credential may be restricted: the service acts for
        # it, which is what service tokens are for.
        self.assertIsNone(self.refusal(
            _access('user', RULES, credential=True), _access('nova')))
        # A service user that logs in with an unrestricted credential.
        self.assertIsNone(self.refusal(
            _access('user'), _access('nova', credential=True)))

    def test_no_service_token_passes(self):
        self.assertIsNone(self.refusal(_access('user', RULES, True), None))
        self.assertIsNone(service_token.refusal(None))

    def test_the_user_token_again_is_refused(self):
        self.assertIn('user token itself', self.refusal(
            _access('same'), _access('same')))
        self.assertIn('user token itself', self.refusal(
            _access('same', RULES, True), _access('same', RULES, True)))

    def test_a_restricted_credentials_token_is_refused(self):
        for rules in (RULES, []):
            self.assertIn('access rules', self.refusal(
                _access('first', RULES, True),
                _access('second', rules, True)))
            self.assertIn('access rules', self.refusal(
                _access('user'), _access('second', rules, True)))


class TestMiddleware(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.called = []
        self.app = service_token.ServiceTokenCheck(self._app)

    def _app(self, environ, start_response):
        self.called.append(environ['PATH_INFO'])
        return webob.Response(json_body={})(environ, start_response)

    def request(self, user, service):
        request = webob.Request.blank('/v1/reservations')
        request.environ['openstack.request_id'] = 'req-1'
        request.environ[service_token.TOKEN_AUTH_KEY] = (
            _user_plugin.UserAuthPlugin(user, service))
        return request.get_response(self.app)

    def test_refused_before_the_app_in_our_error_format(self):
        response = self.request(_access('same'), _access('same'))
        self.assertEqual(401, response.status_int)
        (error,) = response.json['errors']
        self.assertEqual(('reserveapi.unauthorized', 'req-1'),
                         (error['code'], error['request_id']))
        self.assertIn('X-Service-Token', error['detail'])
        self.assertNotIn('same', error['detail'])
        self.assertEqual([], self.called)

    def test_passed_to_the_app(self):
        self.assertEqual(200, self.request(_access('user'),
                                           _access('nova')).status_int)
        self.assertEqual(200, webob.Request.blank('/').get_response(
            self.app).status_int)
        self.assertEqual(['/v1/reservations', '/'], self.called)
