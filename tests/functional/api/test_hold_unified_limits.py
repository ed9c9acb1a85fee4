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

"""``[holds] unified_limits``: a project's limit on holds from Keystone
(oslo.limit's fake Keystone), refused as the config option refuses; the
option off, the config option applies; Keystone down, a 503 and no
hold."""

from keystoneauth1 import exceptions as ks_exc
from oslo_limit import fixture as limit_fixture

from tests.functional.api import test_holds

RESOURCE = 'baremetal_hold_nodes'
SAMPLE_PROJECT = test_holds.SAMPLE_PROJECT
OTHER_PROJECT = test_holds.OTHER_PROJECT
moment = test_holds.moment


class TestUnifiedLimits(test_holds.HoldsTestCase):

    def setUp(self):
        super().setUp()
        self.gold_nodes(3)
        self.keystone = self.useFixture(limit_fixture.LimitFixture(
            {RESOURCE: 1}, {OTHER_PROJECT: {RESOURCE: 3}}))
        self.config(endpoint_id='reserveapi-public', group='oslo_limit')
        self.start, self.end = moment(hours=3), moment(hours=5)

    def over_quota(self, **fields):
        """The 403's error, but its request id."""
        error = self.assertError(
            self.hold(self.start, self.end, **fields), 403,
            'reserveapi.hold_quota_exceeded')
        del error['request_id']
        return error

    def test_over_the_keystone_limit_as_over_the_config_option(self):
        self.config(max_amount_per_project=1, group='holds')
        by_option = self.over_quota(amount=2)
        self.config(max_amount_per_project=0, unified_limits=True,
                    group='holds')
        self.assertEqual(by_option, self.over_quota(amount=2))
        # One node for the sample project, by the registered limit; the
        # other project's own limit is three.
        hold = self.admitted(self.start, self.end, amount=1)
        self.assertError(self.call('PATCH', '/v1/holds/' + hold['uuid'],
                                   {'amount': 2}),
                         403, 'reserveapi.hold_quota_exceeded')
        self.assertEqual(2, self.admitted(
            self.start, self.end, amount=2,
            project_id=OTHER_PROJECT)['amount'])

    def test_the_option_off_reads_no_keystone(self):
        self.config(max_amount_per_project=2, group='holds')
        self.admitted(self.start, self.end, amount=2)
        self.keystone.mock_conn.limits.assert_not_called()

    def test_keystone_down_is_a_503_and_no_hold(self):
        self.config(unified_limits=True, group='holds')
        self.keystone.mock_conn.limits.side_effect = ks_exc.ConnectFailure(
            'Unable to establish connection to http://keystone:5000')
        response = self.hold(self.start, self.end, amount=1)
        error = self.assertError(response, 503,
                                 'reserveapi.keystone_unavailable')
        self.assertIn('Unable to establish connection', error['detail'])
        self.assertIn('Retry-After', response.headers)
        self.assertEqual([], self.listed())
