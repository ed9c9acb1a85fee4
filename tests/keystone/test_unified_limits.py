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

"""``[holds] unified_limits`` against Keystone's own limits: oslo.limit
finds our endpoint by its service type and region, as the operator
guide configures it, with a system reader's credentials."""

import datetime

import fixtures

from reserveapi.api import microversion
from reserveapi_testing import examples
from reserveapi_testing import inventory
from reserveapi_testing import keystone as keystone_fixture
from tests import base as test_base
from tests.keystone import base

RESOURCE = 'baremetal_hold_nodes'
VERSION = {'OpenStack-API-Version': 'baremetal-reservation 1.6'}


class TestUnifiedLimits(base.KeystoneTestCase):

    def setUp(self):
        super().setUp()
        # oslo.limit keeps one connection per process: this test's own.
        self.useFixture(fixtures.MonkeyPatch(
            'oslo_limit.limit._SDK_CONNECTION', None))
        test_base.use_plugin_options(self, 'password', 'oslo_limit')
        reader = keystone_fixture.PERSONAS['system_reader'].user
        self.config(
            group='oslo_limit',
            endpoint_service_type=microversion.SERVICE_TYPE,
            endpoint_region_name=keystone_fixture.REGION,
            auth_type='password', auth_url=self.keystone.auth_url,
            username=reader, user_domain_name='Default',
            password=self.keystone.passwords[reader], system_scope='all',
            timeout=base.REQUEST_TIMEOUT)
        self.config(unified_limits=True, group='holds')
        (service,) = self.keystone.api(
            'GET', '/services?type=' + microversion.SERVICE_TYPE)['services']
        where = {'service_id': service['id'], 'resource_name': RESOURCE,
                 'region_id': keystone_fixture.REGION}
        self.limit('registered_limits', dict(where, default_limit=1))
        self.limit('limits', dict(where, project_id=self.project_b,
                                  resource_limit=2))
        self.sync_nodes([inventory.node('node-%d' % number)
                         for number in range(3)])

    def limit(self, collection, limit):
        """Create one limit in Keystone, deleted after the test."""
        (created,) = self.keystone.api(
            'POST', '/' + collection, {collection: [limit]})[collection]
        self.addCleanup(self.keystone.api, 'DELETE',
                        '/%s/%s' % (collection, created['id']))

    def hold(self, project_id, amount):
        start = datetime.datetime.now(datetime.timezone.utc) + (
            datetime.timedelta(hours=3))
        body = dict(examples.sample('holds/create-request.json'),
                    project_id=project_id, amount=amount,
                    start=start.isoformat(),
                    end=(start + datetime.timedelta(hours=2)).isoformat())
        return self.call(self.token('admin'), 'POST', '/v1/holds', body,
                         headers=VERSION)

    def test_the_projects_own_limit_else_the_registered_one(self):
        self.assertError(self.hold(self.project_a, 2), 403,
                         'reserveapi.hold_quota_exceeded')
        response = self.hold(self.project_b, 2)
        self.assertEqual(201, response.status_code, response.text)
