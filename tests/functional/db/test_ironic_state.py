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

"""The database side of the Ironic source, on every backend: writing
pages of nodes, removing what a full pass did not see, stale nodes, the
sync state every process shares, and claims left to clear in Ironic.

tests/ironic drives the same functions from a real Ironic; here each is
pinned on SQLite, PostgreSQL and MariaDB.
"""

import datetime
import threading
import time
import uuid

import fixtures
from oslo_utils import timeutils
import sqlalchemy as sa

from reserveapi.common import exception
from reserveapi.common import heartbeat
from reserveapi.db import base as db_base
from reserveapi.db import inventory as db_inventory
from reserveapi.db import models
from reserveapi.db import node_sync
from reserveapi.db import nodes as db_nodes
from reserveapi.db import reservations as db_reservations
from reserveapi.inventory import claims
from reserveapi.inventory import lifecycle
from reserveapi.inventory import sources as inventory_sources
from reserveapi.inventory import sync as inventory_sync
from tests.functional import base


def node(name, **changes):
    """A normalized node, as both sources produce it."""
    result = {
        'uuid': str(uuid.uuid5(uuid.NAMESPACE_DNS, name)), 'name': name,
        'resource_class': 'CUSTOM_GOLD', 'memory_mb': 4096, 'cpus': 4,
        'local_gb': 100, 'cpu_arch': 'x86_64',
        'capabilities': {'boot_mode': 'uefi'}, 'traits': ['CUSTOM_A'],
        'provision_state': 'available', 'power_state': 'power off',
        'maintenance': False, 'retired': False, 'instance_uuid': None,
        'conductor_group': None, 'shard': None, 'owner': None,
        'lessee': None}
    result.update(changes)
    return result


def upsert(nodes, read_at=None):
    return node_sync.upsert_nodes(
        nodes, {n['uuid']: inventory_sync.fingerprint(n) for n in nodes},
        read_at or timeutils.utcnow())


class DBStateTestCase(base.DBTestCase):
    scenarios = base.EVERY_BACKEND

    def get(self, name):
        return db_nodes.get_node(name)

    def reserve(self, name, instance=None):
        return db_reservations.create_reservation(
            {'uuid': str(uuid.uuid4()),
             'instance_uuid': instance or str(uuid.uuid4()),
             'host': 'compute-1', 'project_id': None}, self.get(name))


class TestPages(DBStateTestCase):

    def test_pages_add_update_and_leave_unchanged_nodes_alone(self):
        self.assertEqual({'added': 2, 'updated': 0, 'unchanged': 0,
                          'refreshed': 0},
                         upsert([node('n1'), node('n2')]))
        first = self.get('n1')

        counts = upsert([node('n1'), node('n2', traits=['CUSTOM_B'],
                                          shard='s1', maintenance=True)])

        self.assertEqual({'added': 0, 'updated': 1, 'unchanged': 1,
                          'refreshed': 0}, counts)
        self.assertEqual(first, self.get('n1'))
        changed = self.get('n2')
        self.assertEqual((frozenset({'CUSTOM_B'}), 's1', True), (
            changed.traits, changed.shard, changed.maintenance))
        self.assertEqual({'boot_mode': 'uefi'}, changed.capabilities)

    def test_a_page_of_thousands_in_chunks(self):
        nodes = [node('bulk-%d' % i, shard='s%d' % (i % 3))
                 for i in range(2500)]
        self.assertEqual(2500, upsert(nodes)['added'])
        nodes[1700]['maintenance'] = True
        self.assertEqual({'added': 0, 'updated': 1, 'unchanged': 2499,
                          'refreshed': 0}, upsert(nodes))
        self.assertEqual(2500, db_nodes.count_nodes())
        self.assertEqual(833, len(db_nodes.list_nodes({'shard': 's1'})))

    def test_remove_missing_drops_free_nodes_and_flags_reserved_ones(self):
        upsert([node('keep'), node('free'), node('held')])
        self.reserve('held')

        self.assertEqual({'removed': 1, 'flagged': 1},
                         node_sync.remove_missing({node('keep')['uuid']}))

        self.assertEqual(['held', 'keep'], sorted(
            record.name for record in db_nodes.list_nodes()))
        self.assertTrue(self.get('held').vanished)
        # Listed again: no longer vanished.
        upsert([node('held')])
        self.assertFalse(self.get('held').vanished)


