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

"""Reservations the way Nova lives through them: reserve, retry, conflict,
release."""

import datetime
import uuid

import fixtures

from reserveapi.db import reservations as db_reservations
from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.functional import base
from tests.functional.api import reservation_base as rbase

HOST = rbase.HOST
SAMPLE_PROJECT = rbase.SAMPLE_PROJECT
sample = examples.sample


class TestReservationStory(rbase.ReservationTestCase):
    """The api-ref's example, from the first POST to the last DELETE."""

    scenarios = base.EVERY_BACKEND

    def test_reserve_retry_conflict_release(self):
        self.nodes(inventory.node('node-gold-1'))
        body = sample('reservations/create-request.json')

        created = self.request('POST', '/v1/reservations', body)
        reservation = self.assertReserved(created, 'node-gold-1')
        self.assertMatchesSample(reservation,
                                 'reservations/create-response.json')
        self.assertEqual(body['instance_uuid'], reservation['instance_uuid'])
        self.assertEqual(SAMPLE_PROJECT, reservation['project_id'])
        location = 'http://localhost/v1/reservations/' + reservation['uuid']
        self.assertEqual(location, created.headers['Location'])
        self.assertEqual(location, reservation['links'][0]['href'])

        # Nova retries: the same instance from the same host gets the same
        # reservation, with 200 instead of 201.
        again = self.request('POST', '/v1/reservations', body)
        self.assertEqual(200, again.status_int, again.text)
        self.assertEqual(reservation, again.json)
        self.assertEqual(location, again.headers['Location'])
        shown = self.request('GET', '/v1/reservations/' + reservation['uuid'])
        self.assertEqual(reservation, shown.json)

        # Another host asking for the same instance is a conflict.
        other = self.request('POST', '/v1/reservations',
                             dict(body, host='compute-4'))
        error = self.assertError(other, 409, 'reserveapi.instance_reserved')
        self.assertIn(reservation['uuid'], error['detail'])
        self.assertIn(HOST, error['detail'])
        self.assertEqual([reservation], self.list_reservations())

        # Released: the node is free at once.
        path = '/v1/reservations/' + reservation['uuid']
        deleted = self.request('DELETE', path)
        self.assertEqual(204, deleted.status_int)
        self.assertEqual(b'', deleted.body)
        self.assertIsNone(self.node('node-gold-1')['reservation'])
        self.assertEqual([], self.list_reservations())
        self.assertError(self.request('DELETE', path), 404,
                         'reserveapi.reservation_not_found')
        self.assertError(self.request('GET', path), 404,
                         'reserveapi.reservation_not_found')
        self.assertError(self.request('PATCH', path, [
            {'op': 'replace', 'path': '/state', 'value': 'active'}]),
            404, 'reserveapi.reservation_not_found')

        # Another instance takes the node; so may the first one, anew.
        taken = self.reserve()
        self.assertReserved(taken, 'node-gold-1')
        self.assertNoValidNode(self.request('POST', '/v1/reservations',
                                            body),
                               '1 node: 1 reserved')
        self.release(taken.json['uuid'])
        renewed = self.request('POST', '/v1/reservations', body)
        self.assertNotEqual(reservation['uuid'],
                            self.assertReserved(renewed,
                                                'node-gold-1')['uuid'])

    def test_show_sample_with_expiry(self):
        self.config(reserved_ttl=3600, group='reservations')
        self.nodes(inventory.node('node-gold-1'))
        created = self.request('POST', '/v1/reservations',
                               sample('reservations/create-request.json'))
        self.assertEqual(201, created.status_int, created.text)
        shown = self.request('GET',
                             '/v1/reservations/' + created.json['uuid'])
        self.assertEqual(200, shown.status_int)
        self.assertMatchesSample(shown.json,
                                 'reservations/show-response.json')
        created_at = datetime.datetime.fromisoformat(
            shown.json['created_at'])
        self.assertEqual(created_at + datetime.timedelta(hours=1),
                         datetime.datetime.fromisoformat(
                             shown.json['expires_at']))

    def test_uuid_path_in_any_case_or_malformed(self):
        self.nodes(inventory.node('node-gold-1'))
        reservation = self.assertReserved(self.reserve(), 'node-gold-1')
        upper = '/v1/reservations/' + reservation['uuid'].upper()
        self.assertEqual(reservation, self.request('GET', upper).json)
        for method, body in (('GET', None), ('DELETE', None), ('PATCH', [
                {'op': 'replace', 'path': '/state', 'value': 'active'}])):
            error = self.assertError(
                self.request(method, '/v1/reservations/not-a-uuid', body),
                400, 'reserveapi.invalid')
            self.assertIn('reservation_uuid', error['detail'])
        self.assertEqual(204, self.request('DELETE', upper).status_int)
        self.assertNothingReserved()

    def test_project_defaults_to_callers(self):
        self.nodes(inventory.node('node-gold-1'))
        reservation = self.assertReserved(self.reserve(), 'node-gold-1')
        self.assertEqual(base.PROJECT_ID, reservation['project_id'])

    def test_service_reserves_for_a_project(self):
        self.nodes(inventory.node('node-gold-1'))
        response = self.reserve(headers=self.service_headers,
                                project_id=SAMPLE_PROJECT)
        reservation = self.assertReserved(response, 'node-gold-1')
        self.assertEqual(SAMPLE_PROJECT, reservation['project_id'])

    def test_nodes_lost_to_concurrent_requests_are_read_again(self):
        # Every node this request tries is taken just before it claims it
        # (by another instance, committed), for two rounds of candidates:
        # it reads again and gets one of the nodes still free.
        self.nodes(*[inventory.node('node-gold-%d' % index)
                     for index in range(1, 7)])
        self.config(max_attempts=2, subset_size=2, group='matcher')
        create = db_reservations.create_reservation
        stolen = []

        def taken_first(values, node, **guard):
            if len(stolen) < 4:
                stolen.append(node.name)
                create(dict(values, uuid=str(uuid.uuid4()),
                            instance_uuid=str(uuid.uuid4())), node)
            return create(values, node, **guard)

        self.useFixture(fixtures.MockPatchObject(
            db_reservations, 'create_reservation', taken_first))
        response = self.reserve()
        self.assertEqual(201, response.status_int, response.text)
        self.assertEqual(4, len(set(stolen)))
        self.assertNotIn(response.json['node_name'], stolen)
        self.assertEqual(5, len(self.list_reservations()))

    def test_one_node_per_instance_and_instance_per_node(self):
        self.nodes(inventory.node('node-gold-1'),
                   inventory.node('node-gold-2'))
        first = self.reserve(instance_uuid=str(uuid.uuid4()))
        second = self.reserve(instance_uuid=str(uuid.uuid4()))
        self.assertEqual(201, first.status_int)
        self.assertEqual(201, second.status_int)
        self.assertEqual({'node-gold-1', 'node-gold-2'},
                         {first.json['node_name'], second.json['node_name']})
        self.assertNoValidNode(self.reserve(), '2 nodes: 2 reserved')
        self.assertEqual(2, len(self.list_reservations()))
