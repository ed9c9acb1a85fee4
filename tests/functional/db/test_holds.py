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

"""Holds in the database, and the guard their writers take turns on:
what a writer decides inside its turn sees the turns before it, and a
write from a version read before another's writes nothing."""

import concurrent.futures
import datetime
import uuid

from oslo_utils import fixture as utils_fixture
import sqlalchemy as sa

from reserveapi.common import exception
from reserveapi.db import base as db_base
from reserveapi.db import holds as db_holds
from reserveapi.db import models
from reserveapi.db import nodes as db_nodes
from reserveapi.db import reservations as db_reservations
from reserveapi.inventory import lifecycle
from reserveapi_testing import inventory
from tests.functional import base

T0 = datetime.datetime(2030, 1, 1, 12, 0, 0)
HOUR = datetime.timedelta(hours=1)
SPEC = {'flavor': {'extra_specs': {
    'resources:CUSTOM_BAREMETAL_GOLD': '1', 'trait:CUSTOM_RAID': 'required'}}}


def _values(start_at=T0, end_at=T0 + 24 * HOUR, **overrides):
    """A hold's values, its busy window padded by an hour."""
    values = {'uuid': str(uuid.uuid4()), 'project_id': 'p1', 'amount': 2,
              'request_spec': SPEC, 'resource_class': 'CUSTOM_BAREMETAL_GOLD',
              'shard': None, 'conductor_group': None, 'start_at': start_at,
              'end_at': end_at, 'padding': 3600,
              'busy_from': start_at - HOUR, 'busy_until': end_at + HOUR}
    values.update(overrides)
    return values


def _create(**overrides):
    return db_holds.create_hold(_values(**overrides), lambda: None)


def _version():
    version, _holds = db_holds.live_holds(T0)
    return version


class Refused(Exception):
    pass


def _refuse():
    raise Refused()


class TestHolds(base.DBTestCase):

    scenarios = base.EVERY_BACKEND

    def test_create_and_get(self):
        values = _values(shard='s1', conductor_group='g1')

        created = db_holds.create_hold(values, lambda: None)

        self.assertEqual(created, db_holds.get_hold(values['uuid']))
        for column, value in values.items():
            self.assertEqual(value, getattr(created, column), column)
        self.assertIsNone(created.cancelled_at)
        self.assertIsNone(created.updated_at)
        self.assertIsNotNone(created.created_at)

    def test_unknown_is_not_found(self):
        self.assertRaises(exception.HoldNotFound, db_holds.get_hold,
                          str(uuid.uuid4()))

    def test_list_filters_sorts_and_pages(self):
        first = _create(start_at=T0 + 2 * HOUR)
        second = _create(project_id='p2', start_at=T0)
        third = _create(resource_class=None, start_at=T0 + HOUR)

        self.assertEqual([first, second, third], db_holds.list_holds())
        self.assertEqual([first, third],
                         db_holds.list_holds({'project_id': 'p1'}))
        self.assertEqual([third],
                         db_holds.list_holds({'resource_class': None}))
        self.assertEqual([first, third, second],
                         db_holds.list_holds(sort_key='start_at',
                                             sort_dir='desc'))
        self.assertEqual([third], db_holds.list_holds(
            limit=1, marker=second.uuid, sort_key='start_at'))
        self.assertEqual(sorted([first, second, third],
                                key=lambda hold: hold.uuid),
                         db_holds.list_holds(sort_key='uuid'))
        self.assertRaises(exception.Invalid, db_holds.list_holds,
                          {'project_id': 'p1'}, marker=second.uuid)

    def test_update(self):
        hold = _create()

        updated = db_holds.update_hold(
            hold.uuid, {'end_at': T0 + 48 * HOUR,
                        'busy_until': T0 + 49 * HOUR, 'amount': 3})

        self.assertEqual((3, T0 + 48 * HOUR, T0 + 49 * HOUR),
                         (updated.amount, updated.end_at, updated.busy_until))
        self.assertIsNotNone(updated.updated_at)
        self.assertEqual(updated, db_holds.get_hold(hold.uuid))

    def test_update_of_a_cancelled_hold_is_a_conflict(self):
        hold = _create()
        db_holds.cancel_hold(hold.uuid, T0)
        version = _version()

        error = self.assertRaises(exception.Conflict, db_holds.update_hold,
                                  hold.uuid, {'amount': 3}, _refuse)

        self.assertIn('hold %s is cancelled' % hold.uuid, error.detail)
        self.assertEqual(version, _version())
        self.assertEqual(2, db_holds.get_hold(hold.uuid).amount)

    def test_update_of_an_unknown_hold_is_not_found(self):
        self.assertRaises(exception.HoldNotFound, db_holds.update_hold,
                          str(uuid.uuid4()), {'amount': 3})

    def test_cancel_once(self):
        hold = _create()
        version = _version()

        cancelled = db_holds.cancel_hold(hold.uuid, T0)
        again = db_holds.cancel_hold(hold.uuid, T0 + HOUR)

        self.assertEqual((T0, T0), (cancelled.cancelled_at,
                                    cancelled.updated_at))
        self.assertEqual(cancelled, again)
        self.assertEqual(cancelled, db_holds.get_hold(hold.uuid))
        self.assertEqual(version, _version())
        self.assertRaises(exception.HoldNotFound, db_holds.cancel_hold,
                          str(uuid.uuid4()), T0)

    def test_live_holds_are_those_whose_busy_window_is_not_over(self):
        now = T0 + 100 * HOUR
        # Its busy window ends at ``now``: over.
        _create(end_at=now - HOUR)
        in_padding = _create(end_at=now - HOUR / 2)
        later = _create(start_at=now + 2 * HOUR, end_at=now + 3 * HOUR)
        running = _create(start_at=now - 2 * HOUR, end_at=now + HOUR)
        db_holds.cancel_hold(
            _create(start_at=now, end_at=now + HOUR).uuid, T0)

        self.assertEqual((5, [in_padding, running, later]),
                         db_holds.live_holds(now))


