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

"""The capacity summary's counters equal the aggregate recomputed from
the node table, after random sequences of claims, releases, expiries,
take-overs and syncs, one at a time on every backend and concurrently on
PostgreSQL and MariaDB.

The reference is the straightforward GROUP BY over every node with the
matcher's own clauses (matching.free_clauses and the live-reservation
join), not the derived flags the triggers read: a flag left wrong by any
path would show.
"""

import collections
import concurrent.futures
import datetime
import random
import uuid

import fixtures
from oslo_utils import timeutils
import sqlalchemy as sa
import testtools

from reserveapi.common import exception
from reserveapi.db import base as db_base
from reserveapi.db import counters
from reserveapi.db import derived
from reserveapi.db import matching
from reserveapi.db import models
from reserveapi.db import node_sync
from reserveapi.db import node_texts
from reserveapi.db import nodes as db_nodes
from reserveapi.db import reservations as db_reservations
from reserveapi.db import summary
from reserveapi.inventory import lifecycle
from reserveapi.inventory import sync as inventory_sync
from tests.functional import base

UUIDS = [str(uuid.UUID(int=index + 1)) for index in range(40)]
HOSTS = ('compute-1', 'compute-2', 'compute-3')
SHARDS = (None, 'rack-1', 'rack-2')
GROUPS = (None, 'east')
TRAITS = ('CUSTOM_A', 'CUSTOM_B', 'CUSTOM_C', 'HW_CPU_X86_AVX2')
# Every partition a host may ask about: (shard, conductor_group).
PARTITIONS = [(shard, group) for shard in (None, 'rack-1', 'rack-2',
                                           'rack-9')
              for group in (None, '', 'east')]
# What the concurrent runs may meet and carry on from.
LOST = (exception.NodeAlreadyReserved, exception.InstanceReserved,
        exception.NodeNotFound, exception.Conflict,
        exception.ReservationNotFound, exception.DatabaseBusy)


def _random_node(rng, node_uuid):
    return {
        'uuid': node_uuid, 'name': 'node-' + node_uuid[-4:],
        'resource_class': rng.choice(('CUSTOM_GOLD', 'CUSTOM_GOLD',
                                      'CUSTOM_SILVER', None)),
        'memory_mb': rng.choice((4096, 8192)), 'cpus': rng.choice((4, 8)),
        'local_gb': rng.choice((100, 200)),
        'cpu_arch': rng.choice(('x86_64', 'x86_64', 'aarch64', None)),
        'capabilities': dict(rng.sample(
            [('boot_mode', 'uefi'), ('boot_mode', 'bios'),
             ('disk_label', 'gpt'), ('hw:x', 'a, b')], rng.randint(0, 2))),
        'traits': sorted(rng.sample(TRAITS, rng.randint(0, 3))),
        'provision_state': rng.choice(('available',) * 4 + ('active',)),
        'power_state': rng.choice(('power off',) * 9 + (None,)),
        'maintenance': rng.random() < 0.1, 'retired': rng.random() < 0.05,
        'instance_uuid': None,
        'conductor_group': rng.choice(GROUPS), 'shard': rng.choice(SHARDS),
        'owner': None, 'lessee': None,
    }


def _inventory(rng):
    """Most of the pool, some nodes changed."""
    return [_random_node(rng, node_uuid) for node_uuid in UUIDS
            if rng.random() < 0.85]


def _fingerprints(nodes):
    return {node['uuid']: inventory_sync.fingerprint(node) for node in nodes}


