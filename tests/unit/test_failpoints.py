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

"""reserveapi_testing/failpoints.py: the order it is given is the order
the calls happen in."""

from oslotest import base

from reserveapi_testing import failpoints


class Peer:

    calls = []

    def call(self, what):
        self.calls.append(what)


class TestInterleaver(base.BaseTestCase):

    def test_every_interleaving_of_two(self):
        self.assertEqual(
            ['aabb', 'abab', 'abba', 'baab', 'baba', 'bbaa'],
            list(failpoints.orders(2, 2)))
        self.assertEqual(10, len(list(failpoints.orders(3, 2))))

    def test_turns_follow_the_order(self):
        interleaver = self.useFixture(failpoints.Interleaver())
        interleaver.pause_before(Peer, 'call')
        peer = Peer()

        def operation(name):
            return lambda: [peer.call('%s%d' % (name, step))
                            for step in range(3)]

        for order in failpoints.orders(3, 3):
            del Peer.calls[:]
            errors = interleaver.run({'a': operation('a'),
                                      'b': operation('b')}, order)
            expected = ['%s%d' % (name, order[:position].count(name))
                        for position, name in enumerate(order)]
            self.assertEqual(({}, expected), (errors, Peer.calls))
            self.assertEqual([(name, 'call') for name in order],
                             interleaver.trace)

    def test_the_rest_runs_to_the_end_in_name_order(self):
        interleaver = self.useFixture(failpoints.Interleaver())
        interleaver.pause_before(Peer, 'call')
        del Peer.calls[:]
        peer = Peer()
        interleaver.run({'b': lambda: [peer.call('b0'), peer.call('b1')],
                         'a': lambda: [peer.call('a0'), peer.call('a1')]},
                        'b')
        self.assertEqual(['b0', 'a0', 'a1', 'b1'], Peer.calls)

    def test_other_threads_pass_through(self):
        interleaver = self.useFixture(failpoints.Interleaver())
        interleaver.pause_before(Peer, 'call')
        del Peer.calls[:]
        Peer().call('main')
        self.assertEqual(['main'], Peer.calls)
