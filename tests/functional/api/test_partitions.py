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

"""Microversion 1.1: a reservation limited to one Ironic partition."""

from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.functional import base
from tests.functional.api import reservation_base as rbase

sample = examples.sample
V1_1 = {'OpenStack-API-Version': 'baremetal-reservation 1.1'}


class TestPartitions(rbase.ReservationTestCase):
    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        self.nodes(
            inventory.node('default-1'),
            inventory.node('rack-a-1', conductor_group='rack-a',
                           shard='shard-1'),
            inventory.node('rack-a-2', conductor_group='Rack-A',
                           shard='shard-2'),
            inventory.node('rack-b-1', conductor_group='rack-b',
                           shard='shard-1'))
        self.headers = dict(self.admin_headers, **V1_1)

    def reserve_in(self, **partition):
        return self.reserve(headers=self.headers, **partition)

    def test_the_sample_reserves_in_its_partition(self):
        self.nodes(inventory.node('node-gold-1'),
                   inventory.node('node-gold-2', conductor_group='rack-a',
                                  shard='shard-1'))
        response = self.request(
            'POST', '/v1/reservations',
            sample('reservations/create-partition-request.json'),
            headers=self.headers)
        self.assertReserved(response, 'node-gold-2')

    def test_conductor_group_and_shard(self):
        self.assertChooses('rack-a-1', None, headers=self.headers,
                           conductor_group='rack-a', shard='shard-1')
        self.assertChooses('rack-b-1', None, headers=self.headers,
                           conductor_group='rack-b')
        self.assertChooses('rack-a-2', None, headers=self.headers,
                           shard='shard-2')

    def test_empty_conductor_group_is_the_default_group(self):
        self.assertChooses('default-1', None, headers=self.headers,
                           conductor_group='')

    def test_null_is_any_partition(self):
        names = set()
        for _ in range(4):
            response = self.reserve_in(conductor_group=None, shard=None)
            self.assertEqual(201, response.status_int, response.text)
            names.add(response.json['node_name'])
        self.assertEqual({'default-1', 'rack-a-1', 'rack-a-2', 'rack-b-1'},
                         names)

    def test_conductor_group_in_any_case(self):
        # Ironic lower-cases conductor groups; so do we.
        self.assertChooses('rack-a-2', None, headers=self.headers,
                           conductor_group='RACK-A', shard='shard-2')

    def test_other_partitions_are_counted(self):
        response = self.reserve_in(conductor_group='rack-c')
        self.assertNoValidNode(response, '4 nodes: 4 in another partition')
        self.assertNothingReserved()
        self.assertReserved(self.reserve_in(conductor_group='rack-a',
                                            shard='shard-1'), 'rack-a-1')
        self.assertReserved(self.reserve_in(conductor_group='rack-b'),
                            'rack-b-1')
        self.assertNoValidNode(
            self.reserve_in(shard='shard-1'),
            '4 nodes: 2 reserved, 2 in another partition')

    def test_bad_partitions_are_400(self):
        for fields in ({'shard': ''}, {'shard': 7},
                       {'conductor_group': 'x' * 256},
                       # Ironic takes letters, digits, "_", "-", ".".
                       {'conductor_group': 'rack a'},
                       {'conductor_group': 'rack/a'},
                       {'shard': ['a']}):
            error = self.assertError(self.reserve_in(**fields), 400,
                                     'reserveapi.invalid')
            self.assertIn(sorted(fields)[-1], error['detail'])
        self.assertNothingReserved()

    def test_version_1_0_refuses_partitions(self):
        for fields in ({'conductor_group': 'rack-a'}, {'shard': 'shard-1'}):
            error = self.assertError(self.reserve(**fields), 400,
                                     'reserveapi.invalid')
            self.assertIn('unknown field', error['detail'])
        self.assertNothingReserved()
