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

"""Service tokens and application credentials, with real tokens.

Nova calls with a user's token and its own service token
(``X-Service-Token``); keystonemiddleware then skips the access rules of
the user's application credential, since a service acts for the user.
A restricted credential of a user with the ``service`` role must not
lift its own rules that way: its token sent again as the service token,
or a second token of it, is a 401, and nothing changes.
"""

from reserveapi.api import microversion
from reserveapi_testing import inventory
from tests.keystone import base

NODES = '/v1/nodes'
RESERVATIONS = '/v1/reservations'


def access_rule(method, path, service=microversion.SERVICE_TYPE):
    return {'service': service, 'method': method, 'path': path}


class ServiceTokenTestCase(base.KeystoneTestCase):

    def setUp(self):
        super().setUp()
        self.sync_nodes([inventory.node('node-1'), inventory.node('node-2')])
        response = self.reserve(self.project_a)
        self.assertEqual(201, response.status_code, response.text)
        self.reservation = RESERVATIONS + '/' + response.json()['uuid']

    def assertStillThere(self):
        self.assertEqual(200, self.as_persona('admin', 'GET',
                                              self.reservation).status_code)


class TestRestrictedCredentialOfTheServiceUser(ServiceTokenTestCase):
    """Nova's service user with a credential limited to reading nodes."""

    def setUp(self):
        super().setUp()
        self.credential = self.keystone.application_credential(
            'service', [access_rule('GET', NODES)])
        self.limited = self.keystone.application_credential_token(
            self.credential)

    def test_its_rules_hold(self):
        self.assertEqual(200, self.call(self.limited, 'GET',
                                        NODES).status_code)
        self.assertUnauthorized(self.call(self.limited, 'GET', RESERVATIONS))
        self.assertUnauthorized(self.call(self.limited, 'DELETE',
                                          self.reservation))
        self.assertStillThere()

    def test_its_token_again_as_service_token_is_refused(self):
        for method, path in (('DELETE', self.reservation),
                             ('GET', RESERVATIONS), ('GET', NODES)):
            response = self.call(self.limited, method, path,
                                 service_token=self.limited)
            self.assertUnauthorized(response)
            self.assertIn('X-Service-Token',
                          response.json()['errors'][0]['detail'])
            self.assertNotIn(self.limited, response.text)
        self.assertStillThere()

    def test_a_second_token_of_it_as_service_token_is_refused(self):
        second = self.keystone.application_credential_token(self.credential)
        self.assertNotEqual(self.limited, second)
        self.assertUnauthorized(self.call(self.limited, 'DELETE',
                                          self.reservation,
                                          service_token=second))
        # Nor may it vouch for anybody else.
        self.assertUnauthorized(self.call(self.token('reader_a'), 'GET',
                                          RESERVATIONS,
                                          service_token=second))
        self.assertStillThere()

    def test_an_ordinary_users_token_as_service_token_is_refused(self):
        """keystonemiddleware's own check: a service token needs the
        ``service`` role."""
        self.assertUnauthorized(self.call(
            self.limited, 'DELETE', self.reservation,
            service_token=self.token('member_a')))
        self.assertStillThere()


class TestNovasServiceToken(ServiceTokenTestCase):
    """A user's token with Nova's own, different service token: still
    the user's rights, never the service's."""

    def test_a_users_token_beside_novas(self):
        nova = self.token('service')
        listed = self.call(self.token('reader_a'), 'GET', RESERVATIONS,
                           service_token=nova)
        self.assertEqual(200, listed.status_code, listed.text)
        self.assertEqual([self.reservation.rsplit('/', 1)[1]],
                         [item['uuid'] for item in
                          listed.json()['reservations']])
        refused = self.call(self.token('reader_a'), 'DELETE',
                            self.reservation, service_token=nova)
        self.assertError(refused, 403, 'reserveapi.forbidden')
        self.assertStillThere()

    def test_a_restricted_users_token_beside_novas(self):
        """The chain service tokens are for: a user's credential limited
        to Nova's API, passed on by Nova with its own token."""
        credential = self.keystone.application_credential(
            'reader_a', [access_rule('GET', '/v2.1/servers', 'compute')])
        limited = self.keystone.application_credential_token(credential)
        self.assertUnauthorized(self.call(limited, 'GET', RESERVATIONS))
        listed = self.call(limited, 'GET', RESERVATIONS,
                           service_token=self.token('service'))
        self.assertEqual(200, listed.status_code, listed.text)
        self.assertEqual(1, len(listed.json()['reservations']))

    def test_novas_own_token_twice_is_refused(self):
        """Nova never sends its own token as both; refusing it costs
        nothing."""
        nova = self.token('service')
        self.assertUnauthorized(self.call(nova, 'GET', RESERVATIONS,
                                          service_token=nova))
        self.assertEqual(200, self.call(nova, 'GET',
                                        RESERVATIONS).status_code)

    def test_novas_unrestricted_credential_as_service_token(self):
        """A service user may log in with an application credential
        without access rules."""
        credential = self.keystone.application_credential('service')
        nova = self.keystone.application_credential_token(credential)
        listed = self.call(self.token('reader_a'), 'GET', RESERVATIONS,
                           service_token=nova)
        self.assertEqual(200, listed.status_code, listed.text)


class TestWithoutServiceType(ServiceTokenTestCase):
    """``[keystone_authtoken] service_type`` unset: auth_token cannot
    tell which access rules are ours, and refuses every restricted
    credential, even on the routes its rules allow."""

    authtoken_overrides = {'service_type': None}

    def test_restricted_credentials_are_refused(self):
        credential = self.keystone.application_credential(
            'reader_a', [access_rule('GET', NODES)])
        limited = self.keystone.application_credential_token(credential)
        self.assertUnauthorized(self.call(limited, 'GET', NODES))
        unrestricted = self.keystone.application_credential_token(
            self.keystone.application_credential('reader_a'))
        self.assertEqual(200, self.call(unrestricted, 'GET',
                                        NODES).status_code)