def release(reservation):
    """End ``reservation`` as a host's release does."""
    lifecycle.release_record(reservation, lambda record: None)


class TestStaleNodes(DBStateTestCase):
    """Released from the Ironic source (without claims), a node waits
    for a sync."""

    def setUp(self):
        super().setUp()
        self.config(source='ironic', group='inventory')
        self.config(claim_nodes=False, group='ironic')
        upsert([node('n1'), node('n2')])

    def candidates(self):
        return {record.name for record in db_nodes.list_nodes()
                if record.stale_since is None}

    def test_a_release_leaves_the_node_stale_until_read_again(self):
        reservation = self.reserve('n1')
        before_release = timeutils.utcnow()

        release(reservation)

        self.assertEqual({'n2'}, self.candidates())
        self.assertEqual([node('n1')['uuid']], db_nodes.list_stale(10))
        # A read that started before the release says nothing new.
        self.assertEqual(0, upsert([node('n1')], before_release)['refreshed'])
        self.assertEqual({'n2'}, self.candidates())
        self.assertEqual(1, upsert([node('n1')])['refreshed'])
        self.assertEqual({'n1', 'n2'}, self.candidates())
        self.assertEqual([], db_nodes.list_stale(10))

    def test_a_stale_node_cannot_be_reserved(self):
        # Read as a candidate before it went stale, claimed after.
        candidate = self.get('n1')
        reservation = self.reserve('n1')
        lifecycle.end_contradicted(reservation, 'the test ended it')

        self.assertRaises(
            exception.NodeAlreadyReserved, db_reservations.create_reservation,
            {'uuid': str(uuid.uuid4()), 'instance_uuid': str(uuid.uuid4()),
             'host': 'compute-1', 'project_id': None}, candidate)
        # Ending what is already gone is fine, and changes nothing.
        lifecycle.end_contradicted(reservation, 'the test ended it')
        self.assertEqual({'n2'}, self.candidates())

    def test_a_file_sync_reads_everything_again(self):
        release(self.reserve('n1'))
        nodes = [node('n1'), node('n2')]
        node_sync.sync_nodes(lambda: [(nodes, {
            n['uuid']: inventory_sync.fingerprint(n) for n in nodes})])
        self.assertEqual({'n1', 'n2'}, self.candidates())


class TestSyncState(DBStateTestCase):

    def test_one_row_per_source_records_each_pass(self):
        self.assertIsNone(db_inventory.get_inventory_sync('ironic'))
        started = timeutils.utcnow()
        watermark = datetime.datetime(2030, 1, 1)
        db_inventory.record_inventory_sync('ironic', 7, started,
                                           watermark=watermark,
                                           location='http://ironic')
        later = started + datetime.timedelta(minutes=1)
        db_inventory.record_inventory_sync('ironic', 8, later, full=False)

        state = db_inventory.get_inventory_sync('ironic')
        self.assertEqual(
            ('ironic', later, 8, started, watermark, 'http://ironic'),
            (state.source, state.synced_at, state.nodes,
             state.full_synced_at, state.watermark, state.location))

    def test_an_outage_is_noted_once_and_ended_by_a_sync(self):
        self.assertTrue(db_inventory.note_outage('ironic', 'refused'))
        self.assertFalse(db_inventory.note_outage('ironic', 'again'))
        state = db_inventory.get_inventory_sync('ironic')
        self.assertIsNotNone(state.outage_since)
        self.assertIsNone(state.synced_at)
        self.assertEqual('refused', state.last_error)

        began = db_inventory.record_inventory_sync('ironic', 1)

        self.assertEqual(state.outage_since, began)
        state = db_inventory.get_inventory_sync('ironic')
        self.assertEqual((None, None), (state.outage_since,
                                        state.last_error))
        self.assertIsNone(db_inventory.record_inventory_sync('ironic', 1))

    def test_one_lease_holder_at_a_time(self):
        self.assertTrue(db_inventory.take_sync_lease('ironic', 'w1', 60))
        self.assertFalse(db_inventory.take_sync_lease('ironic', 'w2', 60))
        self.assertTrue(db_inventory.take_sync_lease('ironic', 'w1', 60))
        db_inventory.drop_sync_lease('ironic', 'w2')  # not its lease
        self.assertFalse(db_inventory.take_sync_lease('ironic', 'w2', 60))
        db_inventory.drop_sync_lease('ironic', 'w1')
        self.assertTrue(db_inventory.take_sync_lease('ironic', 'w2', 60))
        # An expired lease is anybody's.
        later = timeutils.utcnow() + datetime.timedelta(seconds=61)
        self.assertTrue(db_inventory.take_sync_lease('ironic', 'w3', 60,
                                                     now=later))


