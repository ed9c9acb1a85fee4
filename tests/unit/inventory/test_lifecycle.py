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

"""The claim lifecycle against a fake Ironic and a fake database: every
row of the failure table, met by a new reservation, by a retried
request's and by the worker's repair, and the ends of a reservation by
source; and the lifecycle as the only door to ending one.

The expected steps are written out here, not derived from
``lifecycle.FAILURES``: a change to the table shows up as a change here.
One test derives them from the table too, so that no caller's outcome
departs from its row.
"""

import ast
import dataclasses
import datetime
import inspect
import logging
import pathlib

import fixtures
from oslo_utils import timeutils

from reserveapi import notifications
from reserveapi.common import exception
from reserveapi.common import states
from reserveapi.db import inventory as db_inventory
from reserveapi.db import records
from reserveapi.db import reservations as db_reservations
from reserveapi.inventory import claims
from reserveapi.inventory import lifecycle
from reserveapi.inventory import sources as inventory_sources
from reserveapi.inventory import sync as inventory_sync
from tests import base

NODE = '1be26c0b-03f2-4d2d-ae87-c02d7a33c123'
INSTANCE = 'a2a8ee80-5b41-4ab3-9d67-2b9b6ec4a1e1'
ELSEWHERE = '6e1b7f0c-8a4f-4f57-a1b9-4c1b9bcd0d41'

ERRORS = {
    lifecycle.Kind.REFUSED: lambda: exception.NodeTaken(
        'claimed by instance %s' % ELSEWHERE),
    lifecycle.Kind.REFUSED_BUT_OURS: lambda: exception.NodeTaken(
        'provision state is cleaning', ours=True),
    lifecycle.Kind.UNREACHABLE_BEFORE_SENDING:
        lambda: exception.IronicUnavailable(reason='connection refused',
                                            delivered=False),
    lifecycle.Kind.UNREACHABLE_AFTER_SENDING:
        lambda: exception.IronicUnavailable(reason='read timed out'),
    lifecycle.Kind.DEPLOYED_ELSEWHERE: lambda: exception.InstanceDeployed(
        instance_uuid=INSTANCE, node=ELSEWHERE, state='active'),
    lifecycle.Kind.BEING_CLEARED: lambda: exception.ClaimBeingCleared(
        instance_uuid=INSTANCE, node=ELSEWHERE),
    lifecycle.Kind.INTERRUPTED: lambda: exception.ClaimNotCleared(
        reason='node locked'),
}
"""What Ironic (through inventory.claims) raises for each kind."""

# Steps, as the fakes record them.
ROW_FINISHED = 'clearing row finished'
ROW_POSTPONED = 'clearing row postponed'
CLEARED = 'claim cleared'
OUTAGE = 'outage noted'
ANNOUNCED = 'refusal announced'
LOGGED = 'end logged'


def ended(stale, clear):
    return 'reservation ended (stale %s, clear %s)' % (stale, clear)


RAISES, TRIES_NEXT, DONE = 'raises', 'tries the next node', 'done'

NEW = {
    lifecycle.Kind.REFUSED:
        ([ended(True, 'never'), ANNOUNCED], TRIES_NEXT),
    lifecycle.Kind.REFUSED_BUT_OURS:
        ([ended(True, 'now'), ANNOUNCED, CLEARED], TRIES_NEXT),
    lifecycle.Kind.UNREACHABLE_BEFORE_SENDING:
        ([ended(False, 'never'), OUTAGE], RAISES),
    lifecycle.Kind.UNREACHABLE_AFTER_SENDING:
        ([ended(True, 'later'), OUTAGE], RAISES),
    lifecycle.Kind.DEPLOYED_ELSEWHERE:
        ([ended(False, 'never')], RAISES),
    lifecycle.Kind.BEING_CLEARED:
        ([ended(False, 'never')], RAISES),
    lifecycle.Kind.INTERRUPTED:
        ([ended(True, 'later')], RAISES),
}
"""A reservation just made: never left behind."""

RETRIED = {
    lifecycle.Kind.REFUSED:
        ([ROW_FINISHED, ended(True, 'never'), ANNOUNCED], TRIES_NEXT),
    lifecycle.Kind.REFUSED_BUT_OURS:
        ([ended(True, 'now'), ANNOUNCED, CLEARED], TRIES_NEXT),
    lifecycle.Kind.UNREACHABLE_BEFORE_SENDING:
        ([ROW_FINISHED, OUTAGE], RAISES),
    lifecycle.Kind.UNREACHABLE_AFTER_SENDING:
        ([ROW_POSTPONED, OUTAGE], RAISES),
    lifecycle.Kind.DEPLOYED_ELSEWHERE:
        ([ROW_FINISHED, ended(False, 'never')], RAISES),
    lifecycle.Kind.BEING_CLEARED:
        ([ROW_FINISHED], RAISES),
    lifecycle.Kind.INTERRUPTED:
        ([ROW_POSTPONED], RAISES),
}
"""A retried request's reservation: kept unless Ironic will not have its
node; its clearing row tells a worker what may be left to clear."""

