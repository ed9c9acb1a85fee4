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

"""The one way a row is leased (db/leases.py), on every backend and for
every leased table: the inventory sync, the claims to clear in Ironic
and the mirror's hosts all rely on these rules.
"""

import datetime
import uuid

from oslo_utils import timeutils
import sqlalchemy as sa
import testscenarios

from reserveapi.common import states
from reserveapi.db import base as db_base
from reserveapi.db import leases
from reserveapi.db import models
from tests.functional import base

LEASE = datetime.timedelta(seconds=60)


def _sync_row(session, now):
    return session.execute(sa.insert(models.InventorySync).values(
        source=uuid.uuid4().hex, nodes=0)).inserted_primary_key[0]


def _clearing_row(session, now):
    return session.execute(sa.insert(models.ClaimToClear).values(
        node_uuid=str(uuid.uuid4()), instance_uuid=str(uuid.uuid4()),
        attempts=0, next_attempt_at=now, generation=0, created_at=now)
    ).inserted_primary_key[0]


def _mirror_row(session, now):
    aggregate = session.execute(sa.insert(models.MirrorAggregate).values(
        uuid=str(uuid.uuid4()), deleted=False, created_at=now)
    ).inserted_primary_key[0]
    return session.execute(sa.insert(models.MirrorHost).values(
        aggregate_id=aggregate, host=str(uuid.uuid4()), member=True,
        version=1, state=states.PENDING, attempts=0, created_at=now)
    ).inserted_primary_key[0]


# Every leased table: how to add an unheld row to it, and a counter
# column to write along with a lease.
LEASED_TABLES = [
    ('inventory_syncs', {'MODEL': models.InventorySync,
                         'add': _sync_row, 'counter': 'nodes'}),
    ('ironic_releases', {'MODEL': models.ClaimToClear,
                         'add': _clearing_row, 'counter': 'attempts'}),
    ('mirror_hosts', {'MODEL': models.MirrorHost,
                      'add': _mirror_row, 'counter': 'attempts'}),
]


class TestLease(base.DBTestCase):
    scenarios = testscenarios.multiply_scenarios(base.EVERY_BACKEND,
                                                 LEASED_TABLES)

    def setUp(self):
        super().setUp()
        # Whole seconds, which is all MariaDB keeps of a DATETIME.
        self.now = timeutils.utcnow().replace(microsecond=0)
        self.lease = leases.Lease(self.MODEL)
        self.row = self.add_row()

    def add_row(self):
        with db_base.writer() as session:
            return self.add(session, self.now)

    def where(self, row=None):
        return self.MODEL.id == (row or self.row)

    def take(self, holder, now=None, row=None, **values):
        now = now or self.now
        with db_base.writer() as session:
            return self.lease.take(session, holder, now + LEASE, now,
                                   self.where(row), **values)

    def renew(self, holder, until):
        with db_base.writer() as session:
            return self.lease.renew(session, holder, until, self.where())

    def drop(self, holder, **values):
        with db_base.writer() as session:
            return self.lease.drop(session, holder, self.where(), **values)

    def count(self, now=None):
        with db_base.reader() as session:
            return self.lease.count(session, now or self.now)

    def held(self, row=None):
        """``(holder, until)`` of the row."""
        with db_base.reader() as session:
            return tuple(session.execute(
                sa.select(self.lease.holder, self.lease.until)
                .where(self.where(row))).one())

    def counter_value(self):
        with db_base.reader() as session:
            return session.scalar(sa.select(
                getattr(self.MODEL, self.counter)).where(self.where()))

    def test_a_free_row_is_taken(self):
        self.assertEqual(1, self.take('p1'))
        self.assertEqual(('p1', self.now + LEASE), self.held())

    def test_a_live_lease_of_another_is_not_taken(self):
        self.take('p1')

        # Up to and including the moment it lapses.
        for later in (self.now, self.now + LEASE):
            self.assertEqual(0, self.take('p2', now=later))
        self.assertEqual(('p1', self.now + LEASE), self.held())

    def test_an_expired_lease_is_taken_over(self):
        self.take('p1')
        later = self.now + LEASE + datetime.timedelta(seconds=1)

        self.assertEqual(1, self.take('p2', now=later))
        self.assertEqual(('p2', later + LEASE), self.held())

    def test_its_own_live_lease_is_taken_again_further(self):
        self.take('p1')
        later = self.now + datetime.timedelta(seconds=30)

        self.assertEqual(1, self.take('p1', now=later))
        self.assertEqual(('p1', later + LEASE), self.held())

    def test_free_is_for_a_holder_or_for_any_new_process(self):
        self.take('p1')
        unheld = self.add_row()

        def free(*holder):
            with db_base.reader() as session:
                return set(session.scalars(sa.select(self.MODEL.id).where(
                    self.lease.free(self.now, *holder))))

        self.assertEqual({self.row, unheld}, free('p1'))
        self.assertEqual({unheld}, free('p2'))
        self.assertEqual({unheld}, free())

    def test_the_rows_taken_are_those_selected_and_free(self):
        other, held = self.add_row(), self.add_row()
        self.take('p1', row=held)

        with db_base.writer() as session:
            taken = self.lease.take(
                session, 'p2', self.now + LEASE, self.now,
                self.MODEL.id.in_([self.row, held]))

        self.assertEqual(1, taken)
        self.assertEqual('p2', self.held()[0])
        self.assertEqual('p1', self.held(held)[0])
        self.assertEqual((None, None), self.held(other))

    def test_values_are_written_with_the_lease_only(self):
        self.take('p1', **{self.counter: 7})
        self.take('p2', **{self.counter: 9})

        self.assertEqual(7, self.counter_value())

    def test_only_its_holder_renews_a_lease(self):
        self.take('p1')
        until = self.now + 2 * LEASE

        self.assertEqual(0, self.renew('p2', until))
        self.assertEqual(('p1', self.now + LEASE), self.held())
        self.assertEqual(1, self.renew('p1', until))
        self.assertEqual(('p1', until), self.held())

    def test_an_unheld_row_is_not_renewed(self):
        self.assertEqual(0, self.renew('p1', self.now + LEASE))
        self.assertEqual((None, None), self.held())

    def test_only_its_holder_drops_a_lease(self):
        self.take('p1')

        self.assertEqual(0, self.drop('p2', **{self.counter: 3}))
        self.assertEqual(('p1', self.now + LEASE), self.held())
        self.assertEqual(0, self.counter_value())
        self.assertEqual(1, self.drop('p1', **{self.counter: 3}))
        self.assertEqual((None, None), self.held())
        self.assertEqual(3, self.counter_value())
        # The row is free for anyone again.
        self.assertEqual(1, self.take('p2'))

    def test_count_tells_live_leases_from_lapsed_ones(self):
        self.assertEqual((0, 0), self.count())
        lapsed, _unheld = self.add_row(), self.add_row()
        self.take('p1')
        self.take('p2', now=self.now - 2 * LEASE, row=lapsed)

        self.assertEqual((1, 1), self.count())
        # A lease counts as live up to the moment it lapses.
        self.assertEqual((1, 1), self.count(self.now + LEASE))
        self.assertEqual((0, 2), self.count(
            self.now + LEASE + datetime.timedelta(seconds=1)))
