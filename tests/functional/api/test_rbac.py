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

"""The policy matrix over the real WSGI app.

Walks every route of the controller tree (``routes.py``), so a new
endpoint is covered the day it is written: it must have a policy rule, a
caller with no role is refused with a 403 in the API-WG format, an admin
never is.
"""

import os
import re
import uuid

import fixtures

from reserveapi import policies
from reserveapi import policy
from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.functional import base
from tests.functional.api import routes

_PARAM = re.compile(r'\{([^}]+)\}')


def rule_operations():
    """``{(method, path template): [rule names]}`` from the policy rules."""
    operations = {}
    for rule in policies.list_rules():
        for operation in rule.operations:
            operations.setdefault(
                (operation['method'], operation['path']), []).append(
                rule.name)
    return operations


def operations():
    """``(rule names, method, path template)`` for every guarded route."""
    rules = rule_operations()
    return [(rules.get((method, path)), method, path)
            for method, path in routes.routes()
            if (method, path) not in routes.PUBLIC]


def concrete(path):
    """The template with a random uuid or a name for each parameter."""
    def value(match):
        name = match.group(1)
        return str(uuid.uuid4()) if 'uuid' in name else 'compute-%s' % name
    return _PARAM.sub(value, path)


class TestPolicyMatrix(base.APITestCase):
    scenarios = base.EVERY_BACKEND

    def call(self, method, path, headers):
        body = {} if routes.takes_body(method, path) else None
        return self.request(method, concrete(path), body, headers=dict(
            headers, **routes.version_headers(method, path)))

    def test_every_rule_has_operations(self):
        self.assertGreaterEqual(len(operations()), 9)
        for rule in policies.list_rules():
            self.assertTrue(rule.operations, rule.name)
            self.assertTrue(rule.name.startswith('reserveapi:'), rule.name)

    def test_every_route_has_a_rule_and_every_rule_a_route(self):
        self.assertEqual([], [(method, path)
                              for rules, method, path in operations()
                              if not rules])
        self.assertEqual([], sorted(set(rule_operations())
                                    - set(routes.routes())))

    def test_no_role_is_403(self):
        nobody = self.headers_for([])
        wrong = []
        for name, method, path in operations():
            response = self.call(method, path, nobody)
            if response.status_int != 403:
                wrong.append((name, method, path, response.status_int))
                continue
            self.assertError(response, 403, 'reserveapi.forbidden')
        self.assertEqual([], wrong)

    def test_unknown_role_is_403(self):
        member = self.headers_for(['member'])
        wrong = [(name, method, path, response.status_int)
                 for name, method, path in operations()
                 for response in [self.call(method, path, member)]
                 if response.status_int != 403]
        self.assertEqual([], wrong)

    def test_admin_is_never_403(self):
        wrong = []
        for name, method, path in operations():
            response = self.call(method, path, self.admin_headers)
            if response.status_int == 403 or response.status_int >= 500:
                wrong.append((name, method, path, response.status_int,
                              response.text))
        self.assertEqual([], wrong)


