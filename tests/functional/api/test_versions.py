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

"""Version discovery, microversion negotiation and the error format."""

import fixtures
from keystonemiddleware import opts as auth_token_opts
import webtest

from reserveapi import conf
from reserveapi.api import app as app_mod
from tests.functional import base


class TestVersions(base.APITestCase):

    def test_root_lists_v1(self):
        response = self.request('GET', '/', headers={})
        self.assertEqual(200, response.status_int)
        self.assertMatchesSample(response.json,
                                 'versions/get-root-response.json')
        # Without the header: the minimum.
        self.assertEqual('baremetal-reservation 1.0',
                         response.headers['OpenStack-API-Version'])
        self.assertEqual('OpenStack-API-Version', response.headers['Vary'])
        self.assertTrue(response.headers['x-openstack-request-id'])

    def test_v1_document(self):
        response = self.request('GET', '/v1', headers={})
        self.assertEqual(200, response.status_int)
        self.assertMatchesSample(response.json,
                                 'versions/get-v1-response.json')
        self.assertEqual('http://localhost/v1/',
                         response.json['version']['links'][0]['href'])

    def test_links_honour_public_endpoint(self):
        self.config(public_endpoint='https://api.example.com/reservation',
                    group='api')
        response = self.request('GET', '/v1', headers={})
        self.assertEqual('https://api.example.com/reservation/v1/',
                         response.json['version']['links'][0]['href'])

    def test_links_honour_proxy_headers(self):
        self.config(enable_proxy_headers_parsing=True,
                    group='oslo_middleware')
        response = self.request(
            'GET', '/v1', headers={'X-Forwarded-Proto': 'https',
                                   'X-Forwarded-Host': 'cloud.example.com'})
        self.assertEqual('https://cloud.example.com/v1/',
                         response.json['version']['links'][0]['href'])

    def test_latest_is_max(self):
        response = self.request(
            'GET', '/v1',
            headers={'OpenStack-API-Version': 'baremetal-reservation latest'})
        self.assertEqual('baremetal-reservation 1.6',
                         response.headers['OpenStack-API-Version'])

    def test_deprecated_service_type_is_still_read_and_echoed(self):
        # Clients of the releases that used Blazar's "reservation".
        for header, echoed in (
                ('reservation 1.1', 'reservation 1.1'),
                ('reservation latest', 'reservation 1.6'),
                ('RESERVATION 1.0', 'reservation 1.0'),
                # Both named (our client does so): ours wins.
                ('baremetal-reservation 1.1, reservation 1.0',
                 'baremetal-reservation 1.1'),
                ('reservation 1.0, baremetal-reservation 1.1',
                 'baremetal-reservation 1.1'),
                # Blazar's type beside another service's.
                ('compute 2.90, reservation 1.1', 'reservation 1.1')):
            response = self.request(
                'GET', '/v1', headers={'OpenStack-API-Version': header})
            self.assertEqual(200, response.status_int, header)
            self.assertEqual(echoed,
                             response.headers['OpenStack-API-Version'])

    def test_unsupported_version_is_406(self):
        for service_type in ('baremetal-reservation', 'reservation'):
            response = self.request(
                'GET', '/v1',
                headers={'OpenStack-API-Version': service_type + ' 1.99'})
            error = self.assertError(response, 406,
                                     'reserveapi.version_not_acceptable')
            self.assertIn('1.0 to 1.6', error['detail'])

    def test_malformed_version_is_400(self):
        for header in ('baremetal-reservation one', 'reservation one',
                       'baremetal-reservation'):
            response = self.request(
                'GET', '/v1', headers={'OpenStack-API-Version': header})
            error = self.assertError(response, 400, 'reserveapi.invalid')
            self.assertIn('"baremetal-reservation 1.N"', error['detail'])

    def test_other_service_version_header_is_ignored(self):
        response = self.request(
            'GET', '/v1', headers={'OpenStack-API-Version': 'compute 2.90'})
        self.assertEqual(200, response.status_int)
        self.assertEqual('baremetal-reservation 1.0',
                         response.headers['OpenStack-API-Version'])


class TestErrors(base.APITestCase):

    def test_unknown_path_is_404_api_wg(self):
        for path in ('/nope', '/v1/nope', '/v1/nope/deeper'):
            response = self.request('GET', path, headers={})
            error = self.assertError(response, 404, 'reserveapi.not_found')
            self.assertEqual('Not Found', error['title'])

    def test_error_sample_matches(self):
        response = self.request('GET', '/nope', headers={})
        self.assertMatchesSample(response.json,
                                 'errors/error-response.json')

    def test_method_not_allowed_is_405_api_wg(self):
        response = self.request('DELETE', '/v1', headers={})
        self.assertError(response, 405, 'reserveapi.method_not_allowed')

    def test_missing_token_is_401_api_wg(self):
        self.useFixture(fixtures.MonkeyPatch(
            'keystonemiddleware.auth_token.AuthProtocol',
            base.REAL_AUTH_PROTOCOL))
        for group, opts in auth_token_opts.list_auth_token_opts():
            conf.CONF.register_opts(opts, group=group)
        self.config(www_authenticate_uri='https://keystone.example.com/v3',
                    group='keystone_authtoken')
        app = webtest.TestApp(app_mod.setup_app())
        response = app.get('/v1/reservations', status='*')
        self.assertError(response, 401, 'reserveapi.unauthorized')
        self.assertIn('WWW-Authenticate', response.headers)
        # Version discovery is public, as in other OpenStack services;
        # only GET, and only those two paths.
        for path in ('/', '/v1', '/v1/'):
            self.assertEqual(200, app.get(path).status_int)
        for method, path in (('DELETE', '/v1'), ('GET', '/v1/nodes'),
                             ('GET', '/v1/v1'), ('GET', '/nope')):
            response = app.request(path, method=method, status='*')
            self.assertError(response, 401, 'reserveapi.unauthorized')

    def test_oversized_body_is_413_api_wg(self):
        self.config(max_request_body_size=16, group='oslo_middleware')
        response = self.app.post('/v1', '{"x": "%s"}' % ('y' * 64),
                                 headers=self.admin_headers,
                                 content_type='application/json',
                                 status='*')
        self.assertError(response, 413,
                         'reserveapi.request_entity_too_large')

    def test_healthcheck_needs_no_token(self):
        response = self.app.get('/healthcheck', status='*')
        self.assertEqual(200, response.status_int)
        self.assertTrue(response.headers['x-openstack-request-id'])