def expected(host, shard, conductor_group):
    """The summary recomputed from every node, the matcher's way."""
    node, reservation = models.Node, models.Reservation
    partition = matching.partition_clauses(conductor_group, shard)
    free = sa.and_(reservation.id.is_(None), *matching.free_clauses())
    live = sa.and_(node.vanished.is_(False), *partition)
    capacity = (
        sa.select(node.resource_class,
                  sa.func.count(node.id),
                  sa.func.sum(sa.case((free, 1), else_=0)),
                  sa.func.sum(sa.case((reservation.id.is_not(None), 1),
                                      else_=0)),
                  sa.func.sum(node.memory_mb), sa.func.sum(node.cpus),
                  sa.func.sum(node.local_gb),
                  sa.func.sum(sa.case((reservation.host == host, 1),
                                      else_=0)))
        .select_from(node)
        .outerjoin(reservation, matching.live_reservation_join())
        .where(live, node.resource_class.is_not(None))
        .group_by(node.resource_class).order_by(node.resource_class))
    traits = (sa.select(models.NodeTrait.trait).distinct()
              .join(node, node.id == models.NodeTrait.node_id)
              .outerjoin(reservation, matching.live_reservation_join())
              .where(live, free).order_by(models.NodeTrait.trait))
    arches = (sa.select(node.cpu_arch).distinct()
              .where(live, node.cpu_arch.is_not(None))
              .order_by(node.cpu_arch))
    names = ('resource_class', 'total', 'available', 'reserved',
             'memory_mb', 'vcpus', 'local_gb', 'reserved_by_host')
    with db_base.reader() as session:
        rows = [dict(zip(names, [row[0]] + [int(v) for v in row[1:]],
                         strict=True))
                for row in session.execute(capacity)]
        if host is None:
            for row in rows:
                del row['reserved_by_host']
        return {'capacity': rows,
                'traits': list(session.scalars(traits)),
                'architectures': list(session.scalars(arches))}


class _ClaimInterrupted:
    """An Ironic source whose claims fail once they may have been sent:
    the lifecycle ends the reservation, its node stale and its claim
    asked to be cleared (FAILURES, Kind.INTERRUPTED)."""

    def claim(self, node_uuid, instance_uuid, info):
        raise RuntimeError('interrupted')


class _Actions:
    """Random changes of the inventory and its reservations; releases
    and expiries leave nodes stale as the configured source does."""

    def __init__(self, seed, syncs=True):
        self.rng = random.Random(seed)
        self.syncs = syncs

    def claim(self):
        node = db_nodes.get_node(self.rng.choice(UUIDS))
        db_reservations.create_reservation(
            {'uuid': str(uuid.uuid4()), 'instance_uuid': str(uuid.uuid4()),
             'host': self.rng.choice(HOSTS), 'project_id': None}, node)

    def _live(self):
        live = [reservation for reservation
                in db_reservations.list_reservations()
                if reservation.state in ('reserved', 'active')]
        if not live:
            raise exception.ReservationNotFound(reservation='any')
        return self.rng.choice(live)

    def release(self):
        lifecycle.release(self._live().uuid, lambda reservation: None,
                          lambda reservation: None)

    def release_for_ironic(self):
        try:
            lifecycle.claim_new(_ClaimInterrupted(), self._live(), {})
        except RuntimeError:
            pass

    def confirm(self):
        reservation = self._live()
        db_reservations.update_reservation(
            reservation.uuid, reservation.state, {'state': 'active'})

    def expire(self):
        lifecycle.expire(timeutils.utcnow() + datetime.timedelta(seconds=1))

    def take_over(self):
        source, destination = self.rng.sample(HOSTS, 2)
        db_reservations.take_over_host(source, destination)

    def sync(self):
        nodes = _inventory(self.rng)
        node_sync.sync_nodes(lambda: [(nodes, _fingerprints(nodes))])

    def sync_pages(self):
        """The Ironic source's way: pages upserted, then the missing
        removed; stale marks older than the read cleared."""
        nodes = _inventory(self.rng)
        read_at = timeutils.utcnow()
        for start in range(0, len(nodes), 10):
            page = nodes[start:start + 10]
            node_sync.upsert_nodes(page, _fingerprints(page), read_at)
        node_sync.remove_missing({node['uuid'] for node in nodes})

    def step(self):
        action = self.rng.choice(
            [self.claim] * 6 + [self.release] * 2 + [
                self.release_for_ironic, self.confirm, self.expire,
                self.take_over] + ([self.sync, self.sync_pages]
                                   if self.syncs else []))
        try:
            action()
        except LOST:
            pass


