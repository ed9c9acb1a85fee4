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

"""A reservation is rendered once: the API's body and an event's payload
are the same rendering, the API's with its own fields after it."""

import dataclasses
import datetime

import fixtures
from oslo_config import fixture as config_fixture
from oslotest import base

from reserveapi import conf
from reserveapi import notifications
from reserveapi import rendering
from reserveapi.api.controllers.v1 import reservations as reservations_api
from reserveapi.db import records

RESERVATION = records.ReservationRecord(
    uuid='f4566034-136a-4087-bb8d-f0af26a9d4a1',
    instance_uuid='30d50d6e-0b92-43d4-be84-3c74879d2245', host='compute-7',
    project_id='c0ffee00c0ffee00c0ffee00c0ffee00', state='reserved',
    node_id=7, node_uuid='20e221b3-aeb2-5aef-a8b5-fd831cf1155a',
    node_name='node-gold-2', resource_class='CUSTOM_BAREMETAL_GOLD',
    created_at=datetime.datetime(2026, 12, 1, 22, 28, 42, 288241),
    updated_at=None, expires_at=None)


class OneRenderingTest(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        config = self.useFixture(config_fixture.Config(conf.CONF))
        config.config(public_endpoint='https://reserve.example', group='api')
        config.config(reserved_ttl=3600, group='reservations')
        self.payloads = []
        self.useFixture(fixtures.MockPatchObject(
            notifications, '_notify',
            lambda priority, event, payload: self.payloads.append(payload)))
        self.renderer = self.useFixture(fixtures.MockPatchObject(
            rendering, 'reservation', wraps=rendering.reservation)).mock

    def test_the_api_body(self):
        self.assertEqual(
            [('uuid', RESERVATION.uuid),
             ('instance_uuid', RESERVATION.instance_uuid),
             ('host', 'compute-7'),
             ('project_id', RESERVATION.project_id),
             ('node_uuid', RESERVATION.node_uuid),
             ('node_name', 'node-gold-2'),
             ('resource_class', 'CUSTOM_BAREMETAL_GOLD'),
             ('state', 'reserved'),
             ('created_at', '2026-12-01T22:28:42.288241+00:00'),
             ('updated_at', None),
             ('expires_at', '2026-12-01T23:28:42.288241+00:00'),
             ('links', [{'href': 'https://reserve.example/v1/reservations/'
                                 + RESERVATION.uuid, 'rel': 'self'}])],
            list(reservations_api.render(RESERVATION).items()))

    def test_both_come_from_the_one_renderer(self):
        body = reservations_api.render(RESERVATION)
        notifications.reservation_created(RESERVATION)
        notifications.reservation_updated(
            RESERVATION, dataclasses.replace(RESERVATION, host='compute-3'))
        self.assertEqual(3, self.renderer.call_count)
        created, taken_over = self.payloads
        # An event has no links (the worker and reserveapi-manage send
        # events too, outside any request) and no expires_at (but the
        # expiry's); in the API's order otherwise.
        self.assertEqual(list(body)[:-2], list(created))
        self.assertEqual({key: body[key] for key in created}, created)
        self.assertEqual(dict(created, host='compute-3',
                              previous_host='compute-7'), taken_over)
