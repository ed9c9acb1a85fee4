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

"""The test base: reserveapi served with the real auth_token middleware.

One Keystone per test process (starting one takes a while); per test, a
fresh SQLite database and reserveapi's full WSGI app with ``[api]
auth_strategy = keystone`` and ``[keystone_authtoken]`` pointed at that
Keystone, served on loopback from a thread. Requests carry real tokens.

Every test also captures the log of the whole process at DEBUG, which
holds what reserveapi, keystonemiddleware and keystoneauth1 log, and
fails if any token Keystone issued or any password appears in it.
"""

import atexit
import logging
import os
import tempfile
import threading
import uuid

import fixtures
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
import requests

from reserveapi import client
from reserveapi import conf
from reserveapi.api import app
from reserveapi.api import microversion
from reserveapi_testing import examples
from reserveapi_testing import inventory
from reserveapi_testing import keystone as keystone_fixture
from reserveapi_testing import loopback
from tests.functional import base

REQUEST_TIMEOUT = 30
HOSTS = ('compute-1', 'compute-2')
AUTHTOKEN_GROUP = 'keystone_authtoken'
LOG_FORMAT = '%(levelname)s %(name)s %(message)s'

# Read at import, before any test points tempfile at its own directory.
PROCESS_TEMP_DIR = tempfile.gettempdir()

_keystone = None
_keystone_lock = threading.Lock()
_tokens = {}


def shared_keystone():
    """This process's Keystone, started on first use, stopped at exit."""
    global _keystone
    with _keystone_lock:
        if _keystone is None:
            keystone = keystone_fixture.KeystoneFixture(
                PROCESS_TEMP_DIR, service_type=microversion.SERVICE_TYPE)
            keystone.setUp()
            atexit.register(keystone.cleanUp)
            _keystone = keystone
    return _keystone


def _authtoken_config(keystone, overrides):
    """The reserveapi.conf an operator would write for this Keystone;
    ``overrides`` change ``[keystone_authtoken]`` options (None: unset).
    """
    authtoken = dict(
        keystone.authtoken_options(microversion.SERVICE_TYPE),
        # Validate every token with Keystone, so that a revoked token is
        # refused at once; a cache keeps honouring it until it times out.
        token_cache_time=-1)
    authtoken.update(overrides)
    return '\n'.join([
        '[api]',
        'auth_strategy = keystone',
        '[mirror]',
        # Aggregate writes are stored and answer 202 at once; Placement
        # is a closed port.
        'inline_timeout = 0',
        '[placement]',
        'auth_type = admin_token',
        'endpoint = http://127.0.0.1:9',
        'token = no-placement-here',
        '[keystone_authtoken]',
    ] + ['%s = %s' % (name, value) for name, value in authtoken.items()
         if value is not None] + [''])


def _forget_auth_plugin_options():
    """auth_token registers the password plugin's options, ``auth_url``
    required among them, on our global config: unregister them, or the
    next test's config, which has no such section, fails to load.
    """
    conf.CONF.clear()
    conf.CONF.unregister_opts(
        ks_loading.get_auth_plugin_conf_options('password'),
        group=AUTHTOKEN_GROUP)


def shared_token(persona):
    """One token per persona for the whole process (they last an hour);
    tests that revoke a token get their own from ``keystone.token``.
    """
    if persona not in _tokens:
        _tokens[persona] = shared_keystone().token(persona)
    return _tokens[persona]


def shared_expired_token():
    """An admin token past its expiry, one per process."""
    if 'expired' not in _tokens:
        _tokens['expired'] = shared_keystone().expired_token('admin')
    return _tokens['expired']


def shared_revoked_token():
    """A revoked admin token, one per process."""
    if 'revoked' not in _tokens:
        token = shared_keystone().token('admin')
        shared_keystone().revoke(token)
        _tokens['revoked'] = token
    return _tokens['revoked']


