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

"""Concurrent clients against two API processes on one SQLite file,
claiming in the real Ironic: a claim Ironic refuses, or cannot answer, is
undone without a 500 and never leaves a reservation Ironic does not hold.
"""

import concurrent.futures
import uuid as uuidlib

from reserveapi_testing import examples
from tests.ironic import base

CLIENTS = 8


class TestConcurrentClaims(base.IronicServiceTestCase):

    def reserve_concurrently(self, count):
        """``count`` POSTs from CLIENTS threads: [(instance, status,
        body)]."""
        def reserve(_):
            instance = str(uuidlib.uuid4())
            status, body = self.call('POST', '/v1/reservations', {
                'instance_uuid': instance, 'host': 'compute-1',
                'request_spec': examples.REQUEST_SPEC})
            return instance, status, body

        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            return list(pool.map(reserve, range(count)))

    def live_reservations(self):
        status, body = self.call('GET', '/v1/reservations?state=reserved')
        self.assertEqual(200, status, body)
        return {r['node_uuid']: r['instance_uuid']
                for r in body['reservations']}

    def test_refused_and_failed_claims_leave_nothing_behind(self):
        nodes = self.ironic.seed_nodes(32, **base.GOLD)
        self.run_command('reserveapi-manage', 'sync-nodes')
        # Taken behind our back, after our sync read them free.
        taken = {node: str(uuidlib.uuid4()) for node in nodes[:6]}
        for node, instance in taken.items():
            self.ironic.update_node(node, instance_uuid=instance)
        self.start_api()

        answers = self.reserve_concurrently(16)

        self.assertLessEqual({status for _i, status, _b in answers},
                             {201, 409}, answers)
        given = {body['node_uuid']: instance
                 for instance, status, body in answers if status == 201}
        self.assertGreaterEqual(len(given), 10)
        self.assertEqual(len(given), len([a for a in answers
                                          if a[1] == 201]))
        self.assertEqual(set(), set(given) & set(taken))
        self.assertEqual(given, self.live_reservations())
        in_ironic = {node['uuid']: node['instance_uuid']
                     for node in self.ironic.list_nodes()}
        for node, instance in given.items():
            self.assertEqual(instance, in_ironic[node])
        for node, instance in taken.items():
            self.assertEqual(instance, in_ironic[node])

        self.ironic.stop()
        answers = self.reserve_concurrently(CLIENTS)

        # Racing for the same free node is still a 409; nothing is a 500,
        # nothing is left reserved.
        codes = {(status, body['errors'][0]['code'])
                 for _i, status, body in answers}
        self.assertLessEqual(codes, {(503, 'reserveapi.ironic_unavailable'),
                                     (409, 'reserveapi.no_valid_node')},
                             answers)
        self.assertIn((503, 'reserveapi.ironic_unavailable'), codes)
        self.assertEqual(given, self.live_reservations())
