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

"""PlacementClient against the real Placement service."""

import logging
import socket
import uuid

import fixtures
import webob

from reserveapi.common import exception
from reserveapi.mirror import placement
from reserveapi_testing import placement as placement_fixture
from tests.functional.mirror import base as mirror_base


def _uuid():
    return str(uuid.uuid4())


class TestMembership(mirror_base.MirrorTestCase):

    def setUp(self):
        super().setUp()
        self.rp = self.placement.create_provider('compute-1')
        self.ours = _uuid()

    def test_add_then_remove(self):
        self.assertTrue(self.client.add_aggregate(self.rp, self.ours))
        self.assertEqual({self.ours}, self.placement.aggregates(self.rp))

        self.assertTrue(self.client.remove_aggregate(self.rp, self.ours))
        self.assertEqual(set(), self.placement.aggregates(self.rp))

    def test_already_in_desired_state_writes_nothing(self):
        self.client.add_aggregate(self.rp, self.ours)
        generation = self.placement.get_aggregates(self.rp)[1]

        self.assertFalse(self.client.add_aggregate(self.rp, self.ours))
        self.assertEqual(({self.ours}, generation),
                         self.placement.get_aggregates(self.rp))

        self.client.remove_aggregate(self.rp, self.ours)
        generation = self.placement.get_aggregates(self.rp)[1]
        self.assertFalse(self.client.remove_aggregate(self.rp, self.ours))
        self.assertEqual((set(), generation),
                         self.placement.get_aggregates(self.rp))

    def test_other_aggregates_survive(self):
        others = {_uuid(), _uuid()}
        self.placement.set_aggregates(self.rp, others)

        self.client.add_aggregate(self.rp, self.ours)
        self.assertEqual(others | {self.ours},
                         self.placement.aggregates(self.rp))

        self.client.remove_aggregate(self.rp, self.ours)
        self.assertEqual(others, self.placement.aggregates(self.rp))

    def test_aggregate_providers(self):
        other_rp = self.placement.create_provider('compute-2')
        self.placement.create_provider('compute-3')
        self.client.add_aggregate(self.rp, self.ours)
        self.client.add_aggregate(other_rp, self.ours)

        self.assertEqual({self.rp, other_rp},
                         self.client.aggregate_providers(self.ours))
        self.assertEqual(self.placement.members(self.ours),
                         self.client.aggregate_providers(self.ours))
        self.assertEqual(set(), self.client.aggregate_providers(_uuid()))


class TestRemembered(mirror_base.MirrorTestCase):
    """What the client learnt saves Placement calls, never a change."""

    def setUp(self):
        super().setUp()
        self.rp = self.placement.create_provider('compute-1')
        self.path = '/resource_providers/%s/aggregates' % self.rp
        self.ours = _uuid()
        self.reads = []
        self.placement.before_request('GET', self.path, self.reads.append,
                                      times=None)

    def test_known_generation_skips_the_read(self):
        self.assertTrue(self.client.add_aggregate(self.rp, self.ours))
        self.assertEqual(1, len(self.reads))

        self.assertTrue(self.client.remove_aggregate(self.rp, self.ours))
        self.assertTrue(self.client.add_aggregate(self.rp, self.ours))

        self.assertEqual(1, len(self.reads))
        self.assertEqual({self.ours}, self.placement.aggregates(self.rp))

    def test_a_write_since_is_read_and_kept(self):
        self.client.add_aggregate(self.rp, self.ours)
        theirs = _uuid()
        self.placement.add_aggregates(self.rp, theirs)

        self.assertTrue(self.client.remove_aggregate(self.rp, self.ours))

        self.assertEqual({theirs}, self.placement.aggregates(self.rp))

    def test_nothing_to_do_is_checked_by_a_read(self):
        self.client.add_aggregate(self.rp, self.ours)
        self.placement.set_aggregates(self.rp, set())

        self.assertTrue(self.client.add_aggregate(self.rp, self.ours))

        self.assertEqual({self.ours}, self.placement.aggregates(self.rp))

    def test_provider_lookup_remembered_until_gone(self):
        lookups = []
        self.placement.before_request('GET', '/resource_providers',
                                      lookups.append, times=None)
        self.assertEqual([self.rp],
                         self.client.provider_uuids_named('compute-1'))
        self.assertEqual([self.rp],
                         self.client.provider_uuids_named('compute-1'))
        self.assertEqual(1, len(lookups))

        self.placement.delete_provider(self.rp)
        new_rp = self.placement.create_provider('compute-1')
        self.assertRaises(exception.ProviderGone,
                          self.client.add_aggregate, self.rp, self.ours)

        self.assertEqual([new_rp],
                         self.client.provider_uuids_named('compute-1'))
        self.assertEqual(2, len(lookups))

    def test_no_provider_is_asked_again(self):
        self.assertEqual([], self.client.provider_uuids_named('compute-2'))
        rp = self.placement.create_provider('compute-2')

        self.assertEqual([rp], self.client.provider_uuids_named('compute-2'))


