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

"""Leases kept alive by a heartbeat, and who holds them."""

import threading
import time

import fixtures

from reserveapi.common import heartbeat
from tests import base


class TestHeartbeat(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatch(
            'reserveapi.common.heartbeat.HEARTBEAT', 0.01))

    def wait_for(self, predicate):
        deadline = time.monotonic() + 10
        while not predicate():
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)

    def test_renews_while_the_holder_works_and_stops_after(self):
        renewals = []
        with heartbeat.Heartbeat(
                lambda: renewals.append(1) or True) as keeper:
            self.wait_for(lambda: len(renewals) >= 3)
            self.assertTrue(keeper.held())
        done = len(renewals)
        time.sleep(0.05)
        self.assertEqual(done, len(renewals))

    def test_a_lease_taken_over_is_no_longer_held(self):
        with heartbeat.Heartbeat(lambda: False) as keeper:
            self.wait_for(lambda: not keeper.held())

    def test_a_lease_not_renewed_for_too_long_is_no_longer_held(self):
        # The database did not answer: it may have lapsed.
        self.useFixture(fixtures.MockPatch(
            'reserveapi.common.heartbeat.SECONDS', 0.05))

        def fail():
            raise RuntimeError('database gone')

        with heartbeat.Heartbeat(fail) as keeper:
            self.wait_for(lambda: not keeper.held())


class TestHolder(base.TestCase):

    def test_one_per_thread_stable_within_it(self):
        names = []
        thread = threading.Thread(target=lambda: names.append(
            heartbeat.holder()))
        thread.start()
        thread.join()
        self.assertEqual(heartbeat.holder(), heartbeat.holder())
        self.assertNotEqual(heartbeat.holder(), names[0])
        self.assertEqual(heartbeat.holder().rsplit(':', 1)[0],
                         names[0].rsplit(':', 1)[0])
