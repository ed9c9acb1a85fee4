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

    def test_admin_and_service_read_no_project_does(self):
        """The whole cloud's capacity is no project's business, as
        Placement's usages are not (microversion 1.4's defaults)."""
        reader = self.headers_for(['reader'], project_id='any-project')
        self.assertError(self.request('GET', '/v1/capacity', headers=reader),
                         403, 'reserveapi.forbidden')
        self.assertEqual(2, len(self.capacity(
            headers=self.service_headers)['capacity']))

    def test_bad_query_is_400(self):
        response = self.request('GET', '/v1/capacity?resource_class=x')
        error = self.assertError(response, 400, 'reserveapi.invalid')
        self.assertIn('resource_class', error['detail'])


SUMMARY = {'OpenStack-API-Version': 'baremetal-reservation 1.2'}


class TestCapacitySummary(base.APITestCase):
    """Microversion 1.2: a compute host's periodic summary of one
    partition."""

    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        inventory.sync(self, [
            inventory.node('r1-gold-1', shard='rack-1',
                           traits=('CUSTOM_RAID',)),
            inventory.node('r1-gold-2', shard='rack-1',
                           traits=('CUSTOM_GPU',)),
            inventory.node('r1-gold-3', shard='rack-1', maintenance=True,
                           traits=('CUSTOM_BROKEN',)),
            inventory.node('r1-silver-1', shard='rack-1',
                           conductor_group='East', traits=('CUSTOM_ARM',),
                           **dict(SILVER, cpu_arch='aarch64')),
            inventory.node('r2-gold-1', shard='rack-2', cpu_arch='ppc64le',
                           traits=('CUSTOM_RACK2',)),
            inventory.node('loose-1', resource_class=None,
                           traits=('CUSTOM_LOOSE',)),
        ])
        response = self.request('POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'host': 'compute-3',
            'candidate_nodes': ['r1-gold-2'],
            'request_spec': {'extra_specs': {
                'resources:CUSTOM_BAREMETAL_GOLD': '1'}}})
        self.assertEqual(201, response.status_int, response.text)

    def summary(self, query):
        response = self.request('GET', '/v1/capacity' + query,
                                headers=dict(self.admin_headers, **SUMMARY))
        self.assertEqual(200, response.status_int, response.text)
        return response.json

    def test_host_and_shard(self):
        body = self.summary('?host=compute-3&shard=rack-1')
        self.assertMatchesSample(body,
                                 'capacity/capacity-summary-response.json')
        gold, silver = body['capacity']
        self.assertEqual(
            ('CUSTOM_BAREMETAL_GOLD', 3, 1, 1, 1),
            (gold['resource_class'], gold['total'], gold['available'],
             gold['reserved'], gold['reserved_by_host']))
        self.assertEqual((1, 1, 0), (silver['total'], silver['available'],
                                     silver['reserved_by_host']))
        # Only free nodes' traits: not the reserved node's nor the one in
        # maintenance; rack-2's are another partition's.
        self.assertEqual(['CUSTOM_ARM', 'CUSTOM_RAID'], body['traits'])
        self.assertEqual(['aarch64', 'x86_64'], body['architectures'])

    def test_whole_cloud(self):
        body = self.summary('')
        self.assertEqual({'capacity', 'traits', 'architectures'}, set(body))
        self.assertEqual(
            {'CUSTOM_BAREMETAL_GOLD': (4, 2),
             'CUSTOM_BAREMETAL_SILVER': (1, 1)},
            {row['resource_class']: (row['total'], row['available'])
             for row in body['capacity']})
        # A free node without a resource class still has its traits and
        # architecture reported.
        self.assertEqual(['CUSTOM_ARM', 'CUSTOM_LOOSE', 'CUSTOM_RACK2',
                          'CUSTOM_RAID'], body['traits'])
        self.assertEqual(['aarch64', 'ppc64le', 'x86_64'],
                         body['architectures'])

    def test_conductor_group_as_the_matcher_takes_it(self):
        # Lower-cased, as Ironic stores groups.
        body = self.summary('?conductor_group=EAST')
        self.assertEqual('east', body['conductor_group'])
        self.assertEqual(['CUSTOM_BAREMETAL_SILVER'],
                         [row['resource_class'] for row in body['capacity']])
        self.assertEqual(['CUSTOM_ARM'], body['traits'])
        # Empty is Ironic's default group: every node but the one in East.
        body = self.summary('?conductor_group=&shard=rack-1')
        self.assertEqual(('', 'rack-1'),
                         (body['conductor_group'], body['shard']))
        self.assertEqual([('CUSTOM_BAREMETAL_GOLD', 3)],
                         [(row['resource_class'], row['total'])
                          for row in body['capacity']])
        self.assertEqual(['x86_64'], body['architectures'])

    def test_unknown_partition_is_empty(self):
        self.assertEqual(
            {'shard': 'rack-9', 'capacity': [], 'traits': [],
             'architectures': []}, self.summary('?shard=rack-9'))

    def test_follows_release_and_sync(self):
        reservation = self.request('GET', '/v1/reservations').json[
            'reservations'][0]
        self.assertEqual(204, self.request(
            'DELETE', '/v1/reservations/' + reservation['uuid']).status_int)
        body = self.summary('?host=compute-3&shard=rack-1')
        self.assertEqual((2, 0, 0), (
            body['capacity'][0]['available'], body['capacity'][0]['reserved'],
            body['capacity'][0]['reserved_by_host']))
        self.assertIn('CUSTOM_GPU', body['traits'])
        inventory.sync(self, [
            inventory.node('r1-gold-1', shard='rack-2',
                           traits=('CUSTOM_MOVED',)),
        ])
        self.assertEqual({'shard': 'rack-1', 'capacity': [], 'traits': [],
                          'architectures': []}, self.summary('?shard=rack-1'))
        body = self.summary('?shard=rack-2')
        self.assertEqual(['CUSTOM_MOVED'], body['traits'])
        self.assertEqual(1, body['capacity'][0]['available'])

    def test_partition_needs_1_2(self):
        for query in ('?shard=rack-1', '?conductor_group=east'):
            response = self.request('GET', '/v1/capacity' + query)
            error = self.assertError(response, 400, 'reserveapi.invalid')
            self.assertIn('1.2', error['detail'])
        # And 1.0 answers as it always did.
        body = self.request('GET', '/v1/capacity?host=compute-3').json
        self.assertEqual({'capacity', 'host'}, set(body))

    def test_bad_values_are_400(self):
        for query, name in (('?shard=' + 'x' * 256, 'shard'),
                            ('?shard=', 'shard'),
                            ('?shard=%20rack', 'shard'),
                            ('?conductor_group=a%20b', 'conductor_group'),
                            ('?conductor_group=' + 'g' * 256,
                             'conductor_group'),
                            ('?host=a/b', 'host'),
                            ('?shard=a&shard=b', 'shard')):
            response = self.request('GET', '/v1/capacity' + query,
                                    headers=dict(self.admin_headers,
                                                 **SUMMARY))
            error = self.assertError(response, 400, 'reserveapi.invalid')
            self.assertIn(name, error['detail'])
