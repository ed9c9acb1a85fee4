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

"""Ironic as the inventory, end to end: the real API (on SQLite), the
real sync and worker, the real Ironic.

Nodes are seeded straight into Ironic's database unless the API path is
what is tested; seeded nodes are ``available`` and powered off.
"""

import datetime
import json
import logging
import sqlite3
import threading
import uuid as uuidlib

import fixtures
from oslo_upgradecheck import upgradecheck
from oslo_utils import timeutils
import prometheus_client
import sqlalchemy as sa

from reserveapi.cmd import status
from reserveapi.common import exception
from reserveapi.common import heartbeat
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
from reserveapi_testing import examples
from tests.ironic import base

V1_1 = {'OpenStack-API-Version': 'baremetal-reservation 1.1'}
EXPECTED_INSTANCE_INFO = {
    'capabilities': json.dumps({'boot_mode': 'uefi'}),
    'traits': ['CUSTOM_RAID', 'HW_CPU_X86_AVX2'],
    'claimed_by': 'reserveapi',
}
"""What Nova's patcher writes for the example request spec, and the
mark of our claims."""


class ProcessDied(BaseException):
    """A process killed at that point: nothing after it runs, not even
    an ``except Exception``."""


class InventoryTestCase(base.IronicAPITestCase):

    def get_nodes(self, query=''):
        response = self.request('GET', '/v1/nodes' + query,
                                headers=dict(self.admin_headers, **V1_1))
        self.assertEqual(200, response.status_int, response.text)
        return response.json

    def nodes_by_uuid(self):
        return {node['uuid']: node for node in self.get_nodes()['nodes']}

    def reserve(self, instance=None, status=None, **fields):
        body = {'instance_uuid': instance or str(uuidlib.uuid4()),
                'host': 'compute-1', 'request_spec': examples.REQUEST_SPEC}
        body.update(fields)
        response = self.request('POST', '/v1/reservations', body,
                                headers=dict(self.admin_headers, **V1_1))
        if status is not None:
            self.assertEqual(status, response.status_int, response.text)
        return response

    def release(self, reservation):
        response = self.request('DELETE',
                                '/v1/reservations/' + reservation['uuid'])
        self.assertEqual(204, response.status_int, response.text)

    def live_reservations(self):
        return [r for r in self.request('GET', '/v1/reservations').json[
            'reservations'] if r['state'] != 'expired']


