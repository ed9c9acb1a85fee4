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

"""The aggregate filter around a fake Nova app: what it passes through,
what it calls, what it logs. ``test_aggregates`` runs it in real Nova."""

import json
from unittest import mock

import fixtures
from nova import test
import webob

from reserveapi import client
from reserveapi.nova import aggregates

UUID = '9f1c3a0e-4d7b-4c55-8a1e-2b3c4d5e6f70'


class _FakeNova:
    """Answers ``answers[(method, path)]``: (status, headers, body bytes);
    remembers each request's environ and body.
    """

    def __init__(self, answers):
        self.answers = answers
        self.requests = []

    def __call__(self, environ, start_response):
        body = environ['wsgi.input'].read()
        self.requests.append((environ['REQUEST_METHOD'],
                              environ['PATH_INFO'], dict(environ), body))
        status, headers, answer = self.answers[(environ['REQUEST_METHOD'],
                                                environ['PATH_INFO'])]
        start_response(status, list(headers))
        return [answer[:5], answer[5:]]


def _shown(uuid=UUID):
    return ('200 OK', [('Content-Type', 'application/json')],
            json.dumps({'aggregate': {'id': 5, 'uuid': uuid,
                                      'hosts': []}}).encode())


class TestAggregateFilter(test.NoDBTestCase):

    def setUp(self):
        super().setUp()
        self.flags(group='reserveapi', auth_type='none',
                   endpoint_override='http://127.0.0.1:9', aggregate_timeout=3)
        self.mirror = mock.Mock(spec=client.AggregateMirrorClient)
        self.mirror.add_host.return_value = {'state': 'synced'}
        self.useFixture(fixtures.MockPatchObject(
            client, 'AggregateMirrorClient', return_value=self.mirror))

    def call(self, nova, method, path, body=None, **environ):
        request = webob.Request.blank(path, method=method, **environ)
        if body is not None:
            request.body = json.dumps(body).encode()
        seen = []

        def start_response(status, headers, exc_info=None):
            seen.append((status, headers))

        app = aggregates.filter_factory({})(nova)
        answer = b''.join(app(request.environ, start_response))
        return seen, answer

    def warnings(self):
        return [line for line in self.stdlog.logger.output.splitlines()
                if 'WARNING [reserveapi.nova.aggregates]' in line]

    def test_other_requests_pass_untouched(self):
        nova = _FakeNova({('GET', '/os-aggregates/5'): _shown(),
                          ('POST', '/os-aggregates/5/action'): _shown(),
                          ('POST', '/servers'): _shown()})
        for method, path, body in (
                ('GET', '/os-aggregates/5', None),
                ('POST', '/os-aggregates/5/action',
                 {'set_metadata': {'metadata': {}}}),
                ('POST', '/os-aggregates/5/action', 'not an object'),
                ('POST', '/servers', {'add_host': {'host': 'h'}})):
            self.call(nova, method, path, body)
        self.assertEqual(4, len(nova.requests))
        self.assertFalse(self.mirror.method_calls)

    def test_add_host_passes_nova_answer_byte_for_byte(self):
        status, headers, body = _shown()
        headers = headers + [('X-Compute-Request-Id', 'req-1'),
                             ('Vary', 'OpenStack-API-Version')]
        nova = _FakeNova({('POST', '/os-aggregates/5/action'):
                          (status, headers, body)})
        seen, answer = self.call(nova, 'POST', '/os-aggregates/5/action',
                                 {'add_host': {'host': 'compute-1'}})
        self.assertEqual([(status, headers)], seen)
        self.assertEqual(body, answer)
        # Nova read the body the filter had read.
        self.assertEqual({'add_host': {'host': 'compute-1'}},
                         json.loads(nova.requests[0][3]))
        self.mirror.add_host.assert_called_once_with(UUID, 'compute-1',
                                                     timeout=mock.ANY)
        self.assertLessEqual(self.mirror.add_host.call_args[1]['timeout'], 3)
        self.assertEqual(1, len(nova.requests))

    def test_older_microversion_asks_nova_for_the_uuid(self):
        hidden = json.dumps({'aggregate': {'id': 5}}).encode()
        nova = _FakeNova({
            ('POST', '/project/os-aggregates/5/action'): (
                '200 OK', [], hidden),
            ('GET', '/project/os-aggregates/5'): _shown()})
        seen, answer = self.call(
            nova, 'POST', '/project/os-aggregates/5/action',
            {'remove_host': {'host': 'compute-1'}},
            headers={'OpenStack-API-Version': 'compute 2.1'})
        self.assertEqual(hidden, answer)
        method, path, environ, _body = nova.requests[1]
        self.assertEqual(('GET', '/project/os-aggregates/5',
                          'compute 2.41'),
                         (method, path, environ['HTTP_OPENSTACK_API_VERSION']))
        self.assertNotIn('openstack.legacy_v2', environ)
        self.mirror.remove_host.assert_called_once_with(
            UUID, 'compute-1', timeout=mock.ANY)

    def test_delete_learns_the_uuid_first(self):
        nova = _FakeNova({('GET', '/os-aggregates/5'): _shown(),
                          ('DELETE', '/os-aggregates/5'): ('200 OK', [], b'')})
        seen, answer = self.call(nova, 'DELETE', '/os-aggregates/5')
        self.assertEqual((['GET', 'DELETE'], b''),
                         ([request[0] for request in nova.requests], answer))
        self.mirror.delete_aggregate.assert_called_once_with(
            UUID, timeout=mock.ANY)

    def test_refused_by_nova_no_call(self):
        nova = _FakeNova({
            ('POST', '/os-aggregates/5/action'): (
                '409 Conflict', [], b'{"conflictingRequest": {}}'),
            ('GET', '/os-aggregates/5'): _shown(),
            ('DELETE', '/os-aggregates/5'): ('400 Bad Request', [], b'{}')})
        seen, answer = self.call(nova, 'POST', '/os-aggregates/5/action',
                                 {'add_host': {'host': 'compute-1'}})
        self.assertEqual(('409 Conflict', b'{"conflictingRequest": {}}'),
                         (seen[0][0], answer))
        self.call(nova, 'DELETE', '/os-aggregates/5')
        self.assertFalse(self.mirror.method_calls)
        self.assertEqual([], self.warnings())

    def test_any_failure_is_one_warning_line(self):
        nova = _FakeNova({('POST', '/os-aggregates/5/action'): _shown()})
        for error in (client.ServiceUnavailable(None, None,
                                                'refused\nby peer', None),
                      RuntimeError('a bug')):
            self.mirror.add_host.side_effect = error
            seen, answer = self.call(nova, 'POST', '/os-aggregates/5/action',
                                     {'add_host': {'host': 'compute-1'}})
            self.assertEqual(('200 OK', _shown()[2]), (seen[0][0], answer))
        first, second = self.warnings()
        for part in (UUID, 'host compute-1', 'refused by peer'):
            self.assertIn(part, first)
        self.assertIn('RuntimeError: a bug', second)

    def test_uuid_not_learned_names_nova_id(self):
        nova = _FakeNova({
            ('GET', '/os-aggregates/5'): ('403 Forbidden', [], b'{}'),
            ('DELETE', '/os-aggregates/5'): ('200 OK', [], b'')})
        seen, answer = self.call(nova, 'DELETE', '/os-aggregates/5')
        self.assertEqual('200 OK', seen[0][0])
        (warning,) = self.warnings()
        self.assertIn('aggregate unknown (Nova id 5)', warning)
        self.assertIn('403 Forbidden', warning)
        self.assertFalse(self.mirror.method_calls)

    def test_one_attempt_within_the_timeout(self):
        nova = _FakeNova({('POST', '/os-aggregates/5/action'): _shown()})
        with mock.patch.object(aggregates.reserveapi_conf,
                               'load_adapter') as load_adapter:
            self.call(nova, 'POST', '/os-aggregates/5/action',
                      {'add_host': {'host': 'compute-1'}})
        load_adapter.assert_called_once_with(mock.ANY, timeout=3)
        client.AggregateMirrorClient.assert_called_once_with(
            load_adapter.return_value, retries=0)
