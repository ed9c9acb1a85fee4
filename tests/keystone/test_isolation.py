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

"""Project isolation with real tokens: a project's reader sees and
touches nothing of another project's, whatever the route or parameter.
"""

import urllib.parse

from reserveapi_testing import inventory
from tests.keystone import base

NODES = ['node-%d' % number for number in range(1, 9)]


class TestReaderIsolation(base.KeystoneTestCase):
    """Reservations of A and B, on two hosts; A's and B's readers look."""

    def setUp(self):
        super().setUp()
        # Half A's, half B's: each project's reservations land on its own.
        self.sync_nodes([inventory.node(name, owner=self.project_a
                                        if number < 4 else self.project_b)
                         for number, name in enumerate(NODES)])
        self.mine = [self._reserve(self.project_a, host)
                     for host in base.HOSTS + base.HOSTS]
        self.theirs = [self._reserve(self.project_b, host)
                       for host in base.HOSTS]

    def _reserve(self, project_id, host):
        response = self.reserve(project_id, host)
        self.assertEqual(201, response.status_code, response.text)
        self.assertEqual(project_id, response.json()['project_id'])
        return response.json()

    def _listed(self, persona, query=''):
        """Every reservation the persona lists, following ``next``."""
        url = '/v1/reservations' + query
        seen = []
        while url:
            response = self.as_persona(persona, 'GET', url)
            self.assertEqual(200, response.status_code, response.text)
            seen.extend(response.json()['reservations'])
            url = response.json().get('next')
        return seen

    def _uuids(self, reservations):
        return sorted(item['uuid'] for item in reservations)

    def test_list_shows_only_the_own_project(self):
        for persona in ('reader_a', 'member_a'):
            self.assertEqual(self._uuids(self.mine),
                             self._uuids(self._listed(persona)), persona)
        self.assertEqual(self._uuids(self.theirs),
                         self._uuids(self._listed('reader_b')))

    def test_next_links_stay_in_the_own_project(self):
        self.assertEqual(self._uuids(self.mine),
                         self._uuids(self._listed('reader_a', '?limit=1')))
        first = self.as_persona('reader_a', 'GET',
                                '/v1/reservations?limit=1').json()
        query = urllib.parse.parse_qs(
            urllib.parse.urlsplit(first['next']).query)
        self.assertNotIn(self.project_b, str(query))
        # A's next link is no way into A's list for B's reader: its
        # marker is refused as one that does not exist.
        self.assertError(self.as_persona('reader_b', 'GET', first['next']),
                         400, 'reserveapi.invalid')

    def test_filters_never_reach_another_project(self):
        """Every filter and paging parameter of both lists, with B's
        values, for each of A's personas (Ironic's LP #2150461 and
        #2162715 class): never a row of B's."""
        theirs = self.theirs[0]
        for persona in ('reader_a', 'member_a', 'manager_a'):
            for query in ('?project_id=%s' % self.project_b,
                          '?instance_uuid=%s' % theirs['instance_uuid'],
                          '?node_uuid=%s' % theirs['node_uuid'],
                          '?host=%s' % theirs['host'],
                          '?state=reserved', '?limit=1',
                          '?sort_key=host&sort_dir=desc'):
                listed = self._listed(persona, query)
                self.assertEqual(
                    [], [item for item in listed
                         if item['project_id'] != self.project_a],
                    (persona, query))
            self.assertEqual([], self._listed(
                persona, '?instance_uuid=%s' % theirs['instance_uuid']))
            for query in ('', '?reserved=true', '?reserved=false',
                          '?resource_class=baremetal-gold',
                          '?provision_state=available',
                          '?maintenance=false', '?conductor_group=',
                          '?limit=1', '?sort_key=name&sort_dir=desc'):
                url, names = '/v1/nodes' + query, []
                while url:
                    response = self.as_persona(persona, 'GET', url)
                    self.assertEqual(200, response.status_code,
                                     response.text)
                    names += [node['name']
                              for node in response.json()['nodes']]
                    self.assertNotIn(self.project_b, response.text)
                    url = response.json().get('next')
                self.assertLessEqual(set(names), set(NODES[:4]),
                                     (persona, query))
            self.assertError(self.as_persona(
                persona, 'GET',
                '/v1/nodes?marker=%s' % theirs['node_uuid']),
                400, 'reserveapi.invalid')

    def test_another_projects_reservation_is_not_found(self):
        theirs = self.theirs[0]
        response = self.as_persona('reader_a', 'GET',
                                   '/v1/reservations/' + theirs['uuid'])
        error = self.assertError(response, 404,
                                 'reserveapi.reservation_not_found')
        missing = self.as_persona(
            'reader_a', 'GET',
            '/v1/reservations/00000000-0000-4000-8000-000000000000')
        other = self.assertError(missing, 404,
                                 'reserveapi.reservation_not_found')
        # Exactly the answer for a reservation that does not exist.
        self.assertEqual(
            other['detail'].replace(
                '00000000-0000-4000-8000-000000000000', theirs['uuid']),
            error['detail'])

    def test_marker_of_another_project_is_unknown(self):
        """A marker is looked up: another project's must answer as one
        that does not exist, or its existence leaks."""
        theirs = self.as_persona(
            'reader_a', 'GET',
            '/v1/reservations?marker=%s' % self.theirs[0]['uuid'])
        missing = self.as_persona(
            'reader_a', 'GET', '/v1/reservations?marker='
            '00000000-0000-4000-8000-000000000000')
        self.assertError(missing, 400, 'reserveapi.invalid')
        self.assertError(theirs, 400, 'reserveapi.invalid')

    def test_nodes_show_only_the_own_projects(self):
        """/v1/nodes shows a reader only the nodes its project owns or
        leases (Ironic's rule), with its own reservations on them; B's
        nodes, and so B's reservations, are not there, not even as a
        404 that differs from a node that does not exist."""
        for persona in ('reader_a', 'member_a', 'manager_a'):
            nodes = self.as_persona(persona, 'GET', '/v1/nodes').json()
            self.assertEqual(NODES[:4], sorted(
                node['name'] for node in nodes['nodes']), persona)
            self.assertEqual(
                {item['instance_uuid'] for item in self.mine},
                {node['reservation']['instance_uuid']
                 for node in nodes['nodes']}, persona)
            missing = self.as_persona(persona, 'GET', '/v1/nodes/node-99')
            self.assertError(missing, 404, 'reserveapi.node_not_found')
            for name in NODES[4:]:
                theirs = self.as_persona(persona, 'GET', '/v1/nodes/' + name)
                self.assertError(theirs, 404, 'reserveapi.node_not_found')
                self.assertEqual(
                    missing.json()['errors'][0]['detail'].replace(
                        'node-99', name),
                    theirs.json()['errors'][0]['detail'])

    def test_readers_never_change_or_release(self):
        for persona in ('reader_a', 'member_a', 'manager_a', 'reader_b'):
            for target in (self.mine[0], self.theirs[0]):
                path = '/v1/reservations/' + target['uuid']
                patch = [{'op': 'replace', 'path': '/state',
                          'value': 'active'}]
                self.assertError(
                    self.as_persona(persona, 'PATCH', path, patch),
                    403, 'reserveapi.forbidden')
                self.assertError(self.as_persona(persona, 'DELETE', path),
                                 403, 'reserveapi.forbidden')
        after = self._listed('admin')
        self.assertEqual(self._uuids(self.mine + self.theirs),
                         self._uuids(after))
        self.assertEqual({'reserved'}, {item['state'] for item in after})
