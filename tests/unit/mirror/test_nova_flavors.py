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

"""NovaClient's calls for holds: a hold's private flavor, made again
safely after any failure, its deletion, and the deletion of an instance.
Nova is a scripted fake on loopback, so every request is seen as sent.
"""

import fixtures
import webob
import webob.dec

from reserveapi.common import exception
from reserveapi.mirror import nova
from reserveapi_testing import loopback
from tests import base

TOKEN = 'scripted-nova-token'  # noqa: S105 - not a secret
NAME = 'reserveapi-hold-3f1c2b9e-8d4a-4e0b-9a65-0c7d5e2f1a44'
PROJECT = 'hold-project'
FLAVOR = '7e0d5c3a-2b1f-4c8e-9d6a-5f4e3b2a1c0d'
INSTANCE = '9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d'
SPECS = {'resources:CUSTOM_HOLD_3F1C2B9E8D4A4E0B9A650C7D5E2F1A44': '1',
         'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
         'resources:DISK_GB': '0'}
ALL_FLAVORS = {'is_public': 'None'}


class ScriptedNova(fixtures.Fixture):
    """Nova on loopback, answering each request as the test scripted it
    and recording it as ``(method, path, query, JSON body)``, the path
    without the ``/v2.1`` prefix. A request nobody scripted gets a 418.
    """

    def _setUp(self):
        self._answers = {}
        self.requests = []
        self.versions = set()
        self.server = self.useFixture(loopback.LoopbackServer(self._app))

    @property
    def endpoint(self):
        return self.server.url + '/v2.1'

    def answer(self, method, path, status=200, body=None):
        """Answer the next ``method path`` so; answers to the same request
        are given in the order scripted."""
        self._answers.setdefault((method, path), []).append((status, body))

    @webob.dec.wsgify
    def _app(self, req):
        path = req.path_info.removeprefix('/v2.1')
        self.requests.append((req.method, path, dict(req.GET),
                              req.json if req.body else None))
        self.versions.add(req.headers.get('OpenStack-API-Version'))
        answers = self._answers.get((req.method, path))
        status, body = (answers.pop(0) if answers
                        else (418, {'error': 'not scripted'}))
        response = webob.Response(status=status,
                                  content_type='application/json',
                                  charset='utf-8')
        if body is not None:
            response.json = body
        return response


def flavor(flavor_id, name, public=False):
    """A flavor as ``GET /flavors/detail`` shows it."""
    return {'id': flavor_id, 'name': name, 'vcpus': 1, 'ram': 1, 'disk': 0,
            'os-flavor-access:is_public': public}


def access(*projects):
    return {'flavor_access': [{'flavor_id': FLAVOR, 'tenant_id': project}
                              for project in projects]}


class NovaClientTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(ScriptedNova())
        base.use_plugin_options(self, 'admin_token', 'nova')
        self.config(group='nova', auth_type='admin_token',
                    endpoint=self.nova.endpoint, token=TOKEN)
        self.client = nova.NovaClient()

    def assert_requests(self, expected):
        self.assertEqual(expected, self.nova.requests)
        self.assertEqual({'compute %s' % nova.NOVA_MICROVERSION},
                         self.nova.versions)

    def assert_error(self, error, method, status):
        """A NovaError that is no outage, naming the request Nova refused."""
        self.assertIsInstance(error, exception.NovaError)
        self.assertNotIsInstance(error, exception.NovaUnavailable)
        self.assertIn('%s %s' % (method, self.nova.endpoint), str(error))
        self.assertIn('returned %d' % status, str(error))


