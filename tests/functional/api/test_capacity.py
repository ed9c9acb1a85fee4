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

"""Capacity per resource class over the real WSGI app."""

import uuid

from reserveapi_testing import inventory
from tests.functional import base

SILVER = {'memory_mb': 65536, 'cpus': 32, 'local_gb': 960,
          'resource_class': 'baremetal-silver'}


class TestCapacity(base.APITestCase):
    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        inventory.sync(self, [
            inventory.node('node-gold-1'),
            inventory.node('node-gold-2'),
            inventory.node('node-gold-3', maintenance=True),
            inventory.node('node-gold-4'),
            inventory.node('node-silver-1', **SILVER),
            inventory.node('node-silver-2', **SILVER),
        ])
        self.gold_1 = self.reserve('node-gold-1', 'compute-3')
        gold_2 = self.reserve('node-gold-2', 'compute-4')
        self.assertEqual(200, self.request(
            'PATCH', '/v1/reservations/' + gold_2, [
                {'op': 'replace', 'path': '/state', 'value': 'active'}]
        ).status_int)
        self.reserve('node-silver-2', 'compute-3',
                     'resources:CUSTOM_BAREMETAL_SILVER')

    def reserve(self, node_name, host,
                resource='resources:CUSTOM_BAREMETAL_GOLD'):
        response = self.request('POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'host': host,
            'candidate_nodes': [node_name],
            'request_spec': {'extra_specs': {resource: '1'}}})
        self.assertEqual(201, response.status_int, response.text)
        self.assertEqual(node_name, response.json['node_name'])
        return response.json['uuid']

    def capacity(self, query='', headers=None):
        response = self.request('GET', '/v1/capacity' + query,
                                headers=headers)
        self.assertEqual(200, response.status_int, response.text)
        return response.json

    def by_class(self, query=''):
        return {row['resource_class']: row
                for row in self.capacity(query)['capacity']}

    def test_per_resource_class(self):
        body = self.capacity()
        self.assertMatchesSample(body, 'capacity/capacity-response.json')
        self.assertNotIn('host', body)
        gold = self.by_class()['CUSTOM_BAREMETAL_GOLD']
        self.assertEqual(
            {'total': 4, 'available': 1, 'reserved': 2, 'memory_mb': 32768,
             'vcpus': 32, 'local_gb': 400},
            {key: gold[key] for key in ('total', 'available', 'reserved',
                                        'memory_mb', 'vcpus', 'local_gb')})

    def test_per_host(self):
        body = self.capacity('?host=compute-3')
        self.assertMatchesSample(body,
                                 'capacity/capacity-host-response.json')
        self.assertEqual('compute-3', body['host'])
        self.assertEqual({'CUSTOM_BAREMETAL_GOLD': 0,
                          'CUSTOM_BAREMETAL_SILVER': 0},
                         {name: row['reserved_by_host'] for name, row in
                          self.by_class('?host=compute-9').items()})
        self.assertEqual({'CUSTOM_BAREMETAL_GOLD': 1,
                          'CUSTOM_BAREMETAL_SILVER': 0},
                         {name: row['reserved_by_host'] for name, row in
                          self.by_class('?host=compute-4').items()})

    def test_follows_reservations(self):
        self.assertEqual(204, self.request(
            'DELETE', '/v1/reservations/' + self.gold_1).status_int)
        gold = self.by_class('?host=compute-3')['CUSTOM_BAREMETAL_GOLD']
        self.assertEqual((2, 1, 0), (gold['available'], gold['reserved'],
                                     gold['reserved_by_host']))
        self.reserve('node-gold-4', 'compute-3')
        gold = self.by_class('?host=compute-3')['CUSTOM_BAREMETAL_GOLD']
        self.assertEqual((1, 2, 1), (gold['available'], gold['reserved'],
                                     gold['reserved_by_host']))

    def test_follows_the_inventory(self):
        inventory.sync(self, [
            inventory.node('node-gold-1'),
            inventory.node('node-gold-2', retired=True),
            inventory.node('node-gold-4', instance_uuid=str(uuid.uuid4())),
            inventory.node('node-gold-5', power_state=None),
            inventory.node('node-bronze-1', resource_class=None),
            inventory.node('node-silver-1', **SILVER),
        ])
        rows = self.capacity()['capacity']
        # node-bronze-1 has no resource class: Nova reports no inventory
        # for it, so neither does the capacity.
        self.assertEqual(['CUSTOM_BAREMETAL_GOLD', 'CUSTOM_BAREMETAL_SILVER'],
                         [row['resource_class'] for row in rows])
        gold, silver = rows
        # node-silver-2 vanished but is reserved: kept, yet no capacity.
        self.assertEqual((4, 0, 2), (gold['total'], gold['available'],
                                     gold['reserved']))
        self.assertEqual((1, 1, 0), (silver['total'], silver['available'],
                                     silver['reserved']))

    def test_empty_inventory(self):
        for reservation in self.request('GET', '/v1/reservations').json[
                'reservations']:
            self.request('DELETE', '/v1/reservations/' + reservation['uuid'])
        inventory.sync(self, [])
        self.assertEqual({'capacity': []}, self.capacity())

    def test_reader_may_read(self):
        reader = self.headers_for(['reader'], project_id='any-project')
        self.assertEqual(2, len(self.capacity(headers=reader)['capacity']))

    def test_bad_query_is_400(self):
        response = self.request('GET', '/v1/capacity?resource_class=x')
        error = self.assertError(response, 400, 'reserveapi.invalid')
        self.assertIn('resource_class', error['detail'])
