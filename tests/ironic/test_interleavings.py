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

"""Every interleaving of two of the operations that end or repair a
reservation claimed in Ironic: the worker's repair (claimed again), a
release, an expiry (and the worker's clear after it) and a takeover,
against the real Ironic, on PostgreSQL and MariaDB.

Each operation stops before every call where it talks to Ironic or
commits (``reserveapi_testing/failpoints.py``), and every order of the
two operations' steps is run, one reservation and one node each. Once
both have finished, a claim of ours stands only for a live reservation
or under a clearing row; once the worker has passed, only for a live
reservation, and every live reservation holds its claim; no node is
ever held twice.

The steps are whole transactions: a race inside one, where another's
commit lands between two of its statements, is a database test's
(``tests/functional/db/test_ironic_state.py``'s
``test_a_release_outlives_a_guard_finished_under_it`` holds one open).
"""

import datetime
import uuid as uuidlib

from oslo_utils import timeutils
import sqlalchemy as sa
import testscenarios

from reserveapi import reservations
from reserveapi.common import exception
from reserveapi.db import base as db_base
from reserveapi.db import inventory as db_inventory
from reserveapi.db import models
from reserveapi.db import reservations as db_reservations
from reserveapi.inventory import claims
from reserveapi.inventory import ironic
from reserveapi.inventory import ironic_reconcile
from reserveapi.inventory import lifecycle
from reserveapi.inventory import sources as inventory_sources
from reserveapi.inventory import sync as inventory_sync
from reserveapi_testing import failpoints
from tests.functional import base as functional_base
from tests.ironic import test_inventory

FAILPOINTS = (
    (ironic.IronicSource, 'claim'), (ironic.IronicSource, 'clear_claim'),
    (db_inventory, 'guard_ironic_claim'),
    (db_inventory, 'take_claim_to_clear'),
    (db_inventory, 'finish_claim_to_clear'),
    (db_inventory, 'postpone_claim_to_clear'),
    (db_inventory, 'request_claim_to_clear'),
    (db_reservations, 'get_live_reservation_for_instance'),
    (db_reservations, 'delete_reservation_by_uuid'),
    (db_reservations, 'undo_reservation'),
    (db_reservations, 'expire_reservations'),
    (db_reservations, 'take_over_host'))
"""Where the operations talk to Ironic or commit."""

HOST, OTHER_HOST = 'compute-1', 'compute-2'
WORKER_LATER = datetime.timedelta(minutes=2)
"""When the worker passes: every lease lapsed, every clear due."""
EXPECTED = {'release': (exception.ReservationNotFound,)}
"""What an operation may raise: a release of a reservation that ended
meanwhile is a 404."""


load_tests = testscenarios.load_tests_apply_scenarios