class TestSync(InventoryTestCase):

    def test_a_full_sync_of_every_node_in_every_state(self):
        self.config(page_size=100, group='ironic')
        states = ('available', 'enroll', 'manageable', 'active', 'cleaning',
                  'deploy failed', 'error', 'inspect wait')
        uuids = self.seed(
            240, provision_state=lambda i: states[i % len(states)],
            properties=lambda i: dict(base.GOLD['properties'], **(
                {'memory_mb': '8192', 'cpus': '8', 'local_gb': '100'}
                if i % 2 else {})),
            traits=lambda i: ['HW_CPU_X86_AVX2', 'CUSTOM_RAID'],
            instance_uuid=lambda i: (str(uuidlib.uuid4())
                                     if states[i % len(states)] == 'active'
                                     else None),
            shard=lambda i: 'shard-%d' % (i % 3))

        stdout = self.sync_nodes()

        self.assertIn('Nodes: 240 added', stdout)
        listed = self.nodes_by_uuid()
        self.assertEqual(set(uuids), set(listed))
        self.assertEqual(set(states), {n['provision_state']
                                       for n in listed.values()})
        node = listed[uuids[1]]
        self.assertEqual(
            ('CUSTOM_BAREMETAL_GOLD', 8192, 8, 100,
             {'boot_mode': 'uefi', 'has_gpu': 'true',
              'supports_uefi': 'true'},
             ['CUSTOM_RAID', 'HW_CPU_X86_AVX2'], 'shard-1', None),
            tuple(node[key] for key in (
                'resource_class', 'memory_mb', 'cpus', 'local_gb',
                'capabilities', 'traits', 'shard', 'conductor_group')))
        inventory = self.get_nodes('?limit=1')['inventory']
        self.assertEqual(('ironic', self.ironic.endpoint, None), (
            inventory['source'], inventory['location'],
            inventory['unreachable_since']))
        self.assertEqual(inventory['synced_at'], inventory['full_synced_at'])
        self.assertIn('Nodes: 0 added, 0 updated, 240 unchanged',
                      self.sync_nodes())
        # sync-nodes is always a full pass: a deletion in Ironic shows.
        self.ironic.request('DELETE', '/v1/nodes/%s' % uuids[0],
                            expected=(204,))
        self.assertIn('239 unchanged, 1 removed', self.sync_nodes())

    def test_the_worker_picks_up_changes_and_deletions(self):
        traits, maintenance, taken, capabilities, deleted, quiet = (
            self.seed(6))
        self.sync_nodes()
        self.ironic.set_traits(traits, ['CUSTOM_RAID', 'CUSTOM_NEW'])
        self.ironic.update_node(maintenance, maintenance=True)
        other = str(uuidlib.uuid4())
        self.ironic.update_node(taken, instance_uuid=other)
        self.ironic.update_node(capabilities, properties=dict(
            base.GOLD['properties'], capabilities='boot_mode:bios'))
        self.ironic.request('DELETE', '/v1/nodes/%s' % deleted,
                            expected=(204,))
        # Created through the API: no updated_at until it changes.
        created = self.ironic.create_node(
            name='brand-new', resource_class=base.GOLD['resource_class'],
            properties=base.GOLD['properties'])
        self.assertIsNone(created['updated_at'])

        self.assertEqual(0, self.run_worker_once())

        nodes = self.nodes_by_uuid()
        self.assertEqual(['CUSTOM_NEW', 'CUSTOM_RAID'],
                         nodes[traits]['traits'])
        self.assertTrue(nodes[maintenance]['maintenance'])
        self.assertEqual(other, nodes[taken]['instance_uuid'])
        self.assertEqual({'boot_mode': 'bios'},
                         nodes[capabilities]['capabilities'])
        self.assertEqual('enroll', nodes[created['uuid']]['provision_state'])
        # Deletions come with a full pass: sync-nodes, or the worker's
        # when [inventory] full_sync_interval has passed.
        self.assertIn(deleted, nodes)
        self.config(full_sync_interval=0, group='inventory')
        self.assertEqual(0, self.run_worker_once())
        self.assertNotIn(deleted, self.nodes_by_uuid())
        self.assertIn(quiet, self.nodes_by_uuid())

    def test_a_quiet_incremental_pass_reads_only_the_newest(self):
        old = datetime.datetime(2020, 1, 1)
        self.seed(300, created_at=old, updated_at=lambda i: (
            old + datetime.timedelta(minutes=2 * i)))
        self.sync_nodes()
        since = self.ironic.log_position()

        self.assertEqual(0, self.run_worker_once())

        # The sync's requests (the reconcile pass lists the claimed
        # available nodes, which are none here, in one more).
        requests = [line for line in self.ironic.read_log(since).splitlines()
                    if 'GET /v1/nodes' in line and 'sort_key=' in line]
        self.assertEqual(2, len(requests), requests)
        self.assertTrue(all('limit=50' in line for line in requests))

    def test_only_the_configured_partition(self):
        self.seed(9, shard=lambda i: 'shard-%d' % (i % 3),
                  conductor_group=lambda i: ('', 'rack-a', 'rack-b')[i // 3])
        self.config(shard='shard-1', conductor_group='rack-a',
                    group='ironic')
        self.sync_nodes()
        listed = self.get_nodes()['nodes']
        self.assertEqual([('rack-a', 'shard-1')], [
            (node['conductor_group'], node['shard']) for node in listed])


class TestClaims(InventoryTestCase):

    def test_a_reservation_claims_the_node_as_nova_would(self):
        node, = self.seed(1)
        self.sync_nodes()
        instance = str(uuidlib.uuid4())

        created = self.reserve(instance, status=201).json
        again = self.reserve(instance, status=200).json

        self.assertEqual(created, again)
        self.assertEqual(node, created['node_uuid'])
        in_ironic = self.ironic.get_node(node)
        self.assertEqual((instance, EXPECTED_INSTANCE_INFO), (
            in_ironic['instance_uuid'], in_ironic['instance_info']))

        self.release(created)

        in_ironic = self.ironic.get_node(node)
        self.assertEqual((None, {}), (in_ironic['instance_uuid'],
                                      in_ironic['instance_info']))
        # Ironic's answer to the release was a fresh read: no sync needed
        # to give the node out again.
        self.assertIsNone(self.nodes_by_uuid()[node]['stale_since'])
        self.assertEqual(node, self.reserve(status=201).json['node_uuid'])

    def test_release_of_a_node_gone_from_ironic(self):
        node, = self.seed(1)
        self.sync_nodes()
        reservation = self.reserve(status=201).json
        self.ironic.update_node(node, instance_uuid=None)
        self.ironic.request('DELETE', '/v1/nodes/%s' % node,
                            expected=(204,))

        self.release(reservation)

        self.assertEqual([], self.live_reservations())
        self.assertEqual(0, db_inventory.count_claims_to_clear())

    def test_without_claims_reservations_come_from_the_inventory(self):
        node, = self.seed(1)
        self.sync_nodes()
        self.config(claim_nodes=False, group='ironic')
        self.ironic.stop()

        reservation = self.reserve(status=201).json

        self.assertEqual(node, reservation['node_uuid'])
        self.ironic.start()
        self.assertIsNone(self.ironic.get_node(node)['instance_uuid'])
        self.release(reservation)
        self.assertEqual(0, db_inventory.count_claims_to_clear())

    def test_a_node_claimed_behind_our_back_is_never_given(self):
        uuids = self.seed(4)
        self.sync_nodes()
        other = str(uuidlib.uuid4())
        self.ironic.update_node(uuids[0], instance_uuid=other)
        self.ironic.set_provision_state(uuids[1], 'manage')
        self.ironic.wait_for([uuids[1]], provision_state='manageable')

        answers = [self.reserve() for _ in range(4)]

        self.assertEqual([201, 201, 409, 409],
                         sorted(a.status_int for a in answers))
        given = {a.json['node_uuid'] for a in answers if a.status_int == 201}
        self.assertEqual(set(uuids[2:]), given)
        self.assertEqual(other, self.ironic.get_node(uuids[0])[
            'instance_uuid'])
        manageable = self.ironic.get_node(uuids[1])
        self.assertEqual((None, {}), (manageable['instance_uuid'],
                                      manageable['instance_info']))
        nodes = self.nodes_by_uuid()
        self.assertIsNotNone(nodes[uuids[0]]['stale_since'])
        # A sync reads them again: no longer stale, still not eligible.
        self.run_worker_once()
        nodes = self.nodes_by_uuid()
        self.assertEqual((None, other), (nodes[uuids[0]]['stale_since'],
                                         nodes[uuids[0]]['instance_uuid']))
        self.assertEqual(2, len(self.live_reservations()))

    def test_a_locked_node_is_retried_then_passed_over(self):
        # Another conductor holds the lock of the best fitting node:
        # Ironic answers NodeLocked (after its own retries), which is
        # retried [ironic] node_locked_retries times, then the next
        # candidate is claimed in the same request.
        self.config(subset_size=1, group='matcher')
        bigger = dict(base.GOLD['properties'], memory_mb=16384, cpus=16,
                      local_gb=200)
        locked, free = self.seed(
            2, reservation=lambda i: 'another-conductor' if i == 0 else None,
            properties=lambda i: bigger if i else base.GOLD['properties'])
        self.sync_nodes()
        since = self.ironic.log_position()

        reservation = self.reserve(status=201).json

        self.assertEqual(free, reservation['node_uuid'])
        self.assertEqual(
            2, self.ironic.read_log(since).count('PATCH /v1/nodes/%s'
                                                 % locked))
        in_ironic = self.ironic.get_node(locked)
        self.assertEqual((None, {}), (in_ironic['instance_uuid'],
                                      in_ironic['instance_info']))
        self.assertIsNotNone(self.nodes_by_uuid()[locked]['stale_since'])

    def test_a_released_node_is_not_given_while_cleaning(self):
        node, = self.seed(1, automated_clean=True)
        self.sync_nodes()
        reservation = self.reserve(status=201).json
        self.ironic.deploy(node, reservation['instance_uuid'])
        self.ironic.set_provision_state(node, 'deleted')
        self.ironic.wait_for([node], provision_state='cleaning',
                             settled=False, timeout=10)

        self.release(reservation)

        refused = self.reserve(status=409).json['errors'][0]['detail']
        self.assertIn('1 not available', refused)
        self.ironic.wait_for([node], provision_state='available')
        self.run_worker_once()
        self.assertEqual(node, self.reserve(status=201).json['node_uuid'])

    def test_partitions_in_the_request(self):
        # Ironic refuses claims in a conductor group no conductor serves,
        # so nodes differ by shard here (the sync's own conductor_group
        # option is TestSync's).
        shard_0, shard_1 = self.seed(2, shard=lambda i: 'shard-%d' % i)
        self.sync_nodes()
        refused = self.reserve(status=409, conductor_group='rack-a').json
        self.assertIn('2 in another partition',
                      refused['errors'][0]['detail'])
        self.assertEqual(shard_1, self.reserve(
            status=201, conductor_group='', shard='shard-1').json[
                'node_uuid'])
        self.assertEqual(shard_0, self.reserve(
            status=201, shard='shard-0').json['node_uuid'])


class TestOutage(InventoryTestCase):

    def test_ironic_down_then_back(self):
        seeded = self.seed(2)
        self.sync_nodes()
        reservation = self.reserve(status=201).json
        instance = reservation['instance_uuid']
        held = reservation['node_uuid']
        spare, = set(seeded) - {held}
        logs = self.useFixture(fixtures.FakeLogger(level=logging.ERROR))
        self.ironic.stop()

        refused = self.reserve(status=503).json['errors'][0]
        self.assertEqual('reserveapi.ironic_unavailable', refused['code'])
        self.assertEqual([reservation['uuid']],
                         [r['uuid'] for r in self.live_reservations()])
        self.release(reservation)        # 204: Ironic is cleared later
        for _ in range(2):
            self.run_worker_once()
        listed = self.get_nodes()
        self.assertEqual(2, len(listed['nodes']))
        self.assertIsNotNone(listed['inventory']['unreachable_since'])
        self.assertIn('Ironic is unavailable',
                      listed['inventory']['last_error'])
        self.assertEqual(1, logs.output.count('Ironic is unreachable'))
        self.assertEqual(instance, self.ironic_node_instance(held))

        self.ironic.start()
        # Reservations work again at once; the worker clears the claim
        # the release could not, and notes that Ironic is back.
        self.assertEqual(spare, self.reserve(status=201).json['node_uuid'])
        self.assertEqual(0, self.run_worker_once())
        self.assertIsNone(self.ironic.get_node(held)['instance_uuid'])
        self.assertEqual(0, db_inventory.count_claims_to_clear())
        self.assertIsNone(self.get_nodes()['inventory']['unreachable_since'])

    def ironic_node_instance(self, node):
        """Straight from Ironic's database: Ironic is down."""
        conn = sqlite3.connect(self.ironic.db_path)
        try:
            return conn.execute('SELECT instance_uuid FROM nodes WHERE '
                                'uuid = ?', (node,)).fetchone()[0]
        finally:
            conn.close()


class TestReconcile(InventoryTestCase):

    def test_disagreements_are_repaired_and_logged(self):
        lost, taken, gone = self.seed(3)
        self.sync_nodes()
        reservations = {}
        for node in (lost, taken, gone):
            reservation = self.reserve(status=201, candidate_nodes=[node])
            reservations[node] = reservation.json
        # Behind our back: a claim cleared, a claim replaced, a node gone.
        self.ironic.update_node(lost, instance_uuid=None)
        other = str(uuidlib.uuid4())
        self.ironic.update_node(taken, instance_uuid=None)
        self.ironic.update_node(taken, instance_uuid=other)
        self.ironic.update_node(gone, instance_uuid=None)
        self.ironic.request('DELETE', '/v1/nodes/%s' % gone,
                            expected=(204,))
        inventory_sync.sync(full=True)
        logs = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))

        self.assertEqual(0, self.run_worker_once())

        self.assertEqual(reservations[lost]['instance_uuid'],
                         self.ironic.get_node(lost)['instance_uuid'])
        self.assertEqual([reservations[lost]['uuid']],
                         [r['uuid'] for r in self.live_reservations()])
        self.assertIn('claimed it again', logs.output)
        for node in (taken, gone):
            self.assertIn('Ended reservation %s' % reservations[node]['uuid'],
                          logs.output)
        self.assertEqual(other, self.ironic.get_node(taken)['instance_uuid'])


    def orphans_counted(self):
        return prometheus_client.REGISTRY.get_sample_value(
            'reserveapi_ironic_orphan_claims_total') or 0

    def test_a_claim_of_ours_left_behind_is_cleared_after_its_grace(self):
        orphan, foreign, held = self.seed(3)
        self.sync_nodes()
        reservation = self.reserve(status=201, candidate_nodes=[held]).json
        # Issue 46's leak: a claim of ours that no reservation holds and
        # no clearing row stands for; beside it another tool's claim.
        lost_instance, other = str(uuidlib.uuid4()), str(uuidlib.uuid4())
        self.ironic.update_node(
            orphan, instance_uuid=lost_instance,
            instance_info={'claimed_by': 'reserveapi'})
        self.ironic.update_node(foreign, instance_uuid=other)
        before = self.orphans_counted()
        logs = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))

        # Younger than the grace: perhaps on its way to a reservation.
        self.config(orphan_claim_grace=3600, group='ironic')
        self.assertEqual(0, ironic_reconcile.reconcile()['orphaned'])
        self.assertEqual(lost_instance,
                         self.ironic.get_node(orphan)['instance_uuid'])

        self.config(orphan_claim_grace=0, group='ironic')
        self.assertEqual(1, ironic_reconcile.reconcile()['orphaned'])

        self.assertEqual((None, {}), (
            self.ironic.get_node(orphan)['instance_uuid'],
            self.ironic.get_node(orphan)['instance_info']))
        self.assertEqual(other,
                         self.ironic.get_node(foreign)['instance_uuid'])
        self.assertEqual(reservation['instance_uuid'],
                         self.ironic.get_node(held)['instance_uuid'])
        self.assertEqual(1, self.orphans_counted() - before)
        self.assertEqual(
            ['Ironic node %s carries a claim of ours for instance %s that no '
             'reservation holds and no clear stands for; clearing it.'
             % (orphan, lost_instance)],
            [line for line in logs.output.splitlines() if orphan in line])
        self.assertEqual(0, db_inventory.count_claims_to_clear())
        # Cleared: the next pass finds nothing, and the node is given.
        self.assertEqual(0, ironic_reconcile.reconcile()['orphaned'])
        self.assertEqual(orphan, self.reserve(
            status=201, candidate_nodes=[orphan]).json['node_uuid'])


