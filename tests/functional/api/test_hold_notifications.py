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

"""The events of ``/v1/holds``, as the API's calls make them: one per
change, after it, with the hold as the API shows it at 1.6 (without
what only the API shows: what the hold pinned now, and its links).
tests/notifications/test_events.py receives them from a real RabbitMQ.
"""

import fixtures

from reserveapi import notifications
from tests.functional.api import test_holds

API_ONLY = ('boot_resource_class', 'pinned', 'in_use', 'links')


def _payload(body, **extra):
    return dict({key: value for key, value in body.items()
                 if key not in API_ONLY}, **extra)


class TestHoldNotifications(test_holds.HoldsTestCase):

    def setUp(self):
        super().setUp()
        self.events = []
        self.useFixture(fixtures.MockPatchObject(
            notifications, '_notify', self._notify))
        self.gold_nodes(3)

    def _notify(self, priority, event, payload):
        if event.startswith('hold.'):
            self.events.append((priority, event, payload))

    def test_one_event_per_change(self):
        created = self.admitted(test_holds.moment(hours=3),
                                test_holds.moment(hours=27), amount=2)
        self.assertEqual([('info', 'hold.create', _payload(created))],
                         self.events)

        path = '/v1/holds/' + created['uuid']
        new_end = test_holds.moment(hours=28).isoformat()
        updated = self.call('PATCH', path, {'end': new_end, 'amount': 3})
        self.assertEqual(200, updated.status_int, updated.text)
        self.assertEqual(
            ('info', 'hold.update', _payload(
                updated.json, previous_end=created['end'],
                previous_amount=2)),
            self.events[-1])
        # Nothing changed, nothing sent; the end alone, then the amount
        # alone, each an event.
        self.assertEqual(200, self.call('PATCH', path, {
            'end': new_end, 'amount': 3}).status_int)
        self.assertEqual(2, len(self.events))
        shorter = self.call('PATCH', path, {'amount': 1}).json
        self.assertEqual(('hold.update', 1, 3, new_end),
                         (self.events[-1][1], self.events[-1][2]['amount'],
                          self.events[-1][2]['previous_amount'],
                          self.events[-1][2]['previous_end']))
        self.assertEqual(_payload(shorter, previous_end=new_end,
                                  previous_amount=3), self.events[-1][2])

        self.assertEqual(204, self.call('DELETE', path).status_int)
        cancelled = self.show(created['uuid'])
        self.assertEqual(('info', 'hold.cancel', _payload(cancelled)),
                         self.events[-1])
        self.assertEqual('cancelled', self.events[-1][2]['state'])
        # Cancelling again answers the same and sends nothing.
        self.assertEqual(204, self.call('DELETE', path).status_int)
        self.assertEqual(['hold.create', 'hold.update', 'hold.update',
                          'hold.cancel'],
                         [event[1] for event in self.events])

    def test_refused_sends_nothing(self):
        refused = self.hold(test_holds.moment(hours=3),
                            test_holds.moment(hours=27), amount=4)
        self.assertError(refused, 409, 'reserveapi.hold_not_admitted')
        hold = self.admitted(test_holds.moment(hours=3),
                             test_holds.moment(hours=27), amount=3)
        path = '/v1/holds/' + hold['uuid']
        self.assertError(self.call('PATCH', path, {'amount': 4}), 409,
                         'reserveapi.hold_not_admitted')
        self.assertEqual([('info', 'hold.create', _payload(hold))],
                         self.events)