class TestProvidersNamed(mirror_base.MirrorTestCase):

    def test_exact_name_only(self):
        rp = self.placement.create_provider('compute-1')
        self.placement.create_provider('compute-10')
        self.placement.create_provider('compute-1.example.org')
        self.placement.add_aggregates(rp, _uuid())

        provider = self.placement.get_provider(rp)
        self.assertEqual([{'uuid': rp, 'name': 'compute-1',
                           'generation': provider['generation']}],
                         self.client.providers_named('compute-1'))

    def test_no_provider(self):
        self.placement.create_provider('compute-1')
        self.assertEqual([], self.client.providers_named('compute-2'))

    def test_name_is_escaped(self):
        rp = self.placement.create_provider('rack 1&host=2')
        self.assertEqual([rp], [found['uuid'] for found in
                                self.client.providers_named('rack 1&host=2')])


class TestGenerationConflict(mirror_base.MirrorTestCase):
    """Another writer changes the provider between our read and our write."""

    def setUp(self):
        super().setUp()
        self.rp = self.placement.create_provider('compute-1')
        self.path = '/resource_providers/%s/aggregates' % self.rp
        self.before = _uuid()
        self.placement.set_aggregates(self.rp, {self.before})
        self.ours = _uuid()
        self.theirs = []

    def _concurrent_writer(self, environ):
        self.theirs.append(_uuid())
        self.placement.add_aggregates(self.rp, self.theirs[-1])

    def test_add_reapplies_and_keeps_their_change(self):
        self.placement.before_request('PUT', self.path,
                                      self._concurrent_writer)

        self.assertTrue(self.client.add_aggregate(self.rp, self.ours))

        self.assertEqual(1, len(self.theirs))
        self.assertEqual({self.before, self.theirs[0], self.ours},
                         self.placement.aggregates(self.rp))

    def test_remove_reapplies_and_keeps_their_change(self):
        self.placement.add_aggregates(self.rp, self.ours)
        self.placement.before_request('PUT', self.path,
                                      self._concurrent_writer)

        self.assertTrue(self.client.remove_aggregate(self.rp, self.ours))

        self.assertEqual({self.before, self.theirs[0]},
                         self.placement.aggregates(self.rp))

    def test_gives_up_after_generation_retries(self):
        self.conf_fixture.config(group='mirror', generation_retries=3)
        client = placement.PlacementClient()
        self.placement.before_request('PUT', self.path,
                                      self._concurrent_writer, times=None)

        self.assertRaises(exception.PlacementConflict,
                          client.add_aggregate, self.rp, self.ours)

        self.assertEqual(3, len(self.theirs))
        self.assertEqual({self.before, *self.theirs},
                         self.placement.aggregates(self.rp))


class TestProviderGone(mirror_base.MirrorTestCase):

    def test_unknown_provider(self):
        missing = _uuid()
        for call in (self.client.add_aggregate, self.client.remove_aggregate):
            self.assertRaises(exception.ProviderGone, call, missing, _uuid())

    def test_deleted_between_read_and_write(self):
        rp = self.placement.create_provider('compute-1')
        self.placement.before_request(
            'PUT', '/resource_providers/%s/aggregates' % rp,
            lambda environ: self.placement.delete_provider(rp))

        error = self.assertRaises(exception.ProviderGone,
                                  self.client.add_aggregate, rp, _uuid())

        self.assertIn(rp, str(error))
        self.assertEqual([], self.client.providers_named('compute-1'))


