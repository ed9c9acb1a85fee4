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

"""Changing a reservation: takeover by another host, confirmation once
deployed, expiry."""

import datetime
import uuid

from oslo_utils import timeutils
import sqlalchemy as sa

from reserveapi import reservations
from reserveapi.common import exception
from reserveapi.db import models
from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.functional import base
from tests.functional.api import reservation_base as rbase
from tests.functional.mirror.base import parse_timestamp

HOST = rbase.HOST
NEW_HOST = rbase.NEW_HOST
sample = examples.sample


class TestUpdateReservations(rbase.ReservationTestCase):
    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        self.nodes(inventory.node('node-gold-1'), inventory.node('node-gold-2',
                                                                 memory_mb=9000))
        self.config(subset_size=1, group='matcher')
        body = sample('reservations/create-request.json')
        response = self.request('POST', '/v1/reservations', body)
        self.reservation = self.assertReserved(response, 'node-gold-1')
        self.path = '/v1/reservations/' + self.reservation['uuid']
        self.body = body

    def patch(self, operations, headers=None):
        return self.request('PATCH', self.path, operations, headers=headers)

    def test_takeover_by_another_host(self):
        response = self.patch(sample('reservations/takeover-request.json'))
        self.assertEqual(200, response.status_int, response.text)
        self.assertMatchesSample(response.json,
                                 'reservations/takeover-response.json')
        self.assertEqual(NEW_HOST, response.json['host'])
        self.assertEqual('reserved', response.json['state'])
        self.assertEqual(NEW_HOST, self.node('node-gold-1')['reservation'][
            'host'])
        # Nova's retry from the new host is idempotent; the old host's is
        # now the conflict.
        again = self.request('POST', '/v1/reservations',
                             dict(self.body, host=NEW_HOST))
        self.assertEqual(200, again.status_int, again.text)
        self.assertEqual(self.reservation['uuid'], again.json['uuid'])
        self.assertError(self.request('POST', '/v1/reservations', self.body),
                         409, 'reserveapi.instance_reserved')
        # The test op guards against a concurrent takeover.
        response = self.patch([
            {'op': 'test', 'path': '/host', 'value': HOST},
            {'op': 'replace', 'path': '/host', 'value': 'compute-9'}])
        self.assertError(response, 409, 'reserveapi.conflict')
        self.assertEqual(NEW_HOST, self.request('GET', self.path).json[
            'host'])

    def test_confirm_deployed(self):
        response = self.patch(sample('reservations/update-request.json'))
        self.assertEqual(200, response.status_int, response.text)
        self.assertMatchesSample(response.json,
                                 'reservations/update-response.json')
        self.assertEqual('active', response.json['state'])
        self.assertIsNotNone(response.json['updated_at'])
        self.assertEqual('active', self.node('node-gold-1')['reservation'][
            'state'])
        # Idempotent: already active.
        self.assertEqual(200, self.patch(sample(
            'reservations/update-request.json')).status_int)
        back = self.patch([{'op': 'replace', 'path': '/state',
                            'value': 'reserved'}])
        self.assertError(back, 409, 'reserveapi.invalid_state')
        expired = self.patch([{'op': 'replace', 'path': '/state',
                               'value': 'expired'}])
        self.assertError(expired, 409, 'reserveapi.invalid_state')
        self.assertEqual('active', self.request('GET', self.path).json[
            'state'])

    def test_a_change_made_meanwhile_by_another_request(self):
        """Read, then changed by a concurrent request before the write:
        the same change (a retry whose first answer was lost) is done,
        another change is a conflict."""
        stale = reservations.get_reservation(self.reservation['uuid'])
        reservations.update(stale, {'state': 'active'})
        again = reservations.update(stale, {'state': 'active'})
        self.assertEqual('active', again.state)
        reservations.update(
            reservations.get_reservation(self.reservation['uuid']),
            {'host': NEW_HOST})
        self.assertRaises(exception.Conflict, reservations.update,
                          stale, {'host': 'compute-9'})
        now = reservations.get_reservation(self.reservation['uuid'])
        self.assertEqual((NEW_HOST, 'active'), (now.host, now.state))

    def test_both_in_one_patch(self):
        response = self.patch([
            {'op': 'replace', 'path': '/host', 'value': NEW_HOST},
            {'op': 'replace', 'path': '/state', 'value': 'active'}])
        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual((NEW_HOST, 'active'),
                         (response.json['host'], response.json['state']))

    def test_bad_patches_are_400_and_change_nothing(self):
        bad = [
            [{'op': 'replace', 'path': '/node_uuid',
              'value': str(uuid.uuid4())}],
            [{'op': 'replace', 'path': '/project_id', 'value': 'x'}],
            [{'op': 'add', 'path': '/host', 'value': NEW_HOST}],
            [{'op': 'remove', 'path': '/host'}],
            [{'op': 'replace', 'path': '/host'}],
            [{'op': 'replace', 'path': '/host', 'value': ''}],
            [{'op': 'replace', 'path': '/host', 'value': 7}],
            [{'op': 'replace', 'path': '/state', 'value': 'bogus'}],
            [{'op': 'replace', 'path': '/state', 'value': 'active'},
             {'op': 'replace', 'path': '/uuid', 'value': 'x'}],
            [],
            {'host': NEW_HOST},
            ['replace'],
        ]
        for operations in bad:
            response = self.patch(operations)
            self.assertError(response, 400, 'reserveapi.invalid')
        response = self.app.patch(self.path, '[{"op": ', headers=dict(
            self.admin_headers, **{'Content-Type': 'application/json'}),
            status='*')
        self.assertError(response, 400, 'reserveapi.invalid')
        self.assertEqual(self.reservation,
                         self.request('GET', self.path).json)

    def test_expiry(self):
        self.config(reserved_ttl=600, group='reservations')
        active = self.reserve()
        self.assertEqual(201, active.status_int)
        self.assertEqual(200, self.request(
            'PATCH', '/v1/reservations/' + active.json['uuid'],
            [{'op': 'replace', 'path': '/state', 'value': 'active'}]
        ).status_int)
        shown = self.request('GET', self.path).json
        self.assertIsNotNone(shown['expires_at'])
        now = timeutils.utcnow()
        self.assertEqual(0, reservations.expire(
            now=now + datetime.timedelta(seconds=590)))
        self.assertEqual(1, reservations.expire(
            now=now + datetime.timedelta(seconds=610)))
        expired = self.request('GET', self.path).json
        self.assertEqual('expired', expired['state'])
        self.assertIsNotNone(expired['expires_at'])
        self.assertIsNone(self.node('node-gold-1')['reservation'])
        # Active ones never expire.
        self.assertEqual(0, reservations.expire(
            now=now + datetime.timedelta(days=365)))
        self.assertEqual('active', self.request(
            'GET', '/v1/reservations/' + active.json['uuid']).json['state'])
        # The node is free: another instance gets it; the host that held
        # the expired one sees why its reservation is gone, and may not
        # revive it.
        self.assertReserved(self.reserve(), 'node-gold-1')
        self.assertError(self.patch(sample(
            'reservations/update-request.json')), 409,
            'reserveapi.invalid_state')
        error = self.assertError(self.patch([{'op': 'replace',
                                              'path': '/host',
                                              'value': NEW_HOST}]), 409,
                                 'reserveapi.invalid_state')
        self.assertIn('has expired', error['detail'])
        self.assertEqual(['expired'], [item['state'] for item in
                                       self.list_reservations(
                                           '?state=expired')])
        # Deleting an expired one is allowed and final.
        self.assertEqual(204, self.request('DELETE', self.path).status_int)
        self.assertError(self.request('GET', self.path), 404,
                         'reserveapi.reservation_not_found')

    def _age(self, reservation_uuid, seconds):
        """Pretend the reservation was made ``seconds`` ago."""
        with self.engine.begin() as connection:
            connection.execute(
                sa.update(models.Reservation)
                .where(models.Reservation.uuid == reservation_uuid)
                .values(created_at=timeutils.utcnow() -
                        datetime.timedelta(seconds=seconds)))

    def test_expire_reservations_command(self):
        self.config(reserved_ttl=0, group='reservations')
        code, out, _err = inventory.manage(self, 'expire-reservations')
        self.assertEqual(0, code)
        self.assertIn('never expire', out)
        self.config(reserved_ttl=600, group='reservations')
        fresh = self.reserve()
        self.assertEqual(201, fresh.status_int)
        self._age(self.reservation['uuid'], 601)
        code, out, _err = inventory.manage(self, 'expire-reservations')
        self.assertEqual(0, code)
        self.assertIn('Expired 1 reservations', out)
        self.assertEqual('expired',
                         self.request('GET', self.path).json['state'])
        self.assertEqual('reserved', self.request(
            'GET', '/v1/reservations/' + fresh.json['uuid']).json['state'])
        self.assertIsNone(self.node('node-gold-1')['reservation'])
        code, out, _err = inventory.manage(self, 'expire-reservations')
        self.assertEqual((0, 'Expired 0 reservations.\n'), (code, out))

    def test_expiry_on_by_default(self):
        created = parse_timestamp(self.reservation['created_at'])
        self.assertEqual(created + datetime.timedelta(hours=2),
                         parse_timestamp(self.reservation['expires_at']))
        self.assertEqual(0, reservations.expire(
            now=created + datetime.timedelta(seconds=7199)))
        self.assertEqual(1, reservations.expire(
            now=created + datetime.timedelta(seconds=7201)))

    def test_expiry_off(self):
        self.config(reserved_ttl=0, group='reservations')
        self.assertIsNone(self.request('GET', self.path).json['expires_at'])
        self.assertEqual(0, reservations.expire(
            now=timeutils.utcnow() + datetime.timedelta(days=365)))
        self.assertEqual('reserved',
                         self.request('GET', self.path).json['state'])
