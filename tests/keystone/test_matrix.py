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

"""The RBAC matrix (rbac_matrix.yaml), walked with real tokens.

Every route behind policy (``routes.guarded_routes()``, read from the
real controller tree), every persona: the status must
be the one the matrix says, and every refusal must be an API-WG error. A
route the API has and the matrix lacks, or the other way round, fails the
suite, so that the matrix grows with the API. On an ``own_project``
route, A's reservation must be in the answer exactly for A's personas and
those of ``every_project``; and every persona that reads nodes sees the
owner and lessee of exactly the nodes ``node_owner_lessee`` says, free
and held.
"""

import datetime
import os
import uuid

import testscenarios
import testtools
import yaml

from reserveapi import reservations
from reserveapi.holds import admission
from reserveapi.mirror import state as mirror_state
from reserveapi_testing import examples
from reserveapi_testing import inventory
from reserveapi_testing import keystone as keystone_fixture
from tests.functional.api import routes
from tests.keystone import base

MATRIX_FILE = os.path.join(os.path.dirname(__file__), 'rbac_matrix.yaml')
UNAUTHENTICATED = ('no_token', 'bogus_token', 'expired_token',
                   'revoked_token')
PERSONAS = tuple(sorted(keystone_fixture.PERSONAS)) + UNAUTHENTICATED
NODES = ('node-1', 'node-2', 'node-3')
# On an own_nodes or project_nodes route, beside NODES: a node only
# project B may use; on a project_nodes route also one of project A's,
# which is {node_ident}.
NODE_OF_B = 'node-of-b'
NODE_OF_A = 'node-of-a'
HOST = 'compute-1'
ERROR_CODES = {401: 'reserveapi.unauthorized', 403: 'reserveapi.forbidden',
               404: 'reserveapi.reservation_not_found'}
NOT_FOUND = {'/v1/nodes/': 'reserveapi.node_not_found',
             '/v1/holds/': 'reserveapi.hold_not_found'}
"""The 404 of a route under each of these paths, where not
ERROR_CODES'."""
HOLDS = '/v1/holds'


def load_document():
    with open(MATRIX_FILE) as stream:
        return yaml.safe_load(stream)


def load_matrix():
    return load_document()['routes']


def _fill(value, values):
    """``value`` with every ``$name`` string replaced from ``values``."""
    if isinstance(value, dict):
        return {key: _fill(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, values) for item in value]
    if isinstance(value, str) and value.startswith('$'):
        return values[value[1:]]
    return value


class TestMatrixCoversTheAPI(testtools.TestCase):

    def test_every_route_and_persona_has_a_status(self):
        matrix = load_matrix()
        self.assertGreaterEqual(len(routes.guarded_routes()), 14)
        self.assertEqual(routes.guarded_routes(), sorted(matrix))
        for route, entry in matrix.items():
            self.assertEqual(sorted(PERSONAS), sorted(entry['expect']),
                             route)
            for status in entry['expect'].values():
                self.assertIn(status, (200, 201, 202, 204, 401, 403, 404))
            self.assertLessEqual(set(entry), {'expect', 'body',
                                              'own_project', 'own_nodes',
                                              'project_nodes'}, route)

    def test_owner_lessee_names_every_node_reader(self):
        document = load_document()
        readers = sorted(
            persona for persona, status in
            document['routes']['GET /v1/nodes']['expect'].items()
            if status == 200)
        section = document['node_owner_lessee']
        self.assertEqual(readers, sorted(section['sees']))
        for seen in section['sees'].values():
            self.assertLessEqual(set(seen), set(section['nodes']))
        self.assertLessEqual(set(document['every_project']), set(readers))