class TestStatus(InventoryTestCase):

    def check(self, name):
        result = getattr(status.Checks(), '_check_' + name)()
        return result.code, result.details

    def test_the_source_check_and_an_outage(self):
        self.seed(2)
        self.sync_nodes()
        code, details = self.check('inventory_source')
        self.assertEqual(upgradecheck.Code.SUCCESS, code, details)
        self.assertIn('microversion 1.82', details)
        self.assertEqual(upgradecheck.Code.SUCCESS,
                         self.check('inventory_sync')[0])

        self.ironic.stop()
        self.run_worker_once()

        code, details = self.check('inventory_source')
        self.assertEqual(upgradecheck.Code.FAILURE, code)
        self.assertIn('Cannot list Ironic nodes', details)
        code, details = self.check('inventory_sync')
        self.assertEqual(upgradecheck.Code.WARNING, code)
        self.assertIn('unreachable since', details)


class TestClaimsUnderCrashes(InventoryTestCase):
    """What issue 19's fault soak found, each race played out in order
    against the real Ironic (tests/system/soak plays them at random)."""

    def node_instance(self, node):
        return self.ironic.get_node(node)['instance_uuid']

    def pending_clear(self, node, instance):
        """A released reservation's claim left for later, as when the
        process that released it died before clearing it."""
        reservation = self.reserve(instance, status=201,
                                   candidate_nodes=[node]).json
        with fixtures.MockPatchObject(claims, 'clear_quietly'):
            self.release(reservation)
        self.assertEqual(instance, self.node_instance(node))
        return reservation

    def test_a_node_whose_claim_is_being_cleared_is_not_given(self):
        node, = self.seed(1)
        self.sync_nodes()
        ours = str(uuidlib.uuid4())
        self.pending_clear(node, ours)
        # Its lease lapses (the process died); a sync reads the node,
        # still claimed by the ended reservation's instance: not given.
        inventory_sync.sync(full=True)
        refused = self.reserve(status=409).json['errors'][0]['detail']
        self.assertIn('1 node: 1 with an instance', refused)

        later = timeutils.utcnow() + datetime.timedelta(
            seconds=heartbeat.SECONDS + 1)
        with fixtures.MockPatchObject(timeutils, 'utcnow',
                                      return_value=later):
            self.assertEqual(1, claims.clear_due(
                inventory_sources.ironic_source()))

        self.assertIsNone(self.node_instance(node))
        self.assertEqual(node, self.reserve(status=201).json['node_uuid'])

    def test_a_second_clearer_waits_and_never_wipes_a_newer_claim(self):
        node, = self.seed(1)
        self.sync_nodes()
        ours = str(uuidlib.uuid4())
        self.pending_clear(node, ours)
        source = inventory_sources.ironic_source()
        clear_claim = source.clear_claim
        read, go_on = threading.Event(), threading.Event()

        def slow_clear(*args):
            # The first clearer reads the node, then waits on Ironic's
            # node lock (as the soak saw, about a second).
            read.set()
            go_on.wait(30)
            return clear_claim(*args)

        later = timeutils.utcnow() + datetime.timedelta(
            seconds=heartbeat.SECONDS + 1)
        with fixtures.MockPatchObject(timeutils, 'utcnow',
                                      return_value=later):
            with fixtures.MockPatchObject(source, 'clear_claim',
                                          side_effect=slow_clear):
                first = threading.Thread(target=claims.clear_due,
                                         args=(source,))
                first.start()
                self.assertTrue(read.wait(30))
                # Another worker, and the API, find it being cleared.
                self.assertIsNone(claims.clear(source, node, ours))
                self.assertEqual(409, self.reserve().status_int)
                go_on.set()
                first.join(30)

        newer = self.reserve(status=201).json
        self.assertEqual(node, newer['node_uuid'])
        self.assertEqual(0, claims.clear_due(source))
        self.assertEqual(newer['instance_uuid'], self.node_instance(node))

    def test_a_retried_request_is_answered_only_with_its_claim(self):
        first, second, third = self.seed(3)
        self.sync_nodes()
        # The API process died after its commit, before its PATCH reached
        # Ironic: the reservation is there, the claim is not.
        instance = str(uuidlib.uuid4())
        reservation = self.reserve_without_claim(instance, first)
        self.assertIsNone(self.node_instance(first))

        again = self.reserve(instance, status=200).json

        self.assertEqual(reservation['uuid'], again['uuid'])
        self.assertEqual(instance, self.node_instance(first))
        self.assertEqual(0, db_inventory.count_claims_to_clear())

        # Another tool took the node before the retry: the retry gets
        # another node, claimed, and the tool's claim stays.
        retried, other = str(uuidlib.uuid4()), str(uuidlib.uuid4())
        self.reserve_without_claim(retried, second)
        self.ironic.update_node(second, instance_uuid=other)

        moved = self.reserve(retried, status=201).json

        self.assertEqual(third, moved['node_uuid'])
        self.assertEqual(retried, self.node_instance(third))
        self.assertEqual(other, self.node_instance(second))
        self.assertEqual([moved['uuid']], [
            r['uuid'] for r in self.live_reservations()
            if r['instance_uuid'] == retried])

    def reserve_without_claim(self, instance, node):
        """A reservation committed by a process that died before its
        claim reached Ironic."""
        with fixtures.MockPatchObject(claims, 'claim'):
            return self.reserve(instance, status=201,
                                candidate_nodes=[node]).json

    def test_a_retry_while_ironic_is_down_changes_nothing(self):
        unclaimed, claimed = self.seed(2)
        self.sync_nodes()
        lost = str(uuidlib.uuid4())
        held = {lost: self.reserve_without_claim(lost, unclaimed)['uuid']}
        answered = str(uuidlib.uuid4())
        held[answered] = self.reserve(answered, status=201, candidate_nodes=[
            claimed]).json['uuid']
        self.ironic.stop()

        for instance in held:
            refused = self.reserve(instance, status=503).json['errors'][0]
            self.assertEqual('reserveapi.ironic_unavailable',
                             refused['code'])
        # A failure of Ironic loses nothing: the next retry claims.
        self.assertEqual(sorted(held.values()), sorted(
            r['uuid'] for r in self.live_reservations()))
        self.ironic.start()
        for instance, uuid in held.items():
            self.assertEqual(uuid, self.reserve(instance, status=200).json[
                'uuid'])
        self.assertEqual([lost, answered], [self.node_instance(node)
                                            for node in (unclaimed, claimed)])

    def test_a_reservation_ended_while_claiming_is_never_answered(self):
        first, second = self.seed(2)
        self.sync_nodes()
        instance = str(uuidlib.uuid4())
        claim = claims.claim
        ended = []

        def ended_meanwhile(source, node, instance_uuid, info):
            claimed = claim(source, node, instance_uuid, info)
            if not ended:
                # The worker's reconcile ends it while its claim is on
                # its way (Ironic was slow to answer).
                live = db_reservations.get_live_reservation_for_instance(
                    instance_uuid)
                lifecycle.end_contradicted(live, 'the test ended it')
                ended.append(live)
            return claimed

        with fixtures.MockPatchObject(claims, 'claim',
                                      side_effect=ended_meanwhile):
            answer = self.reserve(instance, status=201).json

        ended, = ended
        self.assertNotEqual(ended.uuid, answer['uuid'])
        self.assertNotEqual(ended.node_uuid, answer['node_uuid'])
        self.assertEqual(instance, self.node_instance(answer['node_uuid']))
        self.assertIsNone(self.node_instance(ended.node_uuid))
        self.assertEqual([answer['uuid']],
                         [r['uuid'] for r in self.live_reservations()])

    def test_the_repair_never_outlives_a_release(self):
        node, = self.seed(1)
        self.sync_nodes()
        reservation = self.reserve(status=201).json
        self.ironic.update_node(node, instance_uuid=None)
        inventory_sync.sync(full=True)
        claim = claims.claim

        def released_meanwhile(*args):
            # The host releases while the reconcile claims again.
            self.release(reservation)
            return claim(*args)

        with fixtures.MockPatchObject(claims, 'claim',
                                      side_effect=released_meanwhile):
            ironic_reconcile.reconcile()

        self.assertIsNone(self.node_instance(node))
        self.assertEqual([], self.live_reservations())
        self.assertEqual(0, db_inventory.count_claims_to_clear())

    def test_a_retried_claim_never_outlives_a_process_that_died(self):
        self.check_a_late_claim_is_cleared(self.retry_in_a_dying_api)

    def test_a_repair_never_outlives_a_process_that_died(self):
        self.check_a_late_claim_is_cleared(self.repair_in_a_dying_worker)

    def test_a_retried_claim_of_a_live_reservation_is_kept(self):
        self.check_a_live_claim_is_kept(self.retry_in_a_dying_api)

    def test_a_repaired_claim_of_a_live_reservation_is_kept(self):
        self.check_a_live_claim_is_kept(self.repair_in_a_dying_worker)

    def check_a_late_claim_is_cleared(self, attempt):
        """The host releases (another process) while ``attempt`` claims
        the node again; that claim lands after the release's clear, and
        its process dies before it learns that the reservation ended. A
        worker clears it."""
        node, = self.seed(1)
        self.sync_nodes()
        reservation = self.reserve_without_claim(None, node)
        claim = claims.claim

        def released_meanwhile_then_dies(*args):
            releaser = threading.Thread(target=self.release,
                                        args=(reservation,))
            releaser.start()
            releaser.join(30)
            claim(*args)
            raise ProcessDied()

        with fixtures.MockPatchObject(
                claims, 'claim', side_effect=released_meanwhile_then_dies):
            self.assertRaises(ProcessDied, attempt, reservation)

        self.assertEqual(reservation['instance_uuid'],
                         self.node_instance(node))
        self.assertEqual([], self.live_reservations())
        self.clear_once_lapsed()
        self.assertIsNone(self.node_instance(node))
        self.assertEqual(0, db_inventory.count_claims_to_clear())
        self.assertEqual(node, self.reserve(status=201).json['node_uuid'])

    def check_a_live_claim_is_kept(self, attempt):
        """The same death, the reservation still standing: the worker
        leaves its claim alone."""
        node, = self.seed(1)
        self.sync_nodes()
        reservation = self.reserve_without_claim(None, node)
        claim = claims.claim

        def dies_after_claiming(*args):
            claim(*args)
            raise ProcessDied()

        with fixtures.MockPatchObject(claims, 'claim',
                                      side_effect=dies_after_claiming):
            self.assertRaises(ProcessDied, attempt, reservation)

        self.clear_once_lapsed()
        self.assertEqual(reservation['instance_uuid'],
                         self.node_instance(node))
        self.assertEqual([reservation['uuid']],
                         [r['uuid'] for r in self.live_reservations()])
        self.assertEqual(0, db_inventory.count_claims_to_clear())

    def retry_in_a_dying_api(self, reservation):
        self.reserve(reservation['instance_uuid'])

    def repair_in_a_dying_worker(self, reservation):
        inventory_sync.sync(full=True)
        ironic_reconcile.reconcile()

    def clear_once_lapsed(self):
        """A worker's pass once the dead process's lease lapsed and any
        claim still on its way must have landed."""
        later = timeutils.utcnow() + datetime.timedelta(
            seconds=claims.UNCERTAIN_DELAY + heartbeat.SECONDS + 1)
        with fixtures.MockPatchObject(timeutils, 'utcnow',
                                      return_value=later):
            self.assertEqual(1, claims.clear_due(
                inventory_sources.ironic_source()))

    def test_the_repair_never_ends_a_reservation_its_node_carries(self):
        node, = self.seed(1)
        self.sync_nodes()
        reservation = self.reserve(status=201).json
        instance = reservation['instance_uuid']
        self.ironic.update_node(node, instance_uuid=None)
        inventory_sync.sync(full=True)
        source = inventory_sources.ironic_source()
        get_node = source.get_node

        def claim_lands_meanwhile(uuid):
            # The re-read shows no instance; the host's own claim (a
            # slow PATCH, a retried request) lands right after.
            page = get_node(uuid)
            self.ironic.update_node(node, instance_uuid=instance)
            return page

        with fixtures.MockPatchObject(source, 'get_node',
                                      side_effect=claim_lands_meanwhile):
            ironic_reconcile.reconcile()

        self.assertEqual([reservation['uuid']],
                         [r['uuid'] for r in self.live_reservations()])
        self.assertEqual(instance, self.node_instance(node))


