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

"""nova-api with the aggregate hook in its paste pipeline, reachable by
reserveapi in its own process.

The harness's nova-api and Placement live in the test process behind
wsgi-intercept, which no other process can reach; here both are also
served on loopback ports from threads, so the reservation service
resolves hosts through the same Nova and writes the same Placement. Nova's
stock pipeline is loaded beside ours (``plain_api``) to compare answers
and times against.
"""

import json
import os
import socket

import fixtures
from nova import monkey_patch
from nova.api import wsgi as nova_wsgi
from nova.tests.functional.api import client as nova_client
from placement import deploy as placement_deploy
from wsgi_intercept import interceptor

from reserveapi_testing.loopback import LoopbackServer
from reserveapi_testing.nova import base
from reserveapi_testing.nova import reserveapi_service

FILTER = 'reserveapi_aggregates'
# The documented api-paste.ini change (README, reserveapi.nova.aggregates).
PIPELINE_CHANGES = (
    ('keystonecontext osapi_compute_app_v21',
     'keystonecontext %s osapi_compute_app_v21' % FILTER),
    ('keystonecontext legacy_v2_compatible osapi_compute_app_v21',
     'keystonecontext legacy_v2_compatible %s osapi_compute_app_v21'
     % FILTER),
)
FILTER_SECTION = ('\n[filter:%s]\npaste.filter_factory = '
                  'reserveapi.nova.aggregates:filter_factory\n' % FILTER)
# Nova's fake keystone context reads these; keystonemiddleware would set
# them for a caller with an admin token.
ADMIN_HEADERS = {'HTTP_X_AUTH_USER': 'admin', 'HTTP_X_USER_ID': 'admin',
                 'HTTP_X_ROLES': 'admin,member,reader'}
PLACEMENT_TOKEN = 'admin'  # noqa: S105 - Placement's noauth2 admin
PLAIN_HOST = 'plain-nova-api'


def write_paste_with_hook(path):
    """Nova's api-paste.ini with our filter after ``keystonecontext`` in
    both v2.1 pipelines; fails if Nova's file no longer looks as
    documented.
    """
    with open(base.nova_api_paste()) as stock:
        text = stock.read()
    for old, new in PIPELINE_CHANGES:
        if text.count(old) != 1:
            raise AssertionError('Nova api-paste.ini has no "%s"' % old)
        text = text.replace(old, new)
    with open(path, 'w') as paste:
        paste.write(text + FILTER_SECTION)
    return path


class _AsAdmin:
    """Every loopback caller authenticated as an admin of ``project``."""

    def __init__(self, app, project_id):
        self.app = app
        self.project_id = project_id

    def __call__(self, environ, start_response):
        for name, value in ADMIN_HEADERS.items():
            environ.setdefault(name, value)
        environ.setdefault('HTTP_X_AUTH_PROJECT_ID', self.project_id)
        return self.app(environ, start_response)


class LoopbackFront(fixtures.Fixture):
    """Serve ``app`` on 127.0.0.1 at ``url``, from a thread.

    Under Nova's eventlet mode (its tests' default) the thread is a green
    one with eventlet's WSGI server: the standard library server's poll
    loop would block the only real thread, and with it every green one.
    """

    def __init__(self, app):
        super().__init__()
        self.app = app
        self.url = None

    def _setUp(self):
        if not monkey_patch.is_patched():
            self.url = self.useFixture(LoopbackServer(self.app)).url
            return
        import eventlet
        from eventlet import wsgi as eventlet_wsgi
        sock = eventlet.listen(('127.0.0.1', 0))
        self.url = 'http://127.0.0.1:%d' % sock.getsockname()[1]
        server = eventlet.spawn(eventlet_wsgi.server, sock, self.app,
                                log_output=False, keepalive=False,
                                debug=False)
        self.addCleanup(server.kill)


class HungService(fixtures.Fixture):
    """A port that accepts connections (the kernel does) and never
    answers: a hung service.
    """

    def __init__(self, port):
        super().__init__()
        self.port = port

    def _setUp(self):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(('127.0.0.1', self.port))
        sock.listen(64)
        # Held: eventlet's green socket closes itself when collected.
        self.sock = sock
        self.addCleanup(sock.close)