class TestRBACMatrix(base.KeystoneTestCase):
    """One test per route of the real controller tree."""

    scenarios = [(route, {'route': route})
                 for route in routes.guarded_routes()]

    def setUp(self):
        super().setUp()
        self.entry = load_matrix()[self.route]
        self.every_project = load_document()['every_project']
        nodes = [inventory.node(name) for name in NODES]
        if self.entry.get('own_nodes') or self.entry.get('project_nodes'):
            nodes.append(inventory.node(NODE_OF_B, owner=self.project_b))
        if self.entry.get('project_nodes'):
            nodes.append(inventory.node(NODE_OF_A, owner=self.project_a))
        self.sync_nodes(nodes)

    def _token(self, persona):
        if persona == 'no_token':
            return None
        if persona == 'bogus_token':
            return 'gAAAAAB' + uuid.uuid4().hex
        if persona == 'expired_token':
            return base.shared_expired_token()
        if persona == 'revoked_token':
            return base.shared_revoked_token()
        return self.token(persona)

    def _request(self):
        """``(method, path, body, uuid of A's resource)`` on fresh
        resources of project A."""
        method, template = self.route.split(' ', 1)
        start = (datetime.datetime.now(datetime.timezone.utc)
                 + datetime.timedelta(days=2))
        end = start + datetime.timedelta(hours=1)
        values = {'new_uuid': str(uuid.uuid4()),
                  'project_a': self.project_a,
                  'request_spec': examples.REQUEST_SPEC,
                  'hold_start': start.isoformat(),
                  'hold_end': end.isoformat()}
        params = {'node_ident': NODE_OF_A, 'host': HOST}
        own = self.entry.get('own_project')
        if '{hold_uuid}' in template or (own and template.startswith(HOLDS)):
            params['hold_uuid'] = admission.create_hold(
                self.project_a, 1, examples.REQUEST_SPEC, start, end).uuid
        elif '{reservation_uuid}' in template or own:
            reservation, _created = reservations.reserve(
                str(uuid.uuid4()), HOST, self.project_a,
                examples.REQUEST_SPEC)
            params['reservation_uuid'] = reservation.uuid
        if '{aggregate_uuid}' in template:
            params['aggregate_uuid'] = str(uuid.uuid4())
            mirror_state.join(params['aggregate_uuid'], HOST)
        return (method, template.format(**params),
                _fill(self.entry.get('body'), values),
                params.get('hold_uuid') or params.get('reservation_uuid'))

    def _release_everything(self):
        """Free the nodes again for the next call."""
        for reservation in reservations.list_reservations():
            reservations.release(reservation.uuid, lambda found: None)
        for hold in admission.list_holds():
            if hold.cancelled_at is None:
                admission.cancel_hold(hold.uuid)

    def _mismatch(self, persona, expected, response, own_uuid):
        """Why ``response`` is wrong for ``persona``, or None."""
        if response.status_code != expected:
            return '%s: expected %d, got %d %s' % (
                persona, expected, response.status_code, response.text[:300])
        if self.entry.get('own_project') and expected == 200:
            shown = own_uuid in response.text
            if shown != (persona in self.every_project or
                         keystone_fixture.project_of(persona) == 'project-a'):
                return '%s: A\'s %s %s' % (
                    persona, own_uuid, 'shown' if shown else 'missing')
        if self.entry.get('own_nodes') and expected == 200:
            mismatch = self._nodes_mismatch(persona, response)
            if mismatch:
                return mismatch
        if (self.entry.get('project_nodes') and expected == 200
                and 'nodes' in response.json()):
            mismatch = self._project_nodes_mismatch(persona, response)
            if mismatch:
                return mismatch
        if expected not in ERROR_CODES:
            return None
        code = ERROR_CODES[expected]
        if expected == 404:
            path = self.route.split(' ', 1)[1]
            code = next((found for prefix, found in NOT_FOUND.items()
                         if path.startswith(prefix)), code)
        (error,) = response.json()['errors']
        if (error['status'], error['code']) != (expected, code):
            return '%s: error body %s' % (persona, error)
        return None

    def _nodes_mismatch(self, persona, response):
        """On an own_nodes route, a persona outside every_project counts
        only the nodes its project may use; whoever counts B's node names
        it only for project B."""
        project = keystone_fixture.project_of(persona)
        counted = len(NODES) + (persona in self.every_project
                                or project == 'project-b')
        named = inventory.node_uuid(NODE_OF_B) in response.text
        if (response.json()['total'], named) != (counted,
                                                 project == 'project-b'):
            return '%s: counted %d nodes (not %d), B\'s node %s' % (
                persona, response.json()['total'], counted,
                'named' if named else 'not named')
        return None

    def _project_nodes_mismatch(self, persona, response):
        """On a project_nodes list, a persona outside every_project sees
        only the nodes its project owns or leases."""
        listed = sorted(node['name'] for node in response.json()['nodes'])
        if persona in self.every_project:
            expected = sorted(NODES + (NODE_OF_A, NODE_OF_B))
        else:
            expected = {'project-a': [NODE_OF_A],
                        'project-b': [NODE_OF_B]}.get(
                keystone_fixture.project_of(persona), [])
        if listed != expected:
            return '%s: listed %s, not %s' % (persona, listed, expected)
        return None

    def test_route(self):
        mismatches = []
        for persona in PERSONAS:
            method, path, body, own_uuid = self._request()
            response = self.call(
                self._token(persona), method, path, body,
                headers=routes.version_headers(*self.route.split(' ', 1)))
            mismatches.append(self._mismatch(
                persona, self.entry['expect'][persona], response,
                own_uuid))
            self._release_everything()
        self.assertEqual([], [item for item in mismatches if item])


