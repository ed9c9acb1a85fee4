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

"""reserveapi_hold_admissions_total: every create, and every update
that grows a hold, counted once under its outcome; what is no
admission (a shrink, a hold gone, the database down) not at all. The
database is mocked: the holds' outcomes themselves are proven in
tests/functional/test_holds_admission.py."""

import datetime

import fixtures
from keystoneauth1 import exceptions as ks_exc
from oslo_limit import fixture as limit_fixture
import prometheus_client

from reserveapi.common import exception
from reserveapi.common import metrics
from reserveapi.db import records
from reserveapi.holds import admission
from tests import base

NAME = 'reserveapi_hold_admissions_total'
GOLD = 'CUSTOM_BAREMETAL_GOLD'
SPEC = {'memory_mb': 1024, 'vcpus': 1, 'root_gb': 10,
        'extra_specs': {'resources:%s' % GOLD: '1'}}
HOUR = datetime.timedelta(hours=1)


def counted():
    """``{(action, outcome): value}`` of the counter now."""
    return {(action, outcome): prometheus_client.REGISTRY.get_sample_value(
        NAME, {'action': action, 'outcome': outcome})
        for action in metrics.HOLD_ACTIONS
        for outcome in metrics.HOLD_OUTCOMES}


class TestOutcomeOfAnError(base.TestCase):

    def test_each_refusal_and_what_is_no_admission(self):
        for error, outcome in (
                (exception.HoldNotAdmitted(at='t', wanted=2, fit=1),
                 'not_admitted'),
                (exception.HoldQuotaExceeded(project='p1', limit=1, at='t',
                                             wanted=2), 'over_quota'),
                (exception.InvalidHold(reason='backwards'), 'invalid'),
                (exception.InvalidRequestSpec(key='k', reason='r'),
                 'invalid'),
                (exception.Invalid(reason='r'), 'invalid'),
                (exception.HoldNotFound(hold='h'), None),
                (exception.Conflict(reason='cancelled'), None),
                (exception.DatabaseUnavailable(), None),
                (exception.KeystoneUnavailable(reason='down'), None),
                (RuntimeError('bug'), None)):
            self.assertEqual(outcome, metrics.hold_admission_outcome(error),
                             error)

    def test_every_series_exists_before_the_first_admission(self):
        self.assertNotIn(None, counted().values())


