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

"""Blazar leases of ``baremetal:hold`` become holds: through
python-blazarclient, against the real Blazar, reserveapi and Keystone of
the shared stack (tests/blazar/base.py)."""

import datetime

from tests.blazar import base

NOT_ADMITTED = 'reserveapi.hold_not_admitted'


class TestLeases(base.BlazarTestCase):

    def test_lease_becomes_a_hold_over_its_window(self):
        lease = self.create_lease(2, self.at(9), self.at(17), at_end='delete')

        self.assertEqual('PENDING', lease['status'])
        (reservation,) = lease['reservations']
        self.assertEqual('baremetal:hold', reservation['resource_type'])
        hold = self.hold_of(lease)
        self.assertEqual(reservation['resource_id'], hold['uuid'])
        self.assertEqual(self.project_a, hold['project_id'])
        self.assertEqual(lease['project_id'], hold['project_id'])
        self.assertEqual(2, hold['amount'])
        self.assertEqual('delete', hold['at_end'])
        self.assertEqual('pending', hold['state'])
        self.assertEqual(base.REQUEST_SPEC['extra_specs'],
                         hold['request_spec']['extra_specs'])
        # The lease's window exactly, as the service answers times.
        self.assertEqual((self.at(9), self.at(17)),
                         (base.utc(hold['start']), base.utc(hold['end'])))
        self.assertEqual((self.at(9), self.at(17)), (
            base.utc(lease['start_date']), base.utc(lease['end_date'])))
        self.assertEqual('+00:00', hold['start'][-6:])

    def test_lease_that_does_not_fit_is_refused_with_our_reason(self):
        kept = self.create_lease(2, self.at(9), self.at(17))
        name = self.getUniqueString('refused')

        self.assertRefused(
            lambda: self.create_lease(2, self.at(12), self.at(20), name),
            'Hold not admitted', NOT_ADMITTED, 'only 3 of them')

        # Blazar rolled the lease back; no hold was left behind.
        self.assertNotIn(name, self.lease_names())
        self.assertEqual([kept['reservations'][0]['resource_id']],
                         [hold['uuid'] for hold in self.holds_of_today()])
        # What fits beside it is still admitted.
        fits = self.create_lease(1, self.at(12), self.at(20))
        self.assertEqual(1, self.hold_of(fits)['amount'])

    def test_malformed_reservation_is_refused_before_the_lease(self):
        name = self.getUniqueString('malformed')

        self.assertRefused(lambda: self.blazar.lease.create(
            name, self.at(9).strftime(base.LEASE_DATE_FORMAT),
            self.at(17).strftime(base.LEASE_DATE_FORMAT),
            [{'resource_type': 'baremetal:hold', 'amonut': 2,
              'request_spec': base.REQUEST_SPEC}], []), 'amonut')

        self.assertNotIn(name, self.lease_names())
        self.assertEqual([], self.holds_of_today())

    def test_lease_end_and_amount_move_the_hold(self):
        lease = self.create_lease(2, self.at(9), self.at(17))
        reservation_id = lease['reservations'][0]['id']

        self.blazar.lease.update(lease['id'], end_date=self.at(19).strftime(
            base.LEASE_DATE_FORMAT))

        updated = self.blazar.lease.get(lease['id'])
        self.assertEqual(('PENDING', self.at(19)), (
            updated['status'], base.utc(updated['end_date'])))
        hold = self.hold_of(updated)
        self.assertEqual((self.at(9), self.at(19)),
                         (base.utc(hold['start']), base.utc(hold['end'])))

        self.blazar.lease.update(
            lease['id'], reservations=[{'id': reservation_id, 'amount': 3}])

        updated = self.blazar.lease.get(lease['id'])
        self.assertEqual('PENDING', updated['status'])
        self.assertEqual(3, self.hold_of(updated)['amount'])

    def test_growth_that_does_not_fit_keeps_lease_and_hold(self):
        self.create_lease(2, self.at(9), self.at(17))
        lease = self.create_lease(1, self.at(9), self.at(17))
        reservation_id = lease['reservations'][0]['id']

        self.assertRefused(lambda: self.blazar.lease.update(
            lease['id'], reservations=[{'id': reservation_id, 'amount': 2}]),
            'Hold not admitted', NOT_ADMITTED)

        kept = self.blazar.lease.get(lease['id'])
        self.assertEqual('PENDING', kept['status'])
        self.assertEqual(1, self.hold_of(kept)['amount'])

    def test_lease_start_moved_replaces_the_pending_hold(self):
        lease = self.create_lease(1, self.at(9), self.at(17))
        old = self.hold_of(lease)

        self.blazar.lease.update(lease['id'], start_date=self.at(11).strftime(
            base.LEASE_DATE_FORMAT))

        moved = self.blazar.lease.get(lease['id'])
        self.assertEqual(('PENDING', self.at(11)), (
            moved['status'], base.utc(moved['start_date'])))
        new = self.hold_of(moved)
        self.assertNotEqual(old['uuid'], new['uuid'])
        self.assertEqual((self.at(11), self.at(17), 1), (
            base.utc(new['start']), base.utc(new['end']), new['amount']))
        self.assertEqual('cancelled', self.holds.get(old['uuid'])['state'])

    def test_start_move_needs_room_for_both_holds(self):
        # The new hold is admitted beside the old one: two of three
        # nodes cannot be held twice, so the lease keeps what it has.
        lease = self.create_lease(2, self.at(9), self.at(17))
        old = self.hold_of(lease)

        self.assertRefused(lambda: self.blazar.lease.update(
            lease['id'], start_date=self.at(11).strftime(
                base.LEASE_DATE_FORMAT)),
            'cannot change its start', old['uuid'], NOT_ADMITTED)

        kept = self.blazar.lease.get(lease['id'])
        self.assertEqual(('PENDING', self.at(9)), (
            kept['status'], base.utc(kept['start_date'])))
        self.assertEqual(old['uuid'], self.hold_of(kept)['uuid'])
        self.assertEqual('pending', self.holds.get(old['uuid'])['state'])
        self.assertEqual([old['uuid']],
                         [hold['uuid'] for hold in self.holds_of_today()])

    def test_lease_delete_cancels_the_hold(self):
        lease = self.create_lease(2, self.at(9), self.at(17))
        hold = self.hold_of(lease)

        self.blazar.lease.delete(lease['id'])

        self.assertNotIn(lease['name'], self.lease_names())
        self.assertEqual('cancelled', self.holds.get(hold['uuid'])['state'])

    def test_lease_from_now_starts_its_hold_and_delete_cancels_it(self):
        end = datetime.datetime.now(datetime.timezone.utc) + (
            datetime.timedelta(hours=2))
        lease = self.create_lease(1, 'now', end)
        hold = self.hold_of(lease)
        # Blazar's start is the minute; the hold's, its creation's second.
        self.assertLessEqual(base.utc(lease['start_date']),
                             base.utc(hold['start']))
        self.assertEqual('active', hold['state'])

        started = self.wait_for(
            lambda: self.blazar.lease.get(lease['id'])['status'] == 'ACTIVE'
            and self.blazar.lease.get(lease['id']), what='lease start')
        self.assertEqual('active', started['reservations'][0]['status'])

        self.blazar.lease.delete(lease['id'])
        self.assertEqual('cancelled', self.holds.get(hold['uuid'])['state'])
