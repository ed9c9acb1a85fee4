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

"""Generated request specs and JSON Patches through the whole API and
the database (Hypothesis; the strategies are the unit tests'): only the
statuses the API documents, every error in the API-WG format, and what
is stored always valid.
"""

import uuid

from hypothesis import given
from hypothesis import settings

from reserveapi.common import states
from reserveapi.common import validators
from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.functional import base
from tests.unit.api import test_properties as strategies

SETTINGS = settings(max_examples=60, deadline=None, database=None,
                    derandomize=True)


class TestGeneratedRequests(base.APITestCase):

    def setUp(self):
        super().setUp()
        inventory.sync(self, [inventory.node('node-%d' % index)
                              for index in range(3)])

    def assertDocumented(self, response, statuses):
        self.assertIn(response.status_int, statuses, response.text)
        if response.status_int >= 400:
            (error,) = response.json['errors']
            self.assertEqual(response.status_int, error['status'])
            self.assertTrue(error['detail'])
            self.assertIsNone(strategies.REPR.search(error['detail']),
                              error['detail'])

    @SETTINGS
    @given(strategies.request_specs)
    def test_a_generated_request_spec_reserves_or_is_refused(self, spec):
        response = self.request('POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'host': 'compute-1',
            'request_spec': spec})
        self.assertDocumented(response, {201, 400, 409})
        if response.status_int == 201:
            self.assertEqual(204, self.request(
                'DELETE', response.location).status_int)

    @SETTINGS
    @given(strategies.patches)
    def test_a_generated_patch_leaves_a_valid_reservation(self, patch):
        if not hasattr(self, 'reservation'):
            self.reservation = self.request('POST', '/v1/reservations', {
                'instance_uuid': str(uuid.uuid4()), 'host': 'compute-1',
                'request_spec': examples.REQUEST_SPEC}).json
        path = '/v1/reservations/' + self.reservation['uuid']
        self.assertDocumented(self.request('PATCH', path, patch),
                              {200, 400, 409})
        stored = self.request('GET', path).json
        self.assertIn(stored['state'], (states.RESERVED, states.ACTIVE))
        self.assertEqual(stored['host'], validators.host_name(stored['host']))
        self.assertEqual(self.reservation['node_uuid'], stored['node_uuid'])