class TestPlacementDown(mirror_base.MirrorTestCase):

    def setUp(self):
        super().setUp()
        self.rp = self.placement.create_provider('compute-1')
        self.mine = _uuid()
        self.placement.set_aggregates(self.rp, {self.mine})
        self.sleeps = self.useFixture(fixtures.MockPatch(
            'keystoneauth1.session.time.sleep')).mock

    def test_refused_then_back(self):
        ours = _uuid()
        self.placement.stop()

        self.assertRaises(exception.PlacementUnavailable,
                          self.client.add_aggregate, self.rp, ours)
        self.assertRaises(exception.PlacementUnavailable,
                          self.client.remove_aggregate, self.rp, self.mine)
        self.assertRaises(exception.PlacementUnavailable,
                          self.client.providers_named, 'compute-1')
        self.assertRaises(exception.PlacementUnavailable,
                          self.client.aggregate_providers, ours)
        self.assertEqual({self.mine}, self.placement.aggregates(self.rp))

        self.placement.start()

        self.assertTrue(self.client.add_aggregate(self.rp, ours))
        self.assertTrue(self.client.remove_aggregate(self.rp, self.mine))
        self.assertEqual({ours}, self.placement.aggregates(self.rp))

    def test_timeout_disables_connect_retries(self):
        self.conf_fixture.config(group='placement', connect_retries=5,
                                 connect_retry_delay=30)
        inline = placement.PlacementClient(
                                           timeout=2)
        worker = placement.PlacementClient()
        self.placement.stop()

        self.assertRaises(exception.PlacementUnavailable,
                          inline.add_aggregate, self.rp, _uuid())
        self.sleeps.assert_not_called()

        self.assertRaises(exception.PlacementUnavailable,
                          worker.add_aggregate, self.rp, _uuid())
        self.assertEqual(5, self.sleeps.call_count)
        self.assertEqual({self.mine}, self.placement.aggregates(self.rp))

    def test_per_call_timeout_overrides_client(self):
        self.conf_fixture.config(group='placement', connect_retries=5)
        self.placement.stop()

        self.assertRaises(exception.PlacementUnavailable,
                          self.client.add_aggregate, self.rp, _uuid(),
                          timeout=2)
        self.sleeps.assert_not_called()

    def test_no_answer_times_out(self):
        silent = socket.socket()
        self.addCleanup(silent.close)
        silent.bind(('127.0.0.1', 0))
        silent.listen(8)
        self.conf_fixture.config(
            group='placement',
            endpoint='http://127.0.0.1:%d' % silent.getsockname()[1])
        client = placement.PlacementClient(
                                           timeout=0.2)

        self.assertRaises(exception.PlacementUnavailable,
                          client.add_aggregate, self.rp, _uuid())
        self.assertEqual({self.mine}, self.placement.aggregates(self.rp))

    def test_server_error_is_unavailable(self):
        self.placement.before_request(
            'GET', '/resource_providers/%s/aggregates' % self.rp,
            lambda environ: webob.Response(status=503))

        self.assertRaises(exception.PlacementUnavailable,
                          self.client.remove_aggregate, self.rp, self.mine)
        self.assertEqual({self.mine}, self.placement.aggregates(self.rp))

        self.assertTrue(self.client.remove_aggregate(self.rp, self.mine))
        self.assertEqual(set(), self.placement.aggregates(self.rp))


class TestNoSecretsLogged(mirror_base.MirrorTestCase):

    def test_token_not_in_logs(self):
        logs = [self.useFixture(fixtures.FakeLogger(name=name,
                                                    level=logging.DEBUG))
                for name in ('keystoneauth', 'reserveapi')]
        rp = self.placement.create_provider('compute-1')
        aggregate = _uuid()

        self.client.add_aggregate(rp, aggregate)
        self.client.remove_aggregate(rp, aggregate)
        self.placement.stop()
        self.assertRaises(exception.PlacementUnavailable,
                          self.client.add_aggregate, rp, aggregate)

        output = ''.join(log.output for log in logs)
        self.assertIn(rp, output)
        self.assertNotIn(placement_fixture.NOAUTH_TOKEN.split(':')[1], output)
