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

"""The worker's retry pass against the real Placement service."""

import threading

from reserveapi.mirror import state as mirror_state
from tests.functional import base
from tests.functional.mirror import base as mirror_base


class TestConcurrentWorkers(mirror_base.MirrorAPITestCase):
    """Two retry passes at once apply each pending row exactly once."""

    scenarios = base.SERVER_BACKENDS

    def test_no_double_apply(self):
        providers = [self.placement.create_provider('compute-%d' % number)
                     for number in range(12)]
        self.placement.stop()
        for number in range(12):
            self.add_host('compute-%d' % number)
        self.placement.start()
        writes = []
        for rp in providers:
            self.placement.before_request(
                'PUT', '/resource_providers/%s/aggregates' % rp,
                writes.append)
        self.time.advance_time_seconds(3600)
        results = []
        barrier = threading.Barrier(2)

        def work():
            barrier.wait()
            results.append(mirror_state.retry_pending())

        threads = [threading.Thread(target=work) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        self.assertEqual(12, len(writes))
        self.assertEqual(12, sum(synced for synced, _pending in results))
        self.assertEqual(set(providers),
                         self.placement.members(self.aggregate))
        self.assertEqual({'synced'}, {state for _member, state
                                      in self.host_states().values()})