class _SummaryTestCase(base.DBTestCase):

    def leave_released_nodes_stale(self):
        """Release as the Ironic source does (without claims): a node
        waits for a sync."""
        self.config(source='ironic', group='inventory')
        self.config(claim_nodes=False, group='ironic')

    def assertSummaryExact(self):
        for shard, conductor_group in PARTITIONS:
            for host in (None, 'compute-1'):
                self.assertEqual(
                    expected(host, shard, conductor_group),
                    db_nodes.get_capacity(host, shard, conductor_group,
                                          labels=True),
                    (host, shard, conductor_group))
        # No count below 0 in any slot, a bulk write's appended rows
        # (which may be) added to their slot's (db/counters.py).
        with db_base.reader() as session:
            for table in counters.TABLES:
                column = table.c.get('total', table.c.get('node_count'))
                keys = [key if key.name != 'slot'
                        else key % models.SUMMARY_SLOTS
                        for key in table.primary_key.columns]
                self.assertEqual([], session.execute(
                    sa.select(*keys).group_by(*keys).having(
                        sa.func.sum(column) < 0)).all(), table.name)


    def assertNodeTextsExact(self):
        """The texts matching reads are the tables of record's rows."""
        with db_base.reader() as session:
            nodes = session.execute(sa.select(
                models.Node.id, models.Node.traits_text,
                models.Node.capabilities_text)).all()
            traits = collections.defaultdict(set)
            for node_id, trait in session.execute(sa.select(
                    models.NodeTrait.node_id, models.NodeTrait.trait)):
                traits[node_id].add(trait)
            capabilities = collections.defaultdict(dict)
            for node_id, key, value in session.execute(sa.select(
                    models.NodeCapability.node_id, models.NodeCapability.key,
                    models.NodeCapability.value)):
                capabilities[node_id][key] = value
        self.assertTrue(nodes)
        self.assertEqual(
            {node_id: (traits[node_id], capabilities[node_id])
             for node_id, _, _ in nodes},
            {node_id: (set(node_texts.parse_traits(traits_text)),
                       node_texts.parse_capabilities(capabilities_text))
             for node_id, traits_text, capabilities_text in nodes})


class TestSummaryCounters(_SummaryTestCase):
    scenarios = base.EVERY_BACKEND

    def test_random_sequences(self):
        for seed in range(3):
            if seed == 1:
                self.leave_released_nodes_stale()
            actions = _Actions(seed)
            actions.sync()
            for _ in range(60):
                actions.step()
            self.assertSummaryExact()
            self.assertNodeTextsExact()

    def test_every_node_removed(self):
        actions = _Actions(7)
        actions.sync()
        for _ in range(10):
            actions.step()
        for reservation in db_reservations.list_reservations():
            if reservation.state in ('reserved', 'active'):
                lifecycle.release_record(reservation, lambda record: None)
        node_sync.sync_nodes(lambda: [([], {})])
        self.assertSummaryExact()
        with db_base.reader() as session:
            self.assertEqual(0, session.scalar(sa.select(
                sa.func.sum(models.CapacityCounter.total))) or 0)