REPAIRED = {
    lifecycle.Kind.REFUSED:
        ([ROW_FINISHED, ended(True, 'never'), LOGGED], DONE),
    lifecycle.Kind.REFUSED_BUT_OURS:
        ([ended(True, 'now'), LOGGED, CLEARED], DONE),
    lifecycle.Kind.UNREACHABLE_BEFORE_SENDING:
        ([ROW_FINISHED, OUTAGE], RAISES),
    lifecycle.Kind.UNREACHABLE_AFTER_SENDING:
        ([ROW_POSTPONED, OUTAGE], RAISES),
    lifecycle.Kind.DEPLOYED_ELSEWHERE:
        ([ROW_FINISHED, ended(False, 'never'), LOGGED], DONE),
    lifecycle.Kind.BEING_CLEARED:
        ([ROW_FINISHED], DONE),
    lifecycle.Kind.INTERRUPTED:
        ([ROW_POSTPONED], RAISES),
}
"""The worker's repair: as a retry, but nothing is answered: an end is
logged, another process's clear waits for the next pass."""


def reservation():
    return records.ReservationRecord(
        uuid='5ad0e2d1-3cf5-4f1c-9a0e-5e2d1c0e9b11', instance_uuid=INSTANCE,
        host='compute-1', project_id='p', state=states.RESERVED, node_id=1,
        node_uuid=NODE, node_name='node-1', resource_class='GOLD',
        created_at=timeutils.utcnow(), updated_at=None, expires_at=None)


class FakeIronic:
    """Raises ``error`` at every claim, if any."""

    location = 'http://ironic.example.com:6385'

    def __init__(self, error=None):
        self.error = error

    def claim(self, node_uuid, instance_uuid, info):
        if self.error is not None:
            raise self.error
        return {'uuid': node_uuid, 'instance_uuid': instance_uuid}


class StepsOfLog(logging.Handler):
    """An end of a reservation, logged, as a step."""

    def __init__(self, steps):
        super().__init__(logging.ERROR)
        self.steps = steps

    def emit(self, record):
        if record.getMessage().startswith('Ended reservation'):
            self.steps.append(LOGGED)


class LifecycleTestCase(base.TestCase):
    """The database, the clear and the notifications as steps."""

    def setUp(self):
        super().setUp()
        self.steps = []
        self.endings = []
        self.live = True
        self.guarded = 0
        self.config(source='ironic', group='inventory')
        self.log = self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        ends_logged = StepsOfLog(self.steps)
        lifecycle.LOG.logger.addHandler(ends_logged)
        self.addCleanup(lifecycle.LOG.logger.removeHandler, ends_logged)
        for module, name, fake in (
                (db_reservations, 'undo_reservation', self.end),
                (db_reservations, 'delete_reservation', self.end),
                (db_reservations, 'delete_reservation_by_uuid',
                 self.end_by_uuid),
                (db_reservations, 'expire_reservations', self.expire),
                (db_reservations, 'get_live_reservation_for_instance',
                 self.live_reservation),
                (db_inventory, 'guard_ironic_claim', self.guard),
                (db_inventory, 'renew_claim_to_clear', lambda *a: True),
                (db_inventory, 'finish_claim_to_clear',
                 lambda *args: self.steps.append(ROW_FINISHED)),
                (db_inventory, 'postpone_claim_to_clear', self.postpone),
                (db_inventory, 'request_claim_to_clear',
                 self.request_clear),
                (claims, 'clear_quietly',
                 lambda *args: self.steps.append(CLEARED)),
                (inventory_sync, 'note_outage',
                 lambda error: self.steps.append(OUTAGE)),
                (notifications, 'ironic_claim_conflict',
                 lambda *args: self.steps.append(ANNOUNCED))):
            self.useFixture(fixtures.MockPatchObject(module, name, fake))

    @staticmethod
    def clear_of(request):
        if request is None:
            return 'never'
        if request.holder is not None:
            return 'now'
        if request.delay == claims.UNCERTAIN_DELAY:
            return 'later'
        return 'later %gs' % request.delay

    def end(self, record, ending):
        self.assertIsInstance(ending, lifecycle.Ending)
        self.endings.append(ending)
        self.steps.append(ended(ending.stale,
                                self.clear_of(ending.clear_in_ironic)))
        return True

    def end_by_uuid(self, uuid, check, ending):
        record = reservation()
        check(record)
        self.end(record, ending)
        return record

    def expire(self, older_than, ending):
        self.end(None, ending)
        return []

    def live_reservation(self, instance_uuid):
        return reservation() if self.live else None

    def guard(self, *args):
        self.guarded += 1
        return 0

    def postpone(self, node_uuid, instance_uuid, holder, error,
                 next_attempt_at):
        self.assertGreaterEqual(
            next_attempt_at, timeutils.utcnow() + datetime.timedelta(
                seconds=claims.UNCERTAIN_DELAY - 1))
        self.assertTrue(error)
        self.steps.append(ROW_POSTPONED)

    def request_clear(self, node_uuid, instance_uuid, request):
        self.steps.append('clear asked (%s)' % self.clear_of(request))