class TestEnsurePrivateFlavor(NovaClientTestCase):

    def ensure(self, **kwargs):
        return self.client.ensure_private_flavor(
            NAME, vcpus=2, ram=1024, disk=10, extra_specs=SPECS,
            project_id=PROJECT, **kwargs)

    def found(self, *pages):
        """Script ``GET /flavors/detail`` to answer ``pages`` in turn."""
        for page in pages:
            self.nova.answer('GET', '/flavors/detail', body=page)

    def access_and_specs(self):
        self.nova.answer('POST', '/flavors/%s/action' % FLAVOR,
                         body=access(PROJECT))
        self.nova.answer('POST', '/flavors/%s/os-extra_specs' % FLAVOR,
                         body={'extra_specs': SPECS})

    def lookup(self, query=ALL_FLAVORS):
        return ('GET', '/flavors/detail', query, None)

    def create(self):
        return ('POST', '/flavors', {}, {'flavor': {
            'name': NAME, 'vcpus': 2, 'ram': 1024, 'disk': 10,
            'os-flavor-access:is_public': False}})

    def add_access(self):
        return ('POST', '/flavors/%s/action' % FLAVOR, {},
                {'addTenantAccess': {'tenant': PROJECT}})

    def list_access(self):
        return ('GET', '/flavors/%s/os-flavor-access' % FLAVOR, {}, None)

    def set_specs(self):
        return ('POST', '/flavors/%s/os-extra_specs' % FLAVOR, {},
                {'extra_specs': SPECS})

    def test_found_among_all_flavors(self):
        self.found({'flavors': [flavor('1', 'm1.tiny', public=True),
                                flavor(FLAVOR, NAME)]})
        self.access_and_specs()

        self.assertEqual(FLAVOR, self.ensure(timeout=30))

        self.assert_requests([self.lookup(), self.add_access(),
                              self.set_specs()])

    def test_found_on_a_later_page(self):
        # Nova's link names its public URL, which we may not reach; and
        # a next page without is_public=None would hold public flavors
        # only, so it is asked for on every page.
        link = ('http://compute.example.invalid/v2.1/flavors/detail'
                '?limit=1&marker=1')
        self.found({'flavors': [flavor('1', 'm1.tiny', public=True)],
                    'flavors_links': [{'rel': 'next', 'href': link}]},
                   {'flavors': [flavor(FLAVOR, NAME)]})
        self.access_and_specs()

        self.assertEqual(FLAVOR, self.ensure())

        self.assert_requests([
            self.lookup(),
            self.lookup({'is_public': 'None', 'limit': '1', 'marker': '1'}),
            self.add_access(), self.set_specs()])

    def test_created_when_missing(self):
        self.found({'flavors': [flavor('1', 'm1.tiny', public=True)]})
        self.nova.answer('POST', '/flavors',
                         body={'flavor': flavor(FLAVOR, NAME)})
        self.access_and_specs()

        self.assertEqual(FLAVOR, self.ensure(timeout=30))

        self.assert_requests([self.lookup(), self.create(),
                              self.add_access(), self.set_specs()])

    def test_created_meanwhile_by_another_worker(self):
        self.found({'flavors': []}, {'flavors': [flavor(FLAVOR, NAME)]})
        self.nova.answer('POST', '/flavors', 409, {'conflictingRequest': {
            'code': 409, 'message': 'Flavor with name %s already exists.'
                                    % NAME}})
        self.access_and_specs()

        self.assertEqual(FLAVOR, self.ensure())

        self.assert_requests([self.lookup(), self.create(), self.lookup(),
                              self.add_access(), self.set_specs()])

    def test_conflict_on_create_but_still_not_found(self):
        self.found({'flavors': []}, {'flavors': []})
        self.nova.answer('POST', '/flavors', 409, {'conflictingRequest': {
            'code': 409, 'message': 'Flavor with ID x already exists.'}})

        error = self.assertRaises(exception.NovaError, self.ensure)

        self.assert_error(error, 'POST', 409)
        self.assert_requests([self.lookup(), self.create(), self.lookup()])

    def test_access_already_there(self):
        self.found({'flavors': [flavor(FLAVOR, NAME)]})
        self.nova.answer('POST', '/flavors/%s/action' % FLAVOR, 409, {
            'conflictingRequest': {'code': 409, 'message': 'Flavor access '
                                   'already exists for flavor and project '
                                   'combination.'}})
        self.nova.answer('GET', '/flavors/%s/os-flavor-access' % FLAVOR,
                         body=access('someone-else', PROJECT))
        self.nova.answer('POST', '/flavors/%s/os-extra_specs' % FLAVOR,
                         body={'extra_specs': SPECS})

        self.assertEqual(FLAVOR, self.ensure())

        self.assert_requests([self.lookup(), self.add_access(),
                              self.list_access(), self.set_specs()])

    def test_a_public_flavor_of_that_name_is_an_error(self):
        # Nova's 409 for a public flavor looks like the one for access
        # already given; its access list (a 404) tells them apart.
        self.found({'flavors': [flavor(FLAVOR, NAME, public=True)]})
        self.nova.answer('POST', '/flavors/%s/action' % FLAVOR, 409, {
            'conflictingRequest': {'code': 409, 'message': 'Can not add '
                                   'access to a public flavor.'}})
        self.nova.answer('GET', '/flavors/%s/os-flavor-access' % FLAVOR, 404,
                         {'itemNotFound': {'code': 404, 'message': 'Access '
                          'list not available for public flavors.'}})

        error = self.assertRaises(exception.NovaError, self.ensure)

        self.assert_error(error, 'POST', 409)
        self.assertIn('public flavor', str(error))
        self.assert_requests([self.lookup(), self.add_access(),
                              self.list_access()])

    def test_conflict_on_access_without_the_project_listed(self):
        self.found({'flavors': [flavor(FLAVOR, NAME)]})
        self.nova.answer('POST', '/flavors/%s/action' % FLAVOR, 409, {})
        self.nova.answer('GET', '/flavors/%s/os-flavor-access' % FLAVOR,
                         body=access('someone-else'))

        error = self.assertRaises(exception.NovaError, self.ensure)

        self.assert_error(error, 'POST', 409)
        self.assert_requests([self.lookup(), self.add_access(),
                              self.list_access()])

    def test_unexpected_status_on_create(self):
        self.found({'flavors': []})
        self.nova.answer('POST', '/flavors', 400, {'badRequest': {
            'code': 400, 'message': 'Invalid input for field/attribute '
                                    'ram.'}})

        error = self.assertRaises(exception.NovaError, self.ensure)

        self.assert_error(error, 'POST', 400)
        self.assertIn('Invalid input for field/attribute ram', str(error))
        self.assert_requests([self.lookup(), self.create()])

    def test_unexpected_status_on_lookup(self):
        self.nova.answer('GET', '/flavors/detail', 403, {'forbidden': {
            'code': 403, 'message': 'Policy does not allow it.'}})

        error = self.assertRaises(exception.NovaError, self.ensure)

        self.assert_error(error, 'GET', 403)
        self.assert_requests([self.lookup()])

    def test_unexpected_status_on_extra_specs(self):
        self.found({'flavors': [flavor(FLAVOR, NAME)]})
        self.nova.answer('POST', '/flavors/%s/action' % FLAVOR,
                         body=access(PROJECT))
        self.nova.answer('POST', '/flavors/%s/os-extra_specs' % FLAVOR, 400,
                         {'badRequest': {'code': 400, 'message': 'no'}})

        error = self.assertRaises(exception.NovaError, self.ensure)

        self.assert_error(error, 'POST', 400)
        self.assert_requests([self.lookup(), self.add_access(),
                              self.set_specs()])

    def test_5xx_is_unavailable(self):
        self.found({'flavors': []})
        self.nova.answer('POST', '/flavors', 500, {'computeFault': {
            'code': 500, 'message': 'Unexpected API Error.'}})

        error = self.assertRaises(exception.NovaUnavailable, self.ensure)

        self.assertIn('returned 500', str(error))
        self.assert_requests([self.lookup(), self.create()])

    def test_5xx_on_access_list_is_unavailable(self):
        self.found({'flavors': [flavor(FLAVOR, NAME)]})
        self.nova.answer('POST', '/flavors/%s/action' % FLAVOR, 409, {})
        self.nova.answer('GET', '/flavors/%s/os-flavor-access' % FLAVOR,
                         503, {})

        self.assertRaises(exception.NovaUnavailable, self.ensure)

        self.assert_requests([self.lookup(), self.add_access(),
                              self.list_access()])

    def test_nova_down_is_unavailable(self):
        self.nova.server.stop()

        self.assertRaises(exception.NovaUnavailable, self.ensure)

    def test_no_time_left_sends_nothing(self):
        error = self.assertRaises(exception.NovaUnavailable, self.ensure,
                                  timeout=0)

        self.assertIn('deadline', str(error))
        self.assertEqual([], self.nova.requests)