class TestConcurrentSummaryCounters(_SummaryTestCase):
    """Several writers at once, each its own connections: the triggers'
    counts stay exact whatever the interleaving. One of them syncs, as
    the sync lease lets one worker at a time."""

    scenarios = base.SERVER_BACKENDS
    WRITERS = 4
    STEPS = 40

    def test_concurrent_random_sequences(self):
        _Actions(100).sync()

        def run(seed):
            actions = _Actions(seed, syncs=seed == 200)
            for _ in range(self.STEPS):
                actions.step()

        with concurrent.futures.ThreadPoolExecutor(self.WRITERS) as pool:
            for future in [pool.submit(run, 200 + seed)
                           for seed in range(self.WRITERS)]:
                future.result()
        self.assertSummaryExact()
        self.assertNodeTextsExact()

    def test_concurrent_random_sequences_appending(self):
        """The same, with folds among the writers (db/counters.py), and
        released nodes left stale."""
        self.leave_released_nodes_stale()
        _Actions(100).sync()

        def run(seed):
            actions = _Actions(seed, syncs=seed == 200)
            for step in range(self.STEPS):
                actions.step()
                if seed == 201 and step % 10 == 0:
                    counters.fold()

        with concurrent.futures.ThreadPoolExecutor(self.WRITERS) as pool:
            for future in [pool.submit(run, 200 + seed)
                           for seed in range(self.WRITERS)]:
                future.result()
        self.assertSummaryExact()
        self.assertEqual(0, derived.check_counters().found)
        counters.fold()
        self.assertSummaryExact()