class TestGuard(base.DBTestCase):
    """Every write that decides by the holds moves the guard on, and
    decides inside its transaction, or from the version it read."""

    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        inventory.sync(self, [inventory.node('node-%d' % index)
                              for index in range(1, 5)])
        self.nodes = db_nodes.list_nodes(sort_key='name')

    def reserve(self, node, guard_version=None, takes_turn=False,
                project_id='p1'):
        return db_reservations.create_reservation(
            {'uuid': str(uuid.uuid4()), 'host': 'compute-1',
             'instance_uuid': str(uuid.uuid4()), 'project_id': project_id},
            node, guard_version=guard_version, takes_turn=takes_turn)

    def reserved(self, node):
        with db_base.reader() as session:
            return session.scalar(sa.select(models.Node.reserved).where(
                models.Node.id == node.id))

    def test_no_row_is_version_zero_and_each_write_moves_it_on(self):
        self.assertEqual((0, []), db_holds.live_holds(T0))
        hold = _create()
        db_holds.update_hold(hold.uuid, {'amount': 1})
        # Decided from a version: reads the guard, leaves it.
        self.reserve(self.nodes[0], guard_version=2)
        self.reserve(self.nodes[1], guard_version=2, takes_turn=True)

        self.assertEqual(3, _version())

    def test_admission_decides_inside_its_turn(self):
        first = _create()
        seen = []

        second = db_holds.create_hold(
            _values(), lambda: seen.append(db_holds.live_holds(T0)))

        self.assertEqual([(2, [first])], seen)
        self.assertEqual((2, [first, second]), db_holds.live_holds(T0))

    def test_a_refused_admission_writes_nothing(self):
        hold = _create()

        self.assertRaises(Refused, db_holds.create_hold, _values(), _refuse)
        self.assertRaises(Refused, db_holds.update_hold, hold.uuid,
                          {'amount': 5}, _refuse)

        self.assertEqual((1, [hold]), db_holds.live_holds(T0))

    def test_stale_version_reserves_nothing(self):
        _create()
        # Reservations decided from one version do not move it on.
        self.reserve(self.nodes[0], guard_version=1)
        self.reserve(self.nodes[1], guard_version=1)
        _create()

        for stale in (0, 1):
            self.assertRaises(exception.HoldsChanged, self.reserve,
                              self.nodes[2], guard_version=stale)

        self.assertEqual({self.nodes[0].uuid, self.nodes[1].uuid}, {
            reservation.node_uuid
            for reservation in db_reservations.list_reservations()})
        self.assertFalse(self.reserved(self.nodes[2]))
        self.assertEqual(2, _version())

    def test_no_row_is_the_first_version(self):
        self.reserve(self.nodes[0], guard_version=0)
        _create()

        self.assertRaises(exception.HoldsChanged, self.reserve,
                          self.nodes[1], guard_version=0)

        self.assertEqual(1, _version())
        self.assertFalse(self.reserved(self.nodes[1]))

    def test_a_node_taken_from_the_current_version_is_lost_race(self):
        self.reserve(self.nodes[0], guard_version=0)

        self.assertRaises(exception.NodeAlreadyReserved, self.reserve,
                          self.nodes[0], guard_version=0)

    def test_a_turn_from_a_stale_version_reserves_nothing(self):
        _create()
        self.reserve(self.nodes[0], guard_version=1, takes_turn=True)

        self.assertRaises(exception.HoldsChanged, self.reserve,
                          self.nodes[1], guard_version=1, takes_turn=True)

        self.assertEqual(2, _version())
        self.assertFalse(self.reserved(self.nodes[1]))

    def test_a_turn_before_any_hold_is_a_change(self):
        """A writer that saw a live hold finds the row: none means it
        raced the first admission."""
        self.assertRaises(exception.HoldsChanged, self.reserve,
                          self.nodes[0], guard_version=0, takes_turn=True)
        self.assertEqual([], db_reservations.list_reservations())

    def test_a_reservation_no_hold_needs_leaves_the_guard(self):
        self.reserve(self.nodes[0])
        self.assertEqual(0, _version())

    def test_nodes_of_a_project_reserved_since(self):
        node_1, node_2, node_3, node_4 = self.nodes
        time = self.useFixture(utils_fixture.TimeFixture(T0))
        self.reserve(node_1)
        time.advance_time_delta(HOUR)
        self.reserve(node_2)
        self.reserve(node_3, project_id='p2')
        lifecycle.release_record(self.reserve(node_4), lambda record: None)

        since_start = db_holds.project_reservations_since('p1', T0 + HOUR)
        since_before = db_holds.project_reservations_since('p1', T0)

        self.assertEqual([node_2.uuid], [node.uuid for node in since_start])
        self.assertEqual([node_1.uuid, node_2.uuid],
                         [node.uuid for node in since_before])
        # As a candidate is: for the matcher, its reservation aside.
        record, = since_start
        self.assertFalse(record.reserved)
        self.assertEqual((node_2.traits, node_2.capabilities),
                         (record.traits, record.capabilities))
        self.assertEqual([], db_holds.project_reservations_since(
            'p1', T0 + 2 * HOUR))