class TestInterleavings(test_inventory.InventoryTestCase):

    scenarios = functional_base.SERVER_BACKENDS
    NODES = 80

    def setUp(self):
        super().setUp()
        self.config(orphan_claim_grace=10 ** 6, group='ironic')
        self.free_nodes = self.seed(self.NODES)
        self.sync_nodes()
        self.source = inventory_sources.ironic_source()
        self.interleaver = self.useFixture(failpoints.Interleaver())
        for owner, attribute in FAILPOINTS:
            self.interleaver.pause_before(owner, attribute)

    # One run

    def prepare(self, names):
        """A node claimed by a fresh reservation; Ironic shows it free
        when the repair is one of ``names``."""
        node = self.free_nodes.pop()
        instance = str(uuidlib.uuid4())
        created = self.reserve(instance, status=201, host=HOST,
                               candidate_nodes=[node]).json
        if 'reclaim' in names:
            self.ironic.update_node(node, instance_uuid=None)
        return node, instance, created['uuid']

    def operations(self, names, instance, uuid):
        record = db_reservations.get_live_reservation_for_instance(instance)
        expired_at = timeutils.utcnow() + datetime.timedelta(
            seconds=self.reserved_ttl + 60)

        def expiry():
            reservations.expire(now=expired_at)
            claims.clear_due(self.source)

        every = {
            'reclaim': lambda: lifecycle.reclaim(self.source, record),
            'release': lambda: reservations.release(uuid, lambda r: None),
            'expiry': expiry,
            'takeover': lambda: reservations.take_over(HOST, OTHER_HOST,
                                                       force=True)}
        return {name: every[name] for name in names}

    @property
    def reserved_ttl(self):
        return reservations.CONF.reservations.reserved_ttl

    def run_order(self, names, order):
        """Run the two operations in ``order`` (a string of their initial
        letters); the run's trace, for a failure's message."""
        node, instance, uuid = self.prepare(names)
        letters = {name[0]: name for name in names}
        errors = self.interleaver.run(
            self.operations(names, instance, uuid),
            [letters[letter] for letter in order])
        trace = ' '.join('%s:%s' % step for step in self.interleaver.trace)
        unexpected = {name: repr(error) for name, error in errors.items()
                      if not isinstance(error, EXPECTED.get(name, ()))}
        self.assertEqual({}, unexpected, trace)
        self.check_finished(node, instance, trace)
        self.check_after_the_worker(node, instance, trace)
        self.clean_up(instance)
        return trace

    def steps(self, names, name):
        """How many failpoints ``name`` passes when it runs alone."""
        node, instance, uuid = self.prepare(names)
        self.interleaver.run(self.operations([name], instance, uuid))
        count = len(self.interleaver.trace)
        self.clean_up(instance)
        return count

    # The invariants

    def ironic_instance(self, node):
        return self.ironic.get_node(node)['instance_uuid']

    def live_on(self, node, instance):
        return db_inventory.holds_live(node, instance)

    def clearing_row(self, node, instance):
        with db_base.reader() as session:
            return session.scalar(sa.select(models.ClaimToClear.id).where(
                models.ClaimToClear.node_uuid == node,
                models.ClaimToClear.instance_uuid == instance)) is not None

    def check_finished(self, node, instance, trace):
        if self.ironic_instance(node) == instance:
            self.assertTrue(
                self.live_on(node, instance)
                or self.clearing_row(node, instance),
                'our claim stands with no live reservation and no clearing '
                'row: %s' % trace)

    def check_after_the_worker(self, node, instance, trace):
        later = timeutils.utcnow() + WORKER_LATER
        timeutils.set_time_override(later)
        try:
            # Every job of the worker that touches claims: the sync shows
            # the reconcile what to repair; it clears what is due first.
            inventory_sync.sync_changes()
            ironic_reconcile.reconcile()
        finally:
            timeutils.clear_time_override()
        self.assertEqual(
            self.live_on(node, instance),
            self.ironic_instance(node) == instance,
            'after the worker, the claim and the live reservation '
            'disagree: %s' % trace)
        with db_base.reader() as session:
            held = session.execute(
                sa.select(models.Reservation.active_node_id,
                          sa.func.count())
                .where(models.Reservation.active_node_id.is_not(None))
                .group_by(models.Reservation.active_node_id)
                .having(sa.func.count() > 1)).all()
        self.assertEqual([], held, trace)

    def clean_up(self, instance):
        live = db_reservations.get_live_reservation_for_instance(instance)
        if live is not None:
            reservations.release(live.uuid, lambda r: None)

    # The pairs

    def check_every_order(self, first, second):
        names = (first, second)
        counts = [self.steps(names, name) for name in names]
        orders = list(failpoints.orders(*counts))
        self.assertGreater(len(orders), 1)
        for order in orders:
            self.run_order(names, ''.join(
                first[0] if letter == 'a' else second[0]
                for letter in order))

    def test_repair_and_release(self):
        self.check_every_order('reclaim', 'release')

    def test_repair_and_expiry(self):
        self.check_every_order('reclaim', 'expiry')

    def test_repair_and_takeover(self):
        self.check_every_order('reclaim', 'takeover')

    def test_release_and_expiry(self):
        self.check_every_order('release', 'expiry')

    def test_release_and_takeover(self):
        self.check_every_order('release', 'takeover')

    def test_expiry_and_takeover(self):
        self.check_every_order('expiry', 'takeover')
