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

"""A project's limit on holds as Keystone's unified limits give it, on
oslo.limit's own fake Keystone; and Keystone failing, a 503."""

from keystoneauth1 import exceptions as ks_exc
from openstack import exceptions as sdk_exc
from oslo_limit import fixture as limit_fixture

from reserveapi.common import exception
from reserveapi.peers import limits
from tests import base

RESOURCE = 'baremetal_hold_nodes'


class TestProjectLimit(base.TestCase):

    def keystone(self, registered, projects=None):
        """oslo.limit's fake Keystone; its mock connection."""
        fake = self.useFixture(limit_fixture.LimitFixture(
            registered, projects or {}))
        self.config(endpoint_id='reserveapi-public', group='oslo_limit')
        return fake.mock_conn

    def test_the_projects_own_limit_else_the_registered_one(self):
        self.keystone({RESOURCE: 4, 'other_resource': 1},
                      {'p1': {RESOURCE: 10}, 'p2': {'other_resource': 7}})
        self.assertEqual(10, limits.project_limit('p1'))
        self.assertEqual(4, limits.project_limit('p2'))
        self.assertEqual(4, limits.project_limit('p3'))

    def test_minus_one_is_no_limit_and_zero_no_node(self):
        self.keystone({RESOURCE: 0}, {'p1': {RESOURCE: -1}})
        self.assertIsNone(limits.project_limit('p1'))
        self.assertEqual(0, limits.project_limit('p2'))

    def test_no_registered_limit_is_no_node(self):
        # oslo.limit's reading, which Nova's and Glance's quotas share.
        self.keystone({})
        self.assertEqual(0, limits.project_limit('p1'))

    def test_keystone_failing_is_a_503(self):
        connection = self.keystone({RESOURCE: 4})
        for failure in (
                ks_exc.ConnectFailure('Unable to establish connection to '
                                      'http://keystone:5000/v3/limits'),
                sdk_exc.HttpException('503 Service Unavailable'),
                ks_exc.Unauthorized('The request you have made requires '
                                    'authentication.')):
            connection.limits.side_effect = failure
            error = self.assertRaises(exception.KeystoneUnavailable,
                                      limits.project_limit, 'p1')
            self.assertEqual(503, error.status)
            self.assertEqual('reserveapi.keystone_unavailable', error.code)
            self.assertEqual(
                'Keystone is unavailable: the limit on baremetal_hold_nodes '
                'of project p1 could not be read: %s'
                % str(failure).splitlines()[0], error.detail)

    def test_no_endpoint_named_is_a_503_that_says_so(self):
        self.keystone({RESOURCE: 4})
        self.config(endpoint_id=None, group='oslo_limit')
        error = self.assertRaises(exception.KeystoneUnavailable,
                                  limits.project_limit, 'p1')
        self.assertIn('Either service_type or service_name should be set',
                      error.detail)
