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

"""Tokens keystonemiddleware must refuse: none, forged, expired, revoked.

Each is a 401 in the API-WG format that says where to authenticate and
never repeats the token. A revoked token is refused at once only without
a token cache; with ``token_cache_time`` it is honoured until its cache
entry lapses, which the install guide tells operators.
"""

import time

from tests.keystone import base

LIST = '/v1/reservations'
CACHE_TIME = 20
"""Seconds; long enough for a loaded machine to revoke and ask again
within it."""


class TestRefusedTokens(base.KeystoneTestCase):

    def assertRefused(self, token):
        response = self.call(token, 'GET', LIST)
        self.assertUnauthorized(response)
        if token is not None:
            self.assertNotIn(token, response.text)
        return response

    def test_no_token(self):
        self.assertRefused(None)

    def test_forged_token(self):
        self.assertRefused('gAAAAABforged' + 'x' * 100)

    def test_expired_token(self):
        token = base.shared_expired_token()
        self.assertEqual(404, self.keystone.validate(token))
        self.assertRefused(token)

    def test_token_revoked_after_use(self):
        token = self.keystone.token('reader_a')
        self.assertEqual(200, self.call(token, 'GET', LIST).status_code)
        self.keystone.revoke(token)
        self.assertEqual(404, self.keystone.validate(token))
        self.assertRefused(token)
        # Another token of the same user is still good.
        self.assertEqual(200, self.call(self.keystone.token('reader_a'),
                                        'GET', LIST).status_code)

    def test_revoked_admin_token_cannot_write(self):
        token = self.keystone.token('admin')
        self.keystone.revoke(token)
        response = self.call(token, 'POST', LIST, {
            'instance_uuid': '7f2c2c4e-2b1f-4d59-9c1a-5c7bdbb7a1e2',
            'host': base.HOSTS[0], 'request_spec': {}})
        self.assertUnauthorized(response)
        self.assertEqual([], self.call(self.token('admin'), 'GET', LIST)
                         .json()['reservations'])


class TestTokenCache(base.KeystoneTestCase):

    authtoken_overrides = {'token_cache_time': CACHE_TIME}

    def test_a_revoked_token_works_until_its_cache_entry_lapses(self):
        token = self.keystone.token('reader_a')
        validated = time.monotonic()
        self.assertEqual(200, self.call(token, 'GET', LIST).status_code)
        self.keystone.revoke(token)
        self.assertEqual(404, self.keystone.validate(token))
        cached = self.call(token, 'GET', LIST)
        self.assertLess(time.monotonic() - validated, CACHE_TIME,
                        'too slow to ask within the cache time')
        self.assertEqual(200, cached.status_code, cached.text)
        # auth_token's own cache keeps whole seconds: one more.
        time.sleep(max(0.0, validated + CACHE_TIME + 1 - time.monotonic()))
        self.assertUnauthorized(self.call(token, 'GET', LIST))