class TestSyncLease(InventoryTestCase):

    def test_a_dead_workers_lease_is_taken_over_within_seconds(self):
        self.seed(2)
        # A worker killed mid-pass: its lease is no longer renewed.
        self.assertTrue(db_inventory.take_sync_lease('ironic', 'killed',
                                                     heartbeat.SECONDS))
        self.assertRaises(exception.SyncInProgress, inventory_sync.sync,
                          wait=False)

        later = timeutils.utcnow() + datetime.timedelta(
            seconds=heartbeat.SECONDS + 1)
        with fixtures.MockPatchObject(timeutils, 'utcnow',
                                      return_value=later):
            self.assertEqual(2, inventory_sync.sync(wait=False)['added'])
        # ... and the pass gave it up.
        self.assertTrue(db_inventory.take_sync_lease('ironic', 'another',
                                                     heartbeat.SECONDS))

    def test_a_pass_keeps_its_lease_alive(self):
        self.seed(1)
        beating = self.useFixture(fixtures.MockPatchObject(
            heartbeat, 'Heartbeat', wraps=heartbeat.Heartbeat)).mock
        pages = ironic.IronicSource.full_pages
        renewals = []

        def slow_pages(source):
            for page in pages(source):
                # The heartbeat's turn, taken here rather than in its
                # thread: the test's SQLite is one shared connection.
                renew = beating.call_args.args[0]
                renewals.append((renew(), self.lease_until()))
                yield page

        with fixtures.MockPatchObject(ironic.IronicSource, 'full_pages',
                                      slow_pages):
            self.assertEqual(1, inventory_sync.sync()['added'])

        (renewed, until), = renewals
        self.assertTrue(renewed)
        self.assertGreater(until, timeutils.utcnow())
        # Once another process took the lease over, renewing fails.
        self.assertTrue(db_inventory.take_sync_lease(
            'ironic', 'another', heartbeat.SECONDS))
        self.assertFalse(beating.call_args.args[0]())

    def lease_until(self):
        with db_base.reader() as session:
            return session.scalar(sa.select(
                models.InventorySync.leased_until))
