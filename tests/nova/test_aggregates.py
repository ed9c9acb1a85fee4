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

"""nova-api's aggregate hook inside real Nova: the stock Ironic driver's
host has a provider per Ironic node, nova-api carries our filter, and the
reservation service writes the same Placement."""

import io
import time

import fixtures
from nova import context as nova_context
from nova import objects
from nova.cmd import manage as nova_manage
from oslo_utils import uuidutils

from reserveapi_testing.nova import nova_api

HOST = 'compute-1'
# What Nova may take beyond [reserveapi] aggregate_timeout to answer, on a
# shared two-core machine.
MARGIN = 1.5
# Headers that differ between any two answers.
PER_ANSWER_HEADERS = {'date', 'x-openstack-request-id',
                      'x-compute-request-id'}


def _answer(response):
    """Status, headers and body of an answer, less what always differs
    (and ``updated_at``, which each change moves).
    """
    headers = {name.lower(): value for name, value in response.headers.items()
               if name.lower() not in PER_ANSWER_HEADERS}
    body = response.json() if response.content else None
    if body and 'aggregate' in body:
        body['aggregate'].pop('updated_at', None)
    return response.status_code, headers, body


class TestAggregateHook(nova_api.AggregateHookTestCase):

    def test_membership_follows_nova_on_every_provider(self):
        foreign = uuidutils.generate_uuid()
        self.add_foreign_aggregate(foreign)
        a_id, a_uuid = self.create_aggregate('a')
        b_id, b_uuid = self.create_aggregate('b')

        # With the UUID in Nova's answer (2.41+) and without it (2.1).
        self.assertEqual(200, self.aggregate_action(
            a_id, 'add_host', HOST).status_code)
        self.assertEqual(200, self.aggregate_action(
            b_id, 'add_host', HOST, microversion='2.1').status_code)
        self.assertEqual({uuid: {foreign, a_uuid, b_uuid}
                          for uuid in self.providers},
                         self.provider_aggregates())
        self.assertEqual([(HOST, True, 'synced')], [
            (row['host'], row['member'], row['state'])
            for row in self.reserveapi.aggregate(a_uuid)['hosts']])

        # Leaving A takes only A off the providers.
        self.assertEqual(200, self.aggregate_action(
            a_id, 'remove_host', HOST, microversion='2.40').status_code)
        self.assertEqual({uuid: {foreign, b_uuid} for uuid in self.providers},
                         self.provider_aggregates())

        # B is emptied, then deleted: its UUID is learned before the delete.
        self.assertEqual(200, self.aggregate_action(
            b_id, 'remove_host', HOST).status_code)
        self.assertEqual(200, self.delete_aggregate(
            b_id, microversion='2.1').status_code)
        self.assertEqual({uuid: {foreign} for uuid in self.providers},
                         self.provider_aggregates())
        self.assertTrue(self.reserveapi.aggregate(b_uuid)['deleted'])
        self.assertEqual([], self.hook_warnings())
        # Nova's own mirroring (onto one provider) never failed either.
        self.assertNotIn('Failed to associate', self.stdlog.logger.output)

    def test_nova_answers_as_without_the_hook(self):
        """Status, headers and body of every mirrored call, at each
        microversion and on the legacy v2 pipeline, equal plain Nova's.
        """
        aggregate_id, _uuid = self.create_aggregate('compared')
        for microversion in ('2.1', '2.40', '2.41', 'latest'):
            hooked = self.join_and_leave(aggregate_id, microversion, self.api)
            plain = self.join_and_leave(aggregate_id, microversion,
                                        self.plain_api)
            self.assertEqual([_answer(answer) for answer in plain],
                             [_answer(answer) for answer in hooked])
            self.assertEqual([200, 200],
                             [answer.status_code for answer in hooked])
            self.assertEqual(
                [microversion in ('2.41', 'latest')] * 2,
                ['uuid' in answer.json()['aggregate'] for answer in hooked])
            hooked_id, _ = self.create_aggregate('hooked-' + microversion)
            plain_id, _ = self.create_aggregate('plain-' + microversion)
            self.assertEqual(
                _answer(self.delete_aggregate(plain_id, microversion,
                                              api=self.plain_api)),
                _answer(self.delete_aggregate(hooked_id, microversion)))

        legacy, plain_legacy = self.legacy_v2_clients()
        hooked = self.join_and_leave(aggregate_id, None, legacy)
        plain = self.join_and_leave(aggregate_id, None, plain_legacy)
        self.assertEqual([_answer(answer) for answer in plain],
                         [_answer(answer) for answer in hooked])
        self.assertEqual([False, False], ['uuid' in answer.json()['aggregate']
                                          for answer in hooked])
        self.assertEqual([], self.hook_warnings())

    def test_legacy_v2_pipeline_is_mirrored(self):
        aggregate_id, aggregate_uuid = self.create_aggregate('legacy')
        legacy, _ = self.legacy_v2_clients()
        self.assertEqual(200, self.aggregate_action(
            aggregate_id, 'add_host', HOST, None, api=legacy).status_code)
        self.assertEqual({uuid: {aggregate_uuid} for uuid in self.providers},
                         self.provider_aggregates())
        self.assertEqual(200, self.aggregate_action(
            aggregate_id, 'remove_host', HOST, None, api=legacy).status_code)
        self.assertEqual(200, self.delete_aggregate(
            aggregate_id, None, api=legacy).status_code)
        self.assertEqual({uuid: set() for uuid in self.providers},
                         self.provider_aggregates())
        self.assertTrue(self.reserveapi.aggregate(aggregate_uuid)['deleted'])

    def test_refused_calls_are_not_mirrored(self):
        """A 4xx from Nova makes no call: the service never hears of an
        aggregate that only plain Nova changed.
        """
        aggregate_id, aggregate_uuid = self.create_aggregate('refused')
        self.assertEqual(404, self.aggregate_action(
            aggregate_id, 'add_host', 'no-such-host').status_code)
        self.assertEqual(404, self.aggregate_action(
            aggregate_id, 'remove_host', HOST).status_code)
        self.assertEqual(200, self.aggregate_action(
            aggregate_id, 'add_host', HOST, api=self.plain_api).status_code)
        # Already a member; not empty.
        self.assertEqual(409, self.aggregate_action(
            aggregate_id, 'add_host', HOST).status_code)
        self.assertEqual(400, self.delete_aggregate(aggregate_id).status_code)
        self.assertEqual(400, self.aggregate_action(
            'no-such-aggregate', 'add_host', HOST).status_code)
        self.assertIsNone(self.reserveapi.aggregate(aggregate_uuid))
        self.assertEqual([], self.hook_warnings())

    def test_service_down_or_hung_never_fails_nova(self):
        up_id, up_uuid = self.create_aggregate('up')
        down_id, down_uuid = self.create_aggregate('down')
        hung_id, hung_uuid = self.create_aggregate('hung')
        timeout = self.AGGREGATE_TIMEOUT
        # Versions negotiated: the hung service never answers the call
        # itself.
        self.aggregate_action(up_id, 'add_host', HOST)

        self.reserveapi.stop()
        took, response = self.timed(self.aggregate_action, down_id,
                                    'add_host', HOST)
        self.assertEqual(200, response.status_code)
        self.assertLess(took, timeout + MARGIN)
        (warning,) = self.hook_warnings()
        for part in (down_uuid, 'host %s' % HOST,
                     'Unable to establish connection'):
            self.assertIn(part, warning)
        self.assertEqual(200, self.aggregate_action(
            up_id, 'remove_host', HOST).status_code)

        with nova_api.HungService(self.reserveapi.port):
            took, response = self.timed(self.aggregate_action, hung_id,
                                        'add_host', HOST)
        self.assertEqual(200, response.status_code)
        self.assertGreaterEqual(took, timeout)
        self.assertLess(took, timeout + MARGIN)
        self.assertEqual(3, len(self.hook_warnings()))
        for part in (hung_uuid, 'host %s' % HOST, 'timed out'):
            self.assertIn(part, self.hook_warnings()[2])
        self.assertEqual([], [line for line in
                              self.stdlog.logger.output.splitlines()
                              if ' WARNING [keystoneauth' in line
                              or ' WARNING [urllib3' in line])

        # Nova 34 mirrored the three changes by itself, onto its first
        # compute node of the host only.
        first = self.first_compute_node(HOST)
        stale = {uuid: {down_uuid, hung_uuid} if uuid == first
                 else {up_uuid} for uuid in self.providers}
        self.assertEqual(stale, self.provider_aggregates())
        # Nova's own repair refuses a host with several compute nodes
        # and changes nothing.
        self.assertNovaRefusesToSync()
        self.assertEqual(stale, self.provider_aggregates())

        # The service is back: one worker pass that reads Nova's
        # aggregates repairs every provider.
        self.reserveapi.start()
        self.reserveapi.configure({'mirror': {
            'reconcile_from_nova_interval': 60}})
        self.reserveapi.run_worker_once()
        self.assertPlacementEqualsNova()
        self.assertNovaRefusesToSync()
        self.assertPlacementEqualsNova()

    # Helpers --------------------------------------------------------

    def timed(self, call, *args, **kwargs):
        started = time.monotonic()
        result = call(*args, **kwargs)
        return time.monotonic() - started, result

    def join_and_leave(self, aggregate_id, microversion, api):
        """The answers to ``add_host`` then ``remove_host``."""
        return [self.aggregate_action(aggregate_id, action, HOST,
                                      microversion, api=api)
                for action in ('add_host', 'remove_host')]

    def legacy_v2_clients(self):
        """Admin clients of the legacy v2 pipeline, ours and plain Nova's."""
        clients = []
        for api in (self.api, self.plain_api):
            legacy = type(api)(api.auth_user, '%s/%s' % (
                api.base_url.replace('/v2.1', '/v2'), api.project_id),
                project_id=api.project_id, roles=api.roles)
            clients.append(legacy)
        return clients

    def first_compute_node(self, host):
        """The provider Nova 34 mirrors a host's aggregates onto."""
        return objects.ComputeNodeList.get_all_by_host(
            nova_context.get_admin_context(), host)[0].uuid

    def assertNovaRefusesToSync(self):
        """``nova-manage placement sync_aggregates`` stops at the Ironic
        host, as Nova 34 does for any host with several compute nodes.
        """
        output = io.StringIO()
        with fixtures.MonkeyPatch('sys.stdout', output):
            code = nova_manage.PlacementCommands().sync_aggregates(
                verbose=True)
        self.assertEqual(1, code, output.getvalue())
        self.assertIn('Unexpected number of compute node records',
                      output.getvalue())

    def assertPlacementEqualsNova(self):
        """Each provider of the host is in exactly the aggregates Nova
        has the host in.
        """
        self.api.microversion = 'latest'
        nova = {aggregate['uuid'] for aggregate in
                self.api.api_get('/os-aggregates').body['aggregates']
                if HOST in aggregate['hosts']}
        self.assertEqual({uuid: nova for uuid in self.providers},
                         self.provider_aggregates())