class TestFailureTable(LifecycleTestCase):

    def outcome(self, attempt, error):
        """What ``attempt`` did when Ironic raised ``error``."""
        try:
            result = attempt(FakeIronic(error))
        except type(error) as raised:
            self.assertIs(error, raised)
            return RAISES
        return {False: TRIES_NEXT, None: DONE}[result]

    def check(self, expected, attempt):
        self.assertEqual(set(lifecycle.Kind), set(expected))
        self.assertEqual(set(lifecycle.Kind), set(lifecycle.FAILURES))
        for kind, steps_and_outcome in expected.items():
            del self.steps[:]
            error = ERRORS[kind]()
            self.assertEqual(kind, lifecycle.kind_of(error))
            outcome = self.outcome(attempt, error)
            self.assertEqual(steps_and_outcome, (self.steps, outcome), kind)

    def test_a_new_reservation(self):
        self.check(NEW, lambda source: lifecycle.claim_new(
            source, reservation(), {}))
        self.assertEqual(0, self.guarded)

    def test_a_retried_request(self):
        self.check(RETRIED, lambda source: lifecycle.claim_again(
            source, reservation(), {}))
        self.assertEqual(len(RETRIED), self.guarded)

    def test_the_repair(self):
        self.check(REPAIRED, lambda source: lifecycle.reclaim(
            source, reservation()))
        self.assertEqual(len(REPAIRED), self.guarded)

    def test_every_caller_ends_a_reservation_as_its_row_says(self):
        """Derived from FAILURES: a new reservation always ends, one
        others know only when the row says END, and the Ending is the
        row's whoever meets the failure."""
        callers = {
            'new': (False, lambda source: lifecycle.claim_new(
                source, reservation(), {})),
            'retried': (True, lambda source: lifecycle.claim_again(
                source, reservation(), {})),
            'repair': (True, lambda source: lifecycle.reclaim(
                source, reservation()))}
        for caller, (known, attempt) in callers.items():
            for kind, failure in lifecycle.FAILURES.items():
                del self.endings[:]
                error = ERRORS[kind]()
                try:
                    attempt(FakeIronic(error))
                except type(error) as raised:
                    self.assertIs(error, raised)
                ends = failure.reservation is lifecycle.END or not known
                self.assertEqual(
                    [(failure.stale, failure.clear.value)] if ends else [],
                    [(ending.stale, self.clear_of(ending.clear_in_ironic))
                     for ending in self.endings], (caller, kind))

    def test_any_other_error_may_have_sent_the_claim(self):
        self.assertEqual(lifecycle.Kind.INTERRUPTED,
                         lifecycle.kind_of(KeyboardInterrupt()))
        self.assertEqual(lifecycle.Kind.INTERRUPTED, lifecycle.kind_of(
            exception.DatabaseUnavailable()))


class TestClaims(LifecycleTestCase):

    def test_a_new_reservation_held(self):
        self.assertTrue(lifecycle.claim_new(FakeIronic(), reservation(), {}))
        self.assertEqual([], self.steps)

    def test_a_reservation_ended_while_claiming_has_its_claim_cleared(self):
        self.live = False
        self.assertFalse(lifecycle.claim_new(FakeIronic(), reservation(),
                                             {}))
        self.assertEqual(['clear asked (now)', CLEARED], self.steps)
        del self.steps[:]
        self.assertFalse(lifecycle.claim_again(FakeIronic(), reservation(),
                                               {}))
        self.assertEqual(['clear asked (now)', CLEARED], self.steps)

    def test_a_retried_claim_held_finishes_its_row(self):
        self.assertTrue(lifecycle.claim_again(FakeIronic(), reservation(),
                                              {}))
        self.assertEqual([ROW_FINISHED], self.steps)

    def test_a_claim_another_process_guards_is_not_sent(self):
        self.useFixture(fixtures.MockPatchObject(
            db_inventory, 'guard_ironic_claim', return_value=None))
        self.assertRaises(exception.ClaimBeingCleared,
                          lifecycle.claim_again,
                          FakeIronic(exception.NodeTaken('never asked')),
                          reservation(), {})
        lifecycle.reclaim(FakeIronic(exception.NodeTaken('never asked')),
                          reservation())
        self.assertEqual([], self.steps)
        self.assertIn('another process is clearing', self.log.output)

    def test_the_repair_logs_what_it_did(self):
        lifecycle.reclaim(FakeIronic(), reservation())
        self.assertIn('had lost its claim for instance %s in Ironic; '
                      'claimed it again' % INSTANCE, self.log.output)
        lifecycle.reclaim(FakeIronic(ERRORS[lifecycle.Kind.REFUSED]()),
                          reservation())
        self.assertIn('but Ironic refused to claim it again: Ironic will '
                      'not give the node: claimed by instance',
                      self.log.output)

    def test_an_end_not_made_here_is_not_announced(self):
        self.useFixture(fixtures.MockPatchObject(
            db_reservations, 'undo_reservation', return_value=False))
        self.assertFalse(lifecycle.claim_new(
            FakeIronic(ERRORS[lifecycle.Kind.REFUSED]()), reservation(), {}))
        lifecycle.end_contradicted(reservation(), 'gone')
        self.assertEqual([], self.steps)
        self.assertNotIn('Ended reservation', self.log.output)