class TestCountedByStatement(_SummaryTestCase):
    """Bulk writes count their nodes by statement while the triggers
    stand aside (db/counters.py, migrations 0012 and 0013): on
    MariaDB/MySQL always, on PostgreSQL for many statements; any other
    write is still counted by the triggers."""

    scenarios = [base.MYSQL, base.POSTGRESQL]

    def _standing_aside(self, session):
        if session.get_bind().dialect.name == 'mysql':
            return session.scalar(sa.text(
                'SELECT %s' % summary.BULK_VARIABLE)) == 1
        return session.scalar(sa.select(sa.func.current_setting(
            summary.BULK_SETTING, True))) == '1'

    def _window(self, session, ids):
        return counters.counted_by_statement(session, ids,
                                             many_statements=True)

    def test_triggers_stand_aside_only_in_the_window(self):
        _Actions(3).sync()
        node = models.Node
        with db_base.writer() as session:
            first = session.scalar(sa.select(sa.func.min(node.id)))
            with self._window(session, []):
                self.assertTrue(self._standing_aside(session))
                # Not told to the window: nobody counts it.
                session.execute(sa.update(node).where(node.id == first)
                                .values(memory_mb=node.memory_mb + 1))
            self.assertFalse(self._standing_aside(session))
        self.assertEqual(1, derived.check_counters().found)
        # Outside a window the triggers count: repaired, then a write
        # of the same kind stays exact.
        derived.check_counters(repair=True)
        with db_base.writer() as session:
            session.execute(sa.update(node).where(node.id == first)
                            .values(memory_mb=node.memory_mb + 1))
        self.assertEqual(0, derived.check_counters().found)
        self.assertSummaryExact()

    def test_window_counts_what_it_was_told(self):
        _Actions(4).sync()
        node = models.Node
        with db_base.reader() as session:
            every = list(session.scalars(sa.select(node.id)
                                         .order_by(node.id)))
        # Ids in one run (read by its range), in runs with gaps between
        # (the nodes between must not count), and in more runs than
        # counters.RANGES (read by the list of ids).
        for ids, ranges in ((every[:5], counters.RANGES),
                            (every[::2], counters.RANGES),
                            (every[::2], 1)):
            with fixtures.MockPatchObject(counters, 'RANGES', ranges):
                with db_base.writer() as session:
                    with self._window(session, ids):
                        session.execute(
                            sa.update(node).where(node.id.in_(ids))
                            .values(cpus=node.cpus + 3))
            self.assertEqual(0, derived.check_counters().found)
            self.assertSummaryExact()

    def test_an_error_in_the_window_leaves_the_triggers_on(self):
        _Actions(5).sync()
        with db_base.writer() as session:
            with testtools.ExpectedException(RuntimeError):
                with self._window(session, []):
                    raise RuntimeError('a failed write')
            self.assertFalse(self._standing_aside(session))

    def test_a_window_holds_no_counter_row_another_writer_uses(self):
        """Other writers never wait on a counter row for a window, nor
        for the rest of its transaction: it appends its counts."""
        _Actions(6).sync()
        node = models.Node
        counter = models.CapacityCounter

        def lock_every_counter_row():
            """Each row of the counters' own slots, by its key, as a
            claim's trigger writes one."""
            key = list(counter.__table__.primary_key.columns)
            with self.engine.connect() as other:
                for row in other.execute(sa.select(*key)).all():
                    # NOWAIT: an error if the window's transaction held it.
                    other.execute(sa.select(counter.slot).where(*[
                        column == value for column, value in zip(
                            key, row, strict=True)]).with_for_update(
                                nowait=True)).all()
                other.rollback()

        with db_base.writer() as session:
            ids = list(session.scalars(sa.select(node.id)))
            with self._window(session, ids):
                session.execute(sa.update(node).where(node.id.in_(ids))
                                .values(memory_mb=node.memory_mb + 1))
                lock_every_counter_row()
            lock_every_counter_row()
        self.assertEqual(0, derived.check_counters().found)
        self.assertSummaryExact()

    def test_many_statements_only_on_postgresql(self):
        """PostgreSQL's statement triggers count a few large statements
        themselves: the window stands them aside only when asked to."""
        _Actions(7).sync()
        with db_base.writer() as session:
            with counters.counted_by_statement(session, []):
                self.assertEqual(
                    self.engine.dialect.name == 'mysql',
                    self._standing_aside(session))

    def test_refresh_of_many_chunks_is_counted(self):
        _Actions(8).sync()
        self.useFixture(fixtures.MockPatchObject(db_base, 'CHUNK', 2))
        with db_base.writer() as session:
            session.execute(sa.update(models.Node).values(
                schedulable=sa.not_(models.Node.schedulable)))
        with db_base.writer() as session:
            db_nodes.refresh_flags(session)
        self.assertEqual(0, derived.check_counters().found)
        self.assertSummaryExact()

    def _appended(self):
        with db_base.reader() as session:
            return sum(session.scalar(
                sa.select(sa.func.count()).select_from(table).where(
                    table.c.slot >= models.SUMMARY_SLOTS))
                for table in counters.TABLES)

    def test_a_window_appends_its_counts_until_folded(self):
        """Rows of its own, no shared counter row written: the readers
        and the check sum them with the rest; fold moves them."""
        _Actions(9).sync()
        node = models.Node
        with db_base.writer() as session:
            ids = list(session.scalars(sa.select(node.id)))
            with self._window(session, ids):
                session.execute(sa.update(node).where(node.id.in_(ids))
                                .values(memory_mb=node.memory_mb + 1,
                                        maintenance=sa.not_(
                                            node.maintenance)))
                db_nodes.refresh_flags(session, ids)
        appended = self._appended()
        self.assertGreater(appended, 0)
        self.assertSummaryExact()
        self.assertEqual(0, derived.check_counters().found)

        self.assertEqual(appended, counters.fold())
        self.assertEqual(0, self._appended())
        self.assertEqual(0, counters.fold())
        self.assertSummaryExact()
        self.assertEqual(0, derived.check_counters().found)

    def test_the_windows_of_a_transaction_append_to_the_same_rows(self):
        """A sync's pages, each a window of one transaction, leave one
        set of rows to fold, not one a page."""
        _Actions(10).sync()
        counters.fold()  # what the sync appended
        node = models.Node

        def appended_by(windows):
            with db_base.writer() as session:
                ids = list(session.scalars(sa.select(node.id)))
                for _window in range(windows):
                    with self._window(session, ids):
                        session.execute(
                            sa.update(node).where(node.id.in_(ids))
                            .values(memory_mb=node.memory_mb + 1))
            self.assertSummaryExact()
            self.assertEqual(0, derived.check_counters().found)
            appended = self._appended()
            counters.fold()
            return appended

        one = appended_by(1)
        self.assertGreater(one, 0)
        self.assertEqual(one, appended_by(3))
        self.assertSummaryExact()