class TestNodeOwnerLessee(base.KeystoneTestCase):
    """``node_owner_lessee``: who sees which node's owner and lessee."""

    def setUp(self):
        super().setUp()
        self.section = load_document()['node_owner_lessee']
        ids = self.keystone.project_ids
        self.nodes = {name: {key: ids[value] for key, value in node.items()}
                      for name, node in self.section['nodes'].items()}
        self.sync_nodes([
            inventory.node(name, owner=node.get('owner'),
                           lessee=node.get('lessee'))
            for name, node in self.nodes.items()])

    def _seen(self, persona):
        """``{name: (owner, lessee)}`` from the list, the same on each
        node shown alone."""
        listed = self.as_persona(persona, 'GET', '/v1/nodes')
        self.assertEqual(200, listed.status_code, listed.text)
        seen = {}
        for node in listed.json()['nodes']:
            one = self.as_persona(persona, 'GET', '/v1/nodes/' + node['name'])
            self.assertEqual(node, one.json(), persona)
            seen[node['name']] = (node['owner'], node['lessee'])
        return seen

    def _expected(self, persona):
        """Admin and service see every node; a project's personas only
        those their project owns or leases, with owner and lessee."""
        every = persona in load_document()['every_project']
        return {name: ((node.get('owner'), node.get('lessee'))
                       if name in self.section['sees'][persona]
                       else (None, None))
                for name, node in self.nodes.items()
                if every or name in self.section['sees'][persona]}

    def assertEverySeesWhatTheMatrixSays(self):
        mismatches = {}
        for persona in sorted(self.section['sees']):
            seen = self._seen(persona)
            if seen != self._expected(persona):
                mismatches[persona] = seen
        self.assertEqual({}, mismatches)

    def test_free(self):
        self.assertEverySeesWhatTheMatrixSays()

    def test_held(self):
        for name, node in self.nodes.items():
            response = self.reserve(node['held_by'], candidate_nodes=[name])
            self.assertEqual(201, response.status_code, response.text)
        self.assertEqual(
            {name: 'reserved' for name in self.nodes},
            {node['name']: node['reservation']['state'] for node in
             self.as_persona('admin', 'GET', '/v1/nodes').json()[
                 'nodes']})
        self.assertEverySeesWhatTheMatrixSays()


load_tests = testscenarios.load_tests_apply_scenarios