class KeystoneTestCase(base.DBTestCase):
    """reserveapi on ``self.url`` behind a real Keystone (``self.keystone``).

    ``self.project_a``/``project_b``: Keystone project IDs;
    ``authtoken_overrides``: ``[keystone_authtoken]`` options a test
    class sets otherwise (None: unset).
    """

    authtoken_overrides = {}

    def setUp(self):
        super().setUp()
        self.keystone = shared_keystone()
        self.logger = self.useFixture(fixtures.FakeLogger(
            level=logging.DEBUG, format=LOG_FORMAT))
        self.addCleanup(self.assertNoSecretLogged)
        config_file = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'reserveapi.conf')
        with open(config_file, 'w') as stream:
            stream.write(_authtoken_config(self.keystone,
                                           self.authtoken_overrides))
        conf.CONF(['--config-file', config_file], project='reserveapi',
                  default_config_files=[])
        self.addCleanup(_forget_auth_plugin_options)
        self.server = self.useFixture(
            loopback.LoopbackServer(app.setup_app()))
        self.url = self.server.url
        self.project_a = self.keystone.project_ids['project-a']
        self.project_b = self.keystone.project_ids['project-b']
        self.http = requests.Session()
        self.addCleanup(self.http.close)

    def token(self, persona):
        return shared_token(persona)

    def call(self, token, method, path, body=None, service_token=None,
             headers=None):
        """One request with ``token`` as X-Auth-Token (None: no header)
        and ``service_token`` as X-Service-Token, and ``headers``;
        ``path`` may be a full URL (a ``next`` link)."""
        headers = dict(headers or {})
        if token is not None:
            headers['X-Auth-Token'] = token
        if service_token is not None:
            headers['X-Service-Token'] = service_token
        url = path if path.startswith('http') else self.url + path
        return self.http.request(method, url, json=body, headers=headers,
                                 timeout=REQUEST_TIMEOUT)

    def as_persona(self, persona, method, path, body=None):
        return self.call(self.token(persona), method, path, body)

    def client(self, persona):
        """reserveapi.client as Nova builds it: a keystoneauth1 session
        with the persona's password, the endpoint of this test's server.
        """
        session = ks_session.Session(
            auth=self.keystone.password_auth(persona),
            timeout=REQUEST_TIMEOUT)
        self.addCleanup(session.session.close)
        return client.ReservationClient(session, endpoint_override=self.url)

    def sync_nodes(self, nodes):
        return inventory.sync(self, nodes)

    def reserve(self, project_id, host=HOSTS[0], candidate_nodes=None,
                persona='service'):
        """A reservation made by ``persona`` on behalf of ``project_id``;
        the raw response."""
        body = {'instance_uuid': str(uuid.uuid4()), 'host': host,
                'project_id': project_id,
                'request_spec': examples.REQUEST_SPEC}
        if candidate_nodes is not None:
            body['candidate_nodes'] = list(candidate_nodes)
        return self.as_persona(persona, 'POST', '/v1/reservations', body)

    def assertError(self, response, status, code):
        """An API-WG error body with our request id and a stable code."""
        self.assertEqual(status, response.status_code, response.text)
        self.assertEqual('application/json',
                         response.headers['Content-Type'].split(';')[0])
        (error,) = response.json()['errors']
        self.assertEqual(status, error['status'])
        self.assertEqual(code, error['code'])
        self.assertTrue(error['detail'])
        self.assertEqual(response.headers['x-openstack-request-id'],
                         error['request_id'])
        return error

    def assertUnauthorized(self, response):
        """auth_token's 401, in our error format, saying where to log in."""
        self.assertError(response, 401, 'reserveapi.unauthorized')
        self.assertIn(self.keystone.auth_url,
                      response.headers['WWW-Authenticate'])

    def assertNoSecretLogged(self):
        """No token Keystone issued and no password in any log line.

        The log is at DEBUG, so it has keystonemiddleware's and
        keystoneauth1's request traces: were it empty, the check would
        prove nothing.
        """
        output = self.logger.output
        self.assertIn('keystonemiddleware', output)
        secrets = ([('token', value) for value in self.keystone.issued]
                   + [('password of ' + user, value)
                      for user, value in self.keystone.passwords.items()])
        leaked = sorted({(what, line) for what, value in secrets
                         for line in output.splitlines() if value in line})
        self.assertEqual([], leaked)
