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

"""The service persona, as Nova uses it, reserving on behalf of projects.

Nova's compute service calls with its own token (``service`` role in the
service project) and names the instance's project in ``project_id``; the
reservation then belongs to that project: the node's ``owner`` and
``lessee`` are matched against it, and that project's reader sees it.
"""

import uuid

from reserveapi import client as reserveapi_client
from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.keystone import base


class TestServiceOnBehalfOfProjects(base.KeystoneTestCase):

    def setUp(self):
        super().setUp()
        self.sync_nodes([
            inventory.node('node-owned-by-a', owner=self.project_a),
            inventory.node('node-leased-to-b', lessee=self.project_b),
            inventory.node('node-free'),
        ])
        self.nova = self.client('service')

    def _reserve(self, project_id, node, instance_uuid=None):
        return self.nova.reserve(
            instance_uuid or str(uuid.uuid4()), base.HOSTS[0],
            examples.REQUEST_SPEC, project_id=project_id,
            candidate_nodes=[node])

    def assertNoValidNode(self, project_id, node):
        error = self.assertRaises(reserveapi_client.Conflict,
                                  self._reserve, project_id, node)
        self.assertEqual('reserveapi.no_valid_node', error.code)

    def test_owner_and_lessee_follow_the_named_project(self):
        self.assertNoValidNode(self.project_b, 'node-owned-by-a')
        self.assertNoValidNode(self.project_a, 'node-leased-to-b')
        mine = self._reserve(self.project_a, 'node-owned-by-a')
        theirs = self._reserve(self.project_b, 'node-leased-to-b')
        self.assertEqual((self.project_a, 'node-owned-by-a'),
                         (mine['project_id'], mine['node_name']))
        self.assertEqual((self.project_b, 'node-leased-to-b'),
                         (theirs['project_id'], theirs['node_name']))

    def test_without_project_the_service_project_is_used(self):
        service_project = self.keystone.project_ids['service']
        self.assertNoValidNode(None, 'node-owned-by-a')
        reservation = self._reserve(None, 'node-free')
        self.assertEqual(service_project, reservation['project_id'])
        self.assertEqual(
            [], list(self.client('reader_a').list()))

    def test_the_named_projects_reader_sees_it_and_no_other(self):
        reservation = self._reserve(self.project_a, 'node-free')
        path = '/v1/reservations/' + reservation['uuid']
        self.assertEqual(reservation['uuid'], self.client('reader_a').get(
            reservation['uuid'])['uuid'])
        self.assertError(self.as_persona('reader_b', 'GET', path), 404,
                         'reserveapi.reservation_not_found')
        self.assertEqual([reservation['uuid']], [
            item['uuid'] for item in self.client('reader_a').list()])
        self.assertEqual([], list(self.client('reader_b').list()))

    def test_nova_cycle_through_the_client(self):
        reservation = self._reserve(self.project_a, 'node-owned-by-a')
        # Nova retrying the same spawn gets the same reservation.
        again = self._reserve(self.project_a, 'node-owned-by-a',
                              reservation['instance_uuid'])
        self.assertEqual(reservation['uuid'], again['uuid'])
        confirmed = self.nova.confirm(reservation['uuid'])
        self.assertEqual('active', confirmed['state'])
        self.assertEqual(['active'], [
            item['state'] for item in self.client('reader_a').list(
                project_id=self.project_a)])
        self.assertTrue(self.nova.release(reservation['uuid']))
        self.assertFalse(self.nova.release(reservation['uuid']))
        self.assertEqual([], list(self.nova.list()))