class TestClaimsToClear(DBStateTestCase):
    """Reservations claiming their nodes in Ironic, ended by this
    process, which stops before it clears a claim itself (Ironic is
    never asked here): a worker clears it once its lease lapses."""

    LATER = datetime.timedelta(seconds=61)

    def setUp(self):
        super().setUp()
        self.config(source='ironic', group='inventory')
        self.useFixture(fixtures.MockPatchObject(inventory_sources,
                                                 'ironic_source'))
        self.useFixture(fixtures.MockPatchObject(claims, 'clear_quietly'))

    def released(self, name='n1'):
        """A reservation of node ``name`` released, its claim asked to be
        cleared by this process; the (node uuid, instance) pair."""
        upsert([node(name)])
        reservation = self.reserve(name)
        release(reservation)
        return reservation.node_uuid, reservation.instance_uuid

    def expired(self, name='n1'):
        """A reservation of node ``name`` expired, its claim asked to be
        cleared by a worker at once; the (node uuid, instance) pair."""
        upsert([node(name)])
        reservation = self.reserve(name)
        lifecycle.expire(timeutils.utcnow() + datetime.timedelta(seconds=1))
        return reservation.node_uuid, reservation.instance_uuid

    def stale(self, name):
        with db_base.reader() as session:
            return session.execute(sa.select(
                models.Node.stale_since.is_not(None),
                models.Node.schedulable).where(
                models.Node.name == name)).one() == (True, False)

    def test_a_clear_is_asked_with_the_end(self):
        upsert([node('n1')])
        instance = str(uuid.uuid4())
        self.reserve('n1', instance)
        self.assertTrue(db_inventory.holds_live(node('n1')['uuid'],
                                                instance))

        lifecycle.expire(timeutils.utcnow() + datetime.timedelta(seconds=1))

        self.assertFalse(db_inventory.holds_live(node('n1')['uuid'],
                                                 instance))
        due, = db_inventory.due_claims_to_clear(10)
        self.assertEqual((node('n1')['uuid'], instance, 0),
                         (due.node_uuid, due.instance_uuid, due.attempts))

    def test_a_node_awaiting_its_clear_is_not_offered(self):
        pair = self.expired()
        # A sync that reads the node again keeps it out of matching...
        upsert([node('n1')])
        self.assertTrue(self.stale('n1'))
        # ... and does not even re-read it: the clear does.
        self.assertEqual([], db_nodes.list_stale(10))

        generation = db_inventory.take_claim_to_clear(*pair, 'w1', 60)
        self.assertTrue(db_inventory.finish_claim_to_clear(
            *pair, 'w1', generation))
        self.assertEqual([node('n1')['uuid']], db_nodes.list_stale(10))
        upsert([node('n1')])
        self.assertFalse(self.stale('n1'))

    def test_one_clearer_at_a_time(self):
        pair = self.released()
        ours = heartbeat.holder()
        # Leased to the process that ended the reservation: no worker
        # takes it, no other process clears it.
        self.assertEqual([], db_inventory.due_claims_to_clear(10))
        self.assertIsNone(db_inventory.take_claim_to_clear(*pair, 'w1', 60))
        self.assertFalse(db_inventory.renew_claim_to_clear(*pair, 'w1', 60))
        self.assertEqual(0, db_inventory.take_claim_to_clear(*pair, ours,
                                                             60))
        self.assertTrue(db_inventory.renew_claim_to_clear(*pair, ours, 60))
        # Another's finish is no finish.
        self.assertFalse(db_inventory.finish_claim_to_clear(*pair, 'w1', 0))
        self.assertEqual(1, db_inventory.count_claims_to_clear())
        # A lease that lapsed (its process died) is anybody's.
        later = timeutils.utcnow() + self.LATER
        self.assertEqual(1, len(db_inventory.due_claims_to_clear(
            10, now=later)))
        self.assertEqual(0, db_inventory.take_claim_to_clear(
            *pair, 'w1', 60, now=later))
        self.assertIsNone(db_inventory.take_claim_to_clear(
            *pair, ours, 60, now=later))

    def test_asked_again_meanwhile_is_not_finished(self):
        pair = self.expired()
        generation = db_inventory.take_claim_to_clear(*pair, 'w1', 60)
        db_inventory.request_claim_to_clear(*pair,
                                            db_inventory.ClearRequest())

        self.assertFalse(db_inventory.finish_claim_to_clear(
            *pair, 'w1', generation))

        # Kept, unleased and due at once, for a clear that reads Ironic
        # after the new request.
        due, = db_inventory.due_claims_to_clear(10)
        again = db_inventory.take_claim_to_clear(*pair, 'w2', 60)
        self.assertEqual(generation + 1, again)
        self.assertTrue(db_inventory.finish_claim_to_clear(*pair, 'w2',
                                                           again))
        self.assertEqual(0, db_inventory.count_claims_to_clear())

    def test_postponed_then_finished(self):
        pair = self.expired()
        generation = db_inventory.take_claim_to_clear(*pair, 'w1', 60)
        later = timeutils.utcnow() + datetime.timedelta(minutes=5)

        db_inventory.postpone_claim_to_clear(*pair, 'w1', 'refused', later)

        self.assertEqual([], db_inventory.due_claims_to_clear(10))
        again, = db_inventory.due_claims_to_clear(10, now=later)
        self.assertEqual((1, 'refused'), (again.attempts, again.last_error))
        self.assertEqual(generation, db_inventory.take_claim_to_clear(
            *pair, 'w2', 60, now=later))
        self.assertTrue(db_inventory.finish_claim_to_clear(
            *pair, 'w2', generation))
        self.assertEqual(0, db_inventory.count_claims_to_clear())

    def test_a_claim_made_again_is_guarded_by_a_row_of_its_own(self):
        upsert([node('n1')])
        reservation = self.reserve('n1')
        pair = reservation.node_uuid, reservation.instance_uuid

        self.assertEqual(0, db_inventory.guard_ironic_claim(
            *pair, 'api1', 60, delay=20))

        # Leased to the claiming process, the node not offered, and due
        # only once the claim must have landed should that process die.
        self.assertTrue(self.stale('n1'))
        self.assertIsNone(db_inventory.take_claim_to_clear(*pair, 'w1', 60))
        self.assertIsNone(db_inventory.guard_ironic_claim(
            *pair, 'w1', 60, delay=20))
        self.assertEqual([], db_inventory.due_claims_to_clear(
            10, now=timeutils.utcnow() + datetime.timedelta(seconds=19)))
        self.assertEqual(1, len(db_inventory.due_claims_to_clear(
            10, now=timeutils.utcnow() + self.LATER)))
        # The reservation still stands: the claim's row goes.
        self.assertTrue(db_inventory.finish_claim_to_clear(*pair, 'api1', 0))
        self.assertEqual(0, db_inventory.count_claims_to_clear())

    def test_a_claim_made_again_waits_for_a_clear_under_way(self):
        pair = self.released()

        self.assertIsNone(db_inventory.guard_ironic_claim(
            *pair, 'w1', 60, delay=20))

        # Nothing written: the clear finishes as it would have.
        self.assertTrue(db_inventory.finish_claim_to_clear(
            *pair, heartbeat.holder(), 0))
        self.assertEqual(0, db_inventory.count_claims_to_clear())

    def test_a_release_while_claiming_again_outlives_the_claim(self):
        upsert([node('n1')])
        reservation = self.reserve('n1')
        pair = reservation.node_uuid, reservation.instance_uuid
        generation = db_inventory.guard_ironic_claim(*pair, 'api1', 60,
                                                     delay=20)

        release(reservation)

        # The release's process cannot clear while the claim is on its
        # way, and the claim's finish leaves the clearing row due at once.
        self.assertIsNone(db_inventory.take_claim_to_clear(
            *pair, heartbeat.holder(), 60))
        self.assertFalse(db_inventory.finish_claim_to_clear(
            *pair, 'api1', generation))
        due, = db_inventory.due_claims_to_clear(10)
        self.assertEqual(pair, (due.node_uuid, due.instance_uuid))

    def test_a_release_outlives_a_guard_finished_under_it(self):
        """Issue 46's race: the worker's claim made again finds the
        reservation standing and finishes its guard row while the
        reservation's release, which read that row, is writing its own
        request: the release must leave a row, or nothing ever clears
        the claim the worker made."""
        upsert([node('n1')])
        reservation = self.reserve('n1')
        pair = reservation.node_uuid, reservation.instance_uuid
        self.assertEqual(0, db_inventory.guard_ironic_claim(
            *pair, 'worker', 60, delay=20))
        deleted = threading.Event()

        def finish_slowly():
            # finish_claim_to_clear's DELETE, committed a second later.
            with db_base.writer() as session:
                session.execute(sa.delete(models.ClaimToClear).where(
                    models.ClaimToClear.node_uuid == pair[0]))
                deleted.set()
                time.sleep(1)

        finisher = threading.Thread(target=finish_slowly)
        finisher.start()
        self.addCleanup(finisher.join)
        self.assertTrue(deleted.wait(10))
        release(reservation)
        finisher.join()

        self.assertEqual(1, db_inventory.count_claims_to_clear())
        self.assertEqual(0, db_inventory.take_claim_to_clear(
            *pair, heartbeat.holder(), 60))

    def test_expiry_asks_clears_and_stales_nodes(self):
        upsert([node('n1'), node('n2')])
        old = self.reserve('n1')
        cutoff = timeutils.utcnow()
        self.reserve('n2')

        expired, = lifecycle.expire(cutoff)

        self.assertEqual((old.uuid, 'expired'), (expired.uuid, expired.state))
        self.assertIsNotNone(expired.expires_at)
        self.assertTrue(self.stale('n1'))
        due, = db_inventory.due_claims_to_clear(10)
        self.assertEqual((old.node_uuid, old.instance_uuid),
                         (due.node_uuid, due.instance_uuid))