class TestDeleteFlavor(NovaClientTestCase):

    REQUEST = ('DELETE', '/flavors/%s' % FLAVOR, {}, None)

    def test_deleted(self):
        self.nova.answer('DELETE', '/flavors/%s' % FLAVOR, 202)

        self.assertIsNone(self.client.delete_flavor(FLAVOR, timeout=30))

        self.assert_requests([self.REQUEST])

    def test_gone_already(self):
        self.nova.answer('DELETE', '/flavors/%s' % FLAVOR, 404, {
            'itemNotFound': {'code': 404, 'message': 'Flavor %s could not '
                             'be found.' % FLAVOR}})

        self.assertIsNone(self.client.delete_flavor(FLAVOR))

        self.assert_requests([self.REQUEST])

    def test_unexpected_status(self):
        self.nova.answer('DELETE', '/flavors/%s' % FLAVOR, 403, {
            'forbidden': {'code': 403, 'message': 'Policy does not allow '
                          'os_compute_api:os-flavor-manage:delete.'}})

        error = self.assertRaises(exception.NovaError,
                                  self.client.delete_flavor, FLAVOR)

        self.assert_error(error, 'DELETE', 403)
        self.assertIn('os-flavor-manage:delete', str(error))
        self.assert_requests([self.REQUEST])

    def test_5xx_is_unavailable(self):
        self.nova.answer('DELETE', '/flavors/%s' % FLAVOR, 503, {})

        self.assertRaises(exception.NovaUnavailable,
                          self.client.delete_flavor, FLAVOR)

        self.assert_requests([self.REQUEST])