class TestReaderAndService(base.APITestCase):
    """The default policy: writes need admin or service; a project reader reads
    its own project's reservations and the nodes its project owns or
    leases; capacity needs admin or service.
    """

    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        inventory.sync(self, [inventory.node('node-gold-1'),
                              inventory.node('node-gold-2')])
        self.reader = self.headers_for(['reader'])
        response = self.request('POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'host': 'compute-3',
            'request_spec': examples.REQUEST_SPEC})
        self.assertEqual(201, response.status_int, response.text)
        self.path = '/v1/reservations/' + response.json['uuid']

    def test_reader_reads_but_never_writes(self):
        listed = self.request('GET', '/v1/reservations', headers=self.reader)
        self.assertEqual(200, listed.status_int)
        self.assertEqual(1, len(listed.json['reservations']))
        self.assertEqual(200, self.request('GET', self.path,
                                           headers=self.reader).status_int)
        # Nodes its project neither owns nor leases are not there for
        # it; capacity is admin's and service's.
        nodes = self.request('GET', '/v1/nodes', headers=self.reader)
        self.assertEqual((200, []), (nodes.status_int, nodes.json['nodes']))
        self.assertError(self.request('GET', '/v1/nodes/node-gold-1',
                                      headers=self.reader),
                         404, 'reserveapi.node_not_found')
        self.assertError(self.request('GET', '/v1/capacity',
                                      headers=self.reader),
                         403, 'reserveapi.forbidden')
        refused = [
            self.request('POST', '/v1/reservations', {
                'instance_uuid': str(uuid.uuid4()), 'host': 'compute-3',
                'request_spec': examples.REQUEST_SPEC},
                headers=self.reader),
            self.request('PATCH', self.path, [
                {'op': 'replace', 'path': '/state', 'value': 'active'}],
                headers=self.reader),
            self.request('DELETE', self.path, headers=self.reader),
        ]
        for response in refused:
            self.assertError(response, 403, 'reserveapi.forbidden')
        # Nothing changed.
        shown = self.request('GET', self.path).json
        self.assertEqual('reserved', shown['state'])
        self.assertEqual(1, len(self.request('GET', '/v1/reservations').json[
            'reservations']))

    def test_a_release_refused_on_the_reservation_deletes_nothing(self):
        # A policy that lets members release their own project's
        # reservations: another project's member is told it does not
        # exist, and it stays.
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'policy.yaml')
        with open(path, 'w') as stream:
            stream.write('"reserveapi:reservation:delete": '
                         '"role:member and project_id:%(project_id)s"\n')
        self.config(policy_file=path, group='oslo_policy')
        policy.reset()
        self.addCleanup(policy.reset)
        stranger = self.headers_for(['member'], project_id='someone-else')
        self.assertError(self.request('DELETE', self.path, headers=stranger),
                         404, 'reserveapi.reservation_not_found')
        self.assertEqual(200, self.request('GET', self.path).status_int)
        owner = self.headers_for(['member'])
        self.assertEqual(204, self.request('DELETE', self.path,
                                           headers=owner).status_int)
        self.assertEqual(404, self.request('GET', self.path).status_int)

    def test_another_projects_reader_sees_nothing(self):
        stranger = self.headers_for(['reader'], project_id='someone-else')
        self.assertEqual([], self.request(
            'GET', '/v1/reservations', headers=stranger).json[
            'reservations'])
        self.assertError(self.request('GET', self.path, headers=stranger),
                         404, 'reserveapi.reservation_not_found')

    def test_another_projects_marker_is_unknown(self):
        """Refused exactly as a marker that does not exist: a 200 would
        tell the stranger that the reservation exists."""
        stranger = self.headers_for(['reader'], project_id='someone-else')
        marker = self.path.rsplit('/', 1)[1]
        missing = '00000000-0000-4000-8000-000000000000'
        theirs = self.assertError(
            self.request('GET', '/v1/reservations?marker=' + marker,
                         headers=stranger), 400, 'reserveapi.invalid')
        unknown = self.assertError(
            self.request('GET', '/v1/reservations?marker=' + missing,
                         headers=stranger), 400, 'reserveapi.invalid')
        self.assertEqual(unknown['detail'].replace(missing, marker),
                         theirs['detail'])
        own = self.request('GET', '/v1/reservations?marker=' + marker,
                           headers=self.reader)
        self.assertEqual(200, own.status_int, own.text)

    def test_reader_without_a_project_sees_nothing(self):
        no_project = {'X-Roles': 'reader', 'X-User-Id': 'user',
                      'X-Identity-Status': 'Confirmed'}
        response = self.request('GET', '/v1/reservations', headers=no_project)
        self.assertError(response, 403, 'reserveapi.forbidden')

    def test_service_writes(self):
        service = self.service_headers
        created = self.request('POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'host': 'compute-4',
            'project_id': base.PROJECT_ID,
            'request_spec': examples.REQUEST_SPEC}, headers=service)
        self.assertEqual(201, created.status_int, created.text)
        path = '/v1/reservations/' + created.json['uuid']
        self.assertEqual(200, self.request('GET', path,
                                           headers=service).status_int)
        self.assertEqual(2, len(self.request(
            'GET', '/v1/reservations', headers=service).json[
            'reservations']))
        patched = self.request('PATCH', path, [
            {'op': 'replace', 'path': '/state', 'value': 'active'}],
            headers=service)
        self.assertEqual(200, patched.status_int, patched.text)
        self.assertEqual(204, self.request('DELETE', path,
                                           headers=service).status_int)
        self.assertEqual(204, self.request('DELETE', self.path,
                                           headers=service).status_int)
        self.assertEqual([], self.request('GET', '/v1/reservations').json[
            'reservations'])
