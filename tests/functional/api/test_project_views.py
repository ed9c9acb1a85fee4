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


"""The filter-bypass bug class (Ironic's LP #2150461 and #2162715, where a
list filter by shard or node skipped project scoping): every list route,
with every filter and paging parameter set to another project's values,
as a reader, member and manager of project A. Project B's nodes, names,
capabilities, hosts, reservations and instances never appear, and B's
nodes are never counted; a token without a project sees no node, not
even one that nobody owns."""

import datetime
import json
import urllib.parse
import uuid

from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.functional import base

A = base.PROJECT_ID
B = 'b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0'
HOST_B = 'compute-b'
LATEST = {'OpenStack-API-Version': 'baremetal-reservation latest'}
PERSONAS = {
    'reader': ['reader'],
    'member': ['member', 'reader'],
    'manager': ['manager', 'member', 'reader'],
}


class TestAnotherProjectsValues(base.APITestCase):

    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        inventory.sync(self, [
            inventory.node('a-1', owner=A, conductor_group='cg-a',
                           shard='shard-a'),
            inventory.node('b-1', owner=B, conductor_group='cg-b',
                           shard='shard-b',
                           capabilities='boot_mode:uefi,pers_tag:b-secret,'
                                        'supports_uefi:true,has_gpu:True'),
            inventory.node('b-2', owner='c0c0', lessee=B,
                           conductor_group='cg-b', shard='shard-b'),
            inventory.node('nobodys-1', conductor_group='cg-b',
                           shard='shard-b')])
        self.instance_b = str(uuid.uuid4())
        held = self.request('POST', '/v1/reservations', {
            'instance_uuid': self.instance_b, 'host': HOST_B,
            'project_id': B, 'candidate_nodes': ['b-1'],
            'request_spec': examples.REQUEST_SPEC},
            headers=self.service_headers)
        self.assertEqual(201, held.status_int, held.text)
        self.reservation_b = held.json['uuid']
        start = (datetime.datetime.now(datetime.timezone.utc)
                 + datetime.timedelta(days=3))
        held = self.request('POST', '/v1/holds', {
            'project_id': B, 'amount': 1,
            'request_spec': examples.REQUEST_SPEC,
            'start': start.isoformat(),
            'end': (start + datetime.timedelta(hours=1)).isoformat()},
            headers=dict(self.admin_headers, **LATEST))
        self.assertEqual(201, held.status_int, held.text)
        self.hold_b = held.json['uuid']
        self.secrets = {
            'b-1', 'b-2', inventory.node_uuid('b-1'),
            inventory.node_uuid('b-2'), 'b-secret', B, HOST_B,
            self.instance_b, self.reservation_b, self.hold_b}

    def get(self, path, headers, **query):
        if query:
            path += '?' + urllib.parse.urlencode(query)
        return self.request('GET', path, headers=dict(headers, **LATEST))

    def lists(self):
        """(what, response) of every list route under every filter, with
        B's values, for ``headers``."""
        node_b = inventory.node_uuid('b-1')
        for query in ({}, {'conductor_group': 'cg-b'},
                      {'shard': 'shard-b'},
                      {'resource_class': 'baremetal-gold'},
                      {'provision_state': 'available'},
                      {'maintenance': 'false'}, {'reserved': 'true'},
                      {'reserved': 'false'}, {'limit': '1'},
                      {'sort_key': 'name', 'sort_dir': 'desc'}):
            yield 'GET /v1/nodes %s' % query, '/v1/nodes', query
        for query in ({}, {'project_id': B}, {'host': HOST_B},
                      {'node_uuid': node_b},
                      {'instance_uuid': self.instance_b},
                      {'state': 'reserved'}, {'limit': '1'},
                      {'sort_key': 'host'}):
            yield ('GET /v1/reservations %s' % query, '/v1/reservations',
                   query)
        for query in ({}, {'project_id': B},
                      {'resource_class': 'CUSTOM_BAREMETAL_GOLD'},
                      {'limit': '1'}, {'sort_key': 'start'}):
            yield 'GET /v1/holds %s' % query, '/v1/holds', query

    def assertNothingOfB(self, what, response):
        self.assertLess(response.status_int, 500, (what, response.text))
        leaked = {secret for secret in self.secrets
                  if secret in response.text}
        self.assertEqual(set(), leaked, (what, response.text))

    def test_lists_under_every_filter(self):
        for persona, roles in PERSONAS.items():
            headers = self.headers_for(roles)
            for what, path, query in self.lists():
                response = self.get(path, headers, **query)
                self.assertEqual(200, response.status_int,
                                 (persona, what, response.text))
                self.assertNothingOfB((persona, what), response)
            listed = self.get('/v1/nodes', headers).json['nodes']
            self.assertEqual(['a-1'], [node['name'] for node in listed],
                             persona)

    def test_another_projects_node_is_not_there(self):
        missing = self.get('/v1/nodes/no-such-node',
                           self.headers_for(['reader'])).json
        for persona, roles in PERSONAS.items():
            headers = self.headers_for(roles)
            for ident in ('b-1', inventory.node_uuid('b-2'), 'nobodys-1'):
                response = self.get('/v1/nodes/' + ident, headers)
                self.assertError(response, 404, 'reserveapi.node_not_found')
                self.assertEqual(
                    missing['errors'][0]['detail'].replace(
                        'no-such-node', ident),
                    response.json['errors'][0]['detail'], persona)
            self.assertEqual(200, self.get('/v1/nodes/a-1',
                                           headers).status_int)
            self.assertError(
                self.get('/v1/reservations/' + self.reservation_b, headers),
                404, 'reserveapi.reservation_not_found')
            self.assertError(self.get('/v1/holds/' + self.hold_b, headers),
                             404, 'reserveapi.hold_not_found')

    def test_another_projects_marker_is_unknown(self):
        headers = self.headers_for(['reader'])
        unknown = str(uuid.uuid4())
        for path, marker in (('/v1/nodes', inventory.node_uuid('b-1')),
                             ('/v1/reservations', self.reservation_b),
                             ('/v1/holds', self.hold_b)):
            theirs = self.assertError(self.get(path, headers, marker=marker),
                                      400, 'reserveapi.invalid')
            none = self.assertError(self.get(path, headers, marker=unknown),
                                    400, 'reserveapi.invalid')
            self.assertEqual(none['detail'].replace(unknown, marker),
                             theirs['detail'])

    def test_candidates_never_count_or_name_bs_nodes(self):
        for persona, roles in PERSONAS.items():
            headers = dict(self.headers_for(roles), **LATEST)
            for extra in ({'shard': 'shard-b'},
                          {'conductor_group': 'cg-b'},
                          {'candidate_nodes': ['b-1', 'b-2']},
                          {'candidate_nodes': [inventory.node_uuid('b-2')]}):
                body = dict(extra, request_spec=examples.REQUEST_SPEC)
                response = self.request('POST', '/v1/candidates', body,
                                        headers=headers)
                self.assertEqual(200, response.status_int, response.text)
                self.assertNothingOfB((persona, extra), response)
                answer = response.json
                # A may use a-1 and nobodys-1 (total 2, never B's 4);
                # nobodys-1 is in B's partition: counted, but never
                # named (only admin sees a node nobody owns).
                expected = (1, 2) if 'shard' in extra or (
                    'conductor_group' in extra) else (0, 2)
                self.assertEqual(expected, (answer['count'],
                                            answer['total']),
                                 (persona, extra, json.dumps(answer)))
                self.assertNotIn('nobodys-1', response.text)
            self.assertError(self.request(
                'POST', '/v1/candidates',
                {'project_id': B, 'request_spec': examples.REQUEST_SPEC},
                headers=headers), 403, 'reserveapi.forbidden')

    def test_capacity_and_aggregates_are_refused(self):
        for roles in PERSONAS.values():
            headers = self.headers_for(roles)
            for path, query in (('/v1/capacity', {}),
                                ('/v1/capacity', {'host': HOST_B,
                                                  'shard': 'shard-b'}),
                                ('/v1/aggregates', {})):
                self.assertError(self.get(path, headers, **query), 403,
                                 'reserveapi.forbidden')

    def test_no_project_sees_no_node(self):
        """A missing project never matches a node with no owner."""
        headers = {'X-Roles': 'reader', 'X-User-Id': 'user',
                   'X-Identity-Status': 'Confirmed'}
        response = self.get('/v1/nodes', headers)
        self.assertEqual((200, []), (response.status_int,
                                     response.json['nodes']))
        self.assertError(self.get('/v1/nodes/nobodys-1', headers), 404,
                         'reserveapi.node_not_found')