class TestDeleteServer(NovaClientTestCase):

    REQUEST = ('DELETE', '/servers/%s' % INSTANCE, {}, None)

    def test_asked(self):
        self.nova.answer('DELETE', '/servers/%s' % INSTANCE, 204)

        self.assertTrue(self.client.delete_server(INSTANCE, timeout=30))

        self.assert_requests([self.REQUEST])

    def test_gone_already(self):
        self.nova.answer('DELETE', '/servers/%s' % INSTANCE, 404, {
            'itemNotFound': {'code': 404, 'message': 'Instance %s could '
                             'not be found.' % INSTANCE}})

        self.assertFalse(self.client.delete_server(INSTANCE))

        self.assert_requests([self.REQUEST])

    def test_unexpected_status(self):
        self.nova.answer('DELETE', '/servers/%s' % INSTANCE, 409, {
            'conflictingRequest': {'code': 409, 'message': 'Instance %s is '
                                   'locked' % INSTANCE}})

        error = self.assertRaises(exception.NovaError,
                                  self.client.delete_server, INSTANCE)

        self.assert_error(error, 'DELETE', 409)
        self.assertIn('is locked', str(error))
        self.assert_requests([self.REQUEST])

    def test_5xx_is_unavailable(self):
        self.nova.answer('DELETE', '/servers/%s' % INSTANCE, 500, {})

        self.assertRaises(exception.NovaUnavailable,
                          self.client.delete_server, INSTANCE)

        self.assert_requests([self.REQUEST])