class TestDisagreements(DBStateTestCase):

    def test_what_the_synced_inventory_contradicts(self):
        ours, theirs = str(uuid.uuid4()), str(uuid.uuid4())
        upsert([node(name) for name in ('agree', 'unclaimed', 'taken',
                                        'gone', 'young')])
        reservations = {name: self.reserve(name, ours if name == 'agree'
                                           else None)
                        for name in ('agree', 'unclaimed', 'taken', 'gone')}
        cutoff = timeutils.utcnow()
        self.reserve('young')
        upsert([node('agree', instance_uuid=ours),
                node('taken', instance_uuid=theirs)])
        node_sync.remove_missing({node(name)['uuid'] for name in (
            'agree', 'unclaimed', 'taken', 'young')})

        found = db_reservations.list_disagreements(cutoff, True, 10)
        without_claims = db_reservations.list_disagreements(cutoff, False,
                                                            10)

        self.assertEqual(
            {reservations['unclaimed'].uuid: (None, False),
             reservations['taken'].uuid: (theirs, False),
             reservations['gone'].uuid: (None, True)},
            {record.uuid: (instance, vanished)
             for record, instance, vanished in found})
        self.assertEqual(
            {reservations['taken'].uuid, reservations['gone'].uuid},
            {record.uuid for record, _i, _v in without_claims})


class TestNewNodeFlag(DBStateTestCase):
    """PostgreSQL writes a new node's ``schedulable`` flag with the insert,
    as refresh_flags would (elsewhere refresh_flags writes it after)."""

    scenarios = [base.POSTGRESQL]

    def test_the_insert_writes_what_refresh_would(self):
        self.useFixture(fixtures.MockPatchObject(db_nodes, 'refresh_flags'))
        upsert([node('free'), node('maintenance', maintenance=True),
                node('retired', retired=True),
                node('deployed', provision_state='active',
                     instance_uuid=str(uuid.uuid4())),
                node('unknown-power', power_state=None),
                node('cleaning', provision_state='cleaning')])
        with db_base.reader() as session:
            flags = dict(session.execute(
                sa.select(models.Node.name, models.Node.schedulable)).all())
        self.assertEqual({'free': True, 'maintenance': False,
                          'retired': False, 'deployed': False,
                          'unknown-power': False, 'cleaning': False}, flags)