class TestCounted(base.TestCase):

    def setUp(self):
        super().setUp()
        self.now = datetime.datetime.now(datetime.timezone.utc)
        self.live = []
        self.useFixture(fixtures.MockPatchObject(
            admission.db_holds, 'live_holds',
            side_effect=lambda now: (0, list(self.live))))
        # As db/holds does: the limits and the timeline are checked in
        # the turn (the timeline's answer is the side effects below).
        self.useFixture(fixtures.MockPatchObject(admission, '_admit'))
        self.stored = self.useFixture(fixtures.MockPatchObject(
            admission.db_holds, 'create_hold',
            side_effect=lambda values, admit: (
                admit(), self.record(**values))[1])).mock
        self.updated = self.useFixture(fixtures.MockPatchObject(
            admission.db_holds, 'update_hold',
            side_effect=lambda uuid, values, admit: (
                admit(), self.record(
                    **dict(vars(self.current), **values)))[1])).mock
        self.useFixture(fixtures.MockPatchObject(
            admission.db_holds, 'get_hold',
            side_effect=lambda uuid: self.current))
        for event in ('hold_created', 'hold_updated'):
            self.useFixture(fixtures.MockPatch(
                'reserveapi.notifications.' + event))
        self.before = counted()

    def record(self, **values):
        values.setdefault('cancelled_at', None)
        values.setdefault('created_at', None)
        values.setdefault('updated_at', None)
        return records.HoldRecord(**values)

    def counts(self):
        """What changed since setUp."""
        return {key: value - self.before[key]
                for key, value in counted().items()
                if value != self.before[key]}

    def create(self, amount=2, start=HOUR, end=3 * HOUR, spec=SPEC):
        return admission.create_hold('p1', amount, spec, self.now + start,
                                     self.now + end)

    def test_created(self):
        self.create()
        self.assertEqual({('create', 'admitted'): 1}, self.counts())

    def test_not_admitted(self):
        self.stored.side_effect = exception.HoldNotAdmitted(
            at='t', wanted=3, fit=2)
        self.assertRaises(exception.HoldNotAdmitted, self.create)
        self.assertEqual({('create', 'not_admitted'): 1}, self.counts())

    def test_over_quota(self):
        self.config(max_amount_per_project=1, group='holds')
        self.assertRaises(exception.HoldQuotaExceeded, self.create)
        self.assertEqual({('create', 'over_quota'): 1}, self.counts())

    def test_invalid_window_and_invalid_spec(self):
        self.assertRaises(exception.InvalidHold, self.create,
                          start=3 * HOUR, end=HOUR)
        bad = dict(SPEC, extra_specs={'resources:%s' % GOLD: '2'})
        self.assertRaises(exception.InvalidRequestSpec, self.create,
                          spec=bad)
        self.assertEqual({('create', 'invalid'): 2}, self.counts())
        # The window is refused in the turn, the spec before it.
        self.assertEqual(1, self.stored.call_count)

    def test_the_database_down_is_no_admission(self):
        self.stored.side_effect = exception.DatabaseUnavailable()
        self.assertRaises(exception.DatabaseUnavailable, self.create)
        self.assertEqual({}, self.counts())

    def test_keystone_down_is_no_admission_and_takes_no_turn(self):
        # Asked before the turn, which every admission and reservation
        # waits for: a Keystone that hangs keeps only this request.
        keystone = self.useFixture(limit_fixture.LimitFixture({}, {}))
        keystone.mock_conn.limits.side_effect = ks_exc.ConnectFailure(
            'refused')
        self.config(endpoint_id='reserveapi-public', group='oslo_limit')
        self.config(unified_limits=True, group='holds')
        self.assertRaises(exception.KeystoneUnavailable, self.create)
        self.assertEqual({}, self.counts())
        self.stored.assert_not_called()

    def test_updates_counted_only_when_they_grow(self):
        self.current = self.create()
        self.before = counted()
        admission.update_hold(self.current.uuid, amount=3)
        admission.update_hold(self.current.uuid,
                              end=self.now + 4 * HOUR)
        self.assertEqual({('update', 'admitted'): 2}, self.counts())
        # Shrinking always fits: no admission.
        admission.update_hold(self.current.uuid, amount=1)
        admission.update_hold(self.current.uuid, end=self.now + 2 * HOUR)
        self.assertEqual({('update', 'admitted'): 2}, self.counts())

    def test_update_refusals(self):
        self.current = self.create()
        self.before = counted()
        faithful = self.updated.side_effect
        self.updated.side_effect = exception.HoldNotAdmitted(
            at='t', wanted=3, fit=2)
        self.assertRaises(exception.HoldNotAdmitted, admission.update_hold,
                          self.current.uuid, amount=3)
        self.updated.side_effect = faithful
        self.config(max_amount_per_project=2, group='holds')
        self.assertRaises(exception.HoldQuotaExceeded, admission.update_hold,
                          self.current.uuid, amount=3)
        self.config(max_length=3 * 3600, group='holds')
        self.assertRaises(exception.InvalidHold, admission.update_hold,
                          self.current.uuid, end=self.now + 10 * HOUR)
        self.assertEqual({('update', 'not_admitted'): 1,
                          ('update', 'over_quota'): 1,
                          ('update', 'invalid'): 1}, self.counts())

    def test_a_shrink_refused_and_a_hold_gone_are_no_admission(self):
        self.current = self.create()
        self.before = counted()
        self.updated.side_effect = exception.Conflict(reason='cancelled')
        self.assertRaises(exception.Conflict, admission.update_hold,
                          self.current.uuid, amount=1)
        self.assertRaises(exception.Conflict, admission.update_hold,
                          self.current.uuid, amount=3)
        self.assertEqual({}, self.counts())
