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

"""A hold is rendered once: the API's body and its events' payloads are
the same rendering, the API's with what it pinned and its links after
it (from microversion 1.6; before, without what 1.6 added)."""

import dataclasses
import datetime

import fixtures
from oslo_config import fixture as config_fixture
from oslotest import base

from reserveapi import conf
from reserveapi import notifications
from reserveapi import rendering
from reserveapi.api import microversion
from reserveapi.api.controllers.v1 import holds as holds_api
from reserveapi.db import records
from reserveapi.holds import admission

HOLD = records.HoldRecord(
    uuid='3f6b2d8e-1c4a-4e7f-9b5d-6a2c8e0f1d3b',
    project_id='7c3e1f5a9b2d4e6f8a0b1c2d3e4f5a6b', amount=2,
    request_spec={'vcpus': 8, 'extra_specs': {
        'resources:CUSTOM_BAREMETAL_GOLD': '1'}},
    resource_class='CUSTOM_BAREMETAL_GOLD', shard=None, conductor_group='',
    start_at=datetime.datetime(2126, 3, 9, 8),
    end_at=datetime.datetime(2126, 3, 13, 18), padding=3600,
    busy_from=datetime.datetime(2126, 3, 9, 7),
    busy_until=datetime.datetime(2126, 3, 13, 19),
    cancelled_at=None,
    created_at=datetime.datetime(2126, 3, 2, 10, 15, 4, 218364),
    updated_at=None)
USAGE = {HOLD.uuid: admission.Usage(pinned=1, in_use=1)}
FIELDS_OF_1_5 = [
    ('uuid', HOLD.uuid),
    ('project_id', HOLD.project_id),
    ('amount', 2),
    ('request_spec', HOLD.request_spec),
    ('resource_class', 'CUSTOM_BAREMETAL_GOLD'),
    ('shard', None),
    ('conductor_group', ''),
    ('start', '2126-03-09T08:00:00+00:00'),
    ('end', '2126-03-13T18:00:00+00:00'),
    ('padding', 3600),
    ('state', 'pending'),
    ('created_at', '2126-03-02T10:15:04.218364+00:00'),
    ('updated_at', None),
    ('cancelled_at', None)]
LINKS = ('links', [{'href': 'https://reserve.example/v1/holds/' + HOLD.uuid,
                    'rel': 'self'}])


class OneHoldRenderingTest(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        config = self.useFixture(config_fixture.Config(conf.CONF))
        config.config(public_endpoint='https://reserve.example', group='api')
        self.events = []
        self.useFixture(fixtures.MockPatchObject(
            notifications, '_notify',
            lambda priority, event, payload: self.events.append(
                (priority, event, payload))))
        self.renderer = self.useFixture(fixtures.MockPatchObject(
            rendering, 'hold', wraps=rendering.hold)).mock

    def test_the_api_body(self):
        self.assertEqual(
            FIELDS_OF_1_5 + [
                ('at_end', 'keep'),
                ('reclaimed', 0),
                ('shortfall', 0),
                ('flavor_id', None),
                ('boot_resource_class',
                 'CUSTOM_HOLD_3F6B2D8E1C4A4E7F9B5D6A2C8E0F1D3B'),
                ('pinned', 1),
                ('in_use', 1),
                LINKS],
            list(holds_api.render(HOLD, microversion.PINS, USAGE).items()))

    def test_the_api_body_before_1_6(self):
        self.assertEqual(
            FIELDS_OF_1_5 + [LINKS],
            list(holds_api.render(HOLD, microversion.HOLDS).items()))
        # States new in 1.6 are shown as the state 1.5 knows.
        for fields, state in (({'shortfall': 1}, 'degraded'),
                              ({'reclaimed': 1}, 'reclaimed')):
            running = dataclasses.replace(
                HOLD, start_at=datetime.datetime(2000, 1, 1), **fields)
            self.assertEqual(state, holds_api.render(
                running, microversion.PINS, USAGE)['state'])
            self.assertEqual('active', holds_api.render(
                running, microversion.HOLDS)['state'])

    def test_both_come_from_the_one_renderer(self):
        body = holds_api.render(HOLD, microversion.PINS, USAGE)
        longer = dataclasses.replace(
            HOLD, amount=3, end_at=datetime.datetime(2126, 3, 14, 18),
            updated_at=datetime.datetime(2126, 3, 3, 9, 2, 41, 730112))
        cancelled = dataclasses.replace(
            longer, cancelled_at=datetime.datetime(2126, 3, 4, 12))
        notifications.hold_created(HOLD, admission.state(HOLD))
        notifications.hold_updated(HOLD, longer, admission.state(longer))
        notifications.hold_cancelled(cancelled, admission.state(cancelled))
        self.assertEqual(4, self.renderer.call_count)
        self.assertEqual([('info', 'hold.create'), ('info', 'hold.update'),
                          ('info', 'hold.cancel')],
                         [event[:2] for event in self.events])
        created, updated, cancelled_payload = (
            event[2] for event in self.events)
        # An event has neither what the hold pinned nor links; in the
        # API's order otherwise.
        self.assertEqual(list(created) + ['boot_resource_class', 'pinned',
                                          'in_use', 'links'], list(body))
        self.assertEqual({key: body[key] for key in created}, created)
        self.assertEqual(
            dict(created, amount=3, end='2126-03-14T18:00:00+00:00',
                 updated_at='2126-03-03T09:02:41.730112+00:00',
                 previous_end='2126-03-13T18:00:00+00:00',
                 previous_amount=2),
            updated)
        self.assertEqual(list(created) + ['previous_end', 'previous_amount'],
                         list(updated))
        self.assertEqual(
            dict(created, amount=3, end='2126-03-14T18:00:00+00:00',
                 updated_at='2126-03-03T09:02:41.730112+00:00',
                 state='cancelled',
                 cancelled_at='2126-03-04T12:00:00+00:00'),
            cancelled_payload)