def serve_peers_on_loopback(test):
    """Serve ``test``'s nova-api (every caller an admin) and Placement on
    loopback; the reservation service's ``[placement]`` and ``[nova]``
    config sections that reach them.
    """
    nova = test.useFixture(LoopbackFront(_AsAdmin(
        test.api_fixture.app(), test.api.project_id)))
    placement = test.useFixture(LoopbackFront(
        placement_deploy.loadapp(test.placement_fixture.conf_fixture.conf)))
    return {
        'placement': {'auth_type': 'admin_token', 'endpoint': placement.url,
                      'token': PLACEMENT_TOKEN},
        'nova': {'auth_type': 'none',
                 'endpoint_override': nova.url + '/v2.1'},
    }


class AggregateHookTestCase(base.IronicTestCase):
    """One Ironic host with the stock driver (a compute node, and so a
    provider, per Ironic node), nova-api with our filter, and the
    reservation service resolving hosts through that nova-api.
    """

    COMPUTE_DRIVER = 'ironic.IronicDriver'
    HOSTS = ('compute-1',)
    NODES = 3
    AGGREGATE_TIMEOUT = 2.0
    # What the service adds to its config file.
    SERVICE_SECTIONS = {}

    def api_paste_config(self):
        return write_paste_with_hook(os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'api-paste.ini'))

    def setUp(self):
        super().setUp()
        sections = serve_peers_on_loopback(self)
        sections['mirror'] = {'resolve_hosts_via_nova': 'true'}
        for section, options in self.SERVICE_SECTIONS.items():
            sections.setdefault(section, {}).update(options)
        self.reserveapi = self.useFixture(
            reserveapi_service.ReserveapiService(self.ironic,
                                                 sections=sections))
        self.flags(group='reserveapi', auth_type='none',
                   endpoint_override=self.reserveapi.endpoint,
                   aggregate_timeout=self.AGGREGATE_TIMEOUT)
        self.plain_api = self._plain_api()
        self.providers = sorted(node.uuid for node in self.compute_nodes()
                                if node.host == self.HOSTS[0])
        self.assertEqual(self.NODES, len(self.providers))

    def _plain_api(self):
        """An admin client of Nova's stock pipeline, without our filter,
        on the same databases.
        """
        app = nova_wsgi.Loader(base.nova_api_paste()).load_app(
            'osapi_compute')
        url = 'http://%s:80' % PLAIN_HOST
        intercept = interceptor.RequestsInterceptor(lambda: app, url=url)
        intercept.install_intercept()
        self.addCleanup(intercept.uninstall_intercept)
        plain = nova_client.TestOpenStackClient(
            'admin', url + '/v2.1', project_id=self.api.project_id,
            roles=['reader', 'member', 'admin'])
        plain.microversion = 'latest'
        return plain

    # Helpers --------------------------------------------------------

    def create_aggregate(self, name):
        """(Nova id, UUID) of a new aggregate."""
        aggregate = self.api.post_aggregate({'aggregate': {'name': name}})
        return aggregate['id'], aggregate['uuid']

    def aggregate_action(self, aggregate_id, action, host,
                         microversion='latest', api=None):
        """The raw answer to an ``add_host``/``remove_host`` action."""
        return self._raw(api, microversion, 'POST',
                         '/os-aggregates/%s/action' % aggregate_id,
                         {action: {'host': host}})

    def delete_aggregate(self, aggregate_id, microversion='latest',
                         api=None):
        return self._raw(api, microversion, 'DELETE',
                         '/os-aggregates/%s' % aggregate_id)

    def _raw(self, api, microversion, method, path, body=None):
        api = api or self.api
        previous, api.microversion = api.microversion, microversion
        try:
            return api.api_request(
                path, method=method,
                body=None if body is None else json.dumps(body))
        finally:
            api.microversion = previous

    def provider_aggregates(self):
        """{provider UUID: its aggregates} for the host's providers."""
        return {uuid: set(self.placement.get(
            '/resource_providers/%s/aggregates' % uuid,
            version='1.19').body['aggregates']) for uuid in self.providers}

    def add_foreign_aggregate(self, aggregate_uuid):
        """An aggregate somebody else put on every provider."""
        for uuid in self.providers:
            current = self.placement.get(
                '/resource_providers/%s/aggregates' % uuid,
                version='1.19').body
            self.placement.put(
                '/resource_providers/%s/aggregates' % uuid,
                {'aggregates': current['aggregates'] + [aggregate_uuid],
                 'resource_provider_generation':
                     current['resource_provider_generation']},
                version='1.19')

    def hook_warnings(self):
        """The hook's WARNING lines logged so far."""
        return [line for line in self.stdlog.logger.output.splitlines()
                if ' WARNING [reserveapi.nova.aggregates] ' in line]