class TestGuardRace(base.DBTestCase):
    """Writers that really run at once, on connections of their own."""

    scenarios = base.SERVER_BACKENDS

    def test_the_second_admission_sees_the_first(self):
        # Both first writers: neither finds the row.
        seen = []
        with concurrent.futures.ThreadPoolExecutor(1) as executor:
            with db_base.writer():
                first = _create()  # in this transaction
                other = executor.submit(
                    db_holds.create_hold, _values(),
                    lambda: seen.append(db_holds.live_holds(T0)))
                # It waits for this transaction's turn to end.
                self.assertRaises(concurrent.futures.TimeoutError,
                                  other.result, timeout=0.5)
            second = other.result(timeout=30)

        self.assertEqual((2, [first]), seen[-1])
        self.assertEqual((2, [first, second]), db_holds.live_holds(T0))

    def test_a_write_from_a_version_read_before_another_writes_nothing(self):
        inventory.sync(self, [inventory.node('node-1')])
        node, = db_nodes.list_nodes()
        _create()
        with concurrent.futures.ThreadPoolExecutor(1) as executor:
            with db_base.writer():
                _create()
                other = executor.submit(
                    db_reservations.create_reservation,
                    {'uuid': str(uuid.uuid4()), 'host': 'compute-1',
                     'instance_uuid': str(uuid.uuid4()),
                     'project_id': 'p1'}, node, guard_version=1)
                self.assertRaises(concurrent.futures.TimeoutError,
                                  other.result, timeout=0.5)
            self.assertIsInstance(other.exception(timeout=30),
                                  exception.HoldsChanged)

        self.assertEqual(2, _version())
        self.assertEqual([], db_reservations.list_reservations())

    def test_an_admission_waits_for_a_reservation_under_way(self):
        """The reservation's INSERT locks the guard for share: the
        admission's turn starts after its commit, and sees its node."""
        inventory.sync(self, [inventory.node('node-1')])
        node, = db_nodes.list_nodes()
        _create()
        seen = []
        with concurrent.futures.ThreadPoolExecutor(1) as executor:
            with db_base.writer() as session:
                # Open the transaction: on PostgreSQL the INSERT would
                # otherwise run (and commit) on its own.
                session.execute(sa.select(1))
                db_reservations.create_reservation(
                    {'uuid': str(uuid.uuid4()), 'host': 'compute-1',
                     'instance_uuid': str(uuid.uuid4()),
                     'project_id': 'p1'}, node, guard_version=1)
                other = executor.submit(
                    db_holds.create_hold, _values(),
                    lambda: seen.append([
                        reservation.node_uuid for reservation
                        in db_reservations.list_reservations()]))
                self.assertRaises(concurrent.futures.TimeoutError,
                                  other.result, timeout=0.5)
            other.result(timeout=30)

        self.assertEqual([[node.uuid]], seen)