class TestEnds(LifecycleTestCase):
    """How a reservation's end leaves its node and its claim, by
    source."""

    def release(self):
        announced = []
        lifecycle.release('r', lambda record: None, announced.append)
        lifecycle.release_record(reservation(), announced.append)
        self.assertEqual(2, len(announced))
        lifecycle.expire(timeutils.utcnow())
        return self.steps

    def test_file(self):
        self.config(source='file', group='inventory')
        self.assertEqual([ended(False, 'never')] * 3, self.release())

    def test_ironic_without_claims(self):
        self.config(claim_nodes=False, group='ironic')
        self.assertEqual([ended(True, 'never')] * 3, self.release())

    def test_ironic_with_claims(self):
        self.useFixture(fixtures.MockPatchObject(
            inventory_sources, 'ironic_source', FakeIronic))
        self.assertEqual([ended(True, 'now'), CLEARED] * 2
                         + [ended(True, 'later 0s')], self.release())

    def test_only_the_lifecycle_builds_an_ending(self):
        self.assertRaises(TypeError, lifecycle.Ending, False, None)
        self.assertRaises(TypeError, lifecycle.Ending, False, None, object())
        lifecycle.release_record(reservation(), lambda record: None)
        built, = self.endings
        # Nor does anyone else change one it built.
        self.assertRaises(ValueError, dataclasses.replace, built, stale=True)
        self.assertRaises(dataclasses.FrozenInstanceError, setattr, built,
                          'stale', True)

    def test_contradicted(self):
        lifecycle.end_contradicted(reservation(), 'Ironic no longer has '
                                                  'that node')
        self.assertEqual([ended(True, 'never'), LOGGED], self.steps)
        self.assertIn('it held node %s, but Ironic no longer has that node'
                      % NODE, self.log.output)


ROOT = pathlib.Path(__file__).resolve().parents[3]
ENDING_FUNCTIONS = ('delete_reservation', 'delete_reservation_by_uuid',
                    'undo_reservation', 'expire_reservations',
                    'delete_pins')
"""db.reservations' functions that end a reservation."""
THE_DOOR = ('reserveapi/inventory/lifecycle.py',
            'reserveapi/db/reservations.py')
"""Where they may be named: the lifecycle, and where they are defined."""


class TestTheOnlyDoor(base.TestCase):
    """A reservation ends only through the lifecycle, in the product, its
    tools and its tests alike: a newcomer finds no other way to copy."""

    def test_the_ending_functions_take_an_ending_and_no_default(self):
        for name in ENDING_FUNCTIONS:
            parameters = inspect.signature(
                getattr(db_reservations, name)).parameters
            self.assertEqual(
                [], [parameter for parameter in parameters.values()
                     if parameter.default is not inspect.Parameter.empty],
                name)
            self.assertEqual('ending', list(parameters)[-1], name)

    def test_only_the_lifecycle_calls_the_ending_functions(self):
        callers, found = [], []
        for top in ('reserveapi', 'reserveapi_testing', 'tests', 'tools'):
            for path in sorted((ROOT / top).rglob('*.py')):
                name = str(path.relative_to(ROOT))
                for node in ast.walk(ast.parse(path.read_text(), name)):
                    if isinstance(node, ast.Attribute):
                        names = [node.attr]
                    elif isinstance(node, ast.ImportFrom):
                        names = [alias.name for alias in node.names]
                    else:
                        continue
                    if set(names) & set(ENDING_FUNCTIONS):
                        callers.append(name)
                        if name not in THE_DOOR:
                            found.append('%s:%d' % (name, node.lineno))
        self.assertEqual([], found)
        self.assertIn(THE_DOOR[0], callers)
