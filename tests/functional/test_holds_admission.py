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

"""Holds admitted over time and kept by every reservation, on every
backend: the promise is the database's, so it is proven on each, and
under concurrent admissions and reservations on PostgreSQL and MariaDB.
"""

import concurrent.futures
import datetime
import uuid

import fixtures
from oslo_utils import timeutils

from reserveapi import reservations
from reserveapi.common import exception
from reserveapi.db import node_sync
from reserveapi.holds import admission
from reserveapi.holds import timeline
from reserveapi.inventory import sync as inventory_sync
from tests.functional import base

GOLD = 'CUSTOM_BAREMETAL_GOLD'
SILVER = 'CUSTOM_BAREMETAL_SILVER'
HOUR = datetime.timedelta(hours=1)


def _spec(resource_class=GOLD, trait=None):
    extra_specs = {'resources:%s' % resource_class: '1'}
    if trait:
        extra_specs['trait:%s' % trait] = 'required'
    return {'memory_mb': 1024, 'vcpus': 1, 'root_gb': 10,
            'ephemeral_gb': 0, 'swap': 0, 'extra_specs': extra_specs}


def _node(index, resource_class=GOLD, traits=()):
    return {
        'uuid': str(uuid.uuid4()), 'name': 'node-%d' % index,
        'resource_class': resource_class, 'memory_mb': 8192, 'cpus': 8,
        'local_gb': 100, 'cpu_arch': 'x86_64', 'capabilities': {},
        'traits': list(traits), 'provision_state': 'available',
        'power_state': 'power off', 'maintenance': False, 'retired': False,
        'instance_uuid': None, 'conductor_group': None, 'shard': None,
        'owner': None, 'lessee': None,
    }


def _sync(nodes):
    node_sync.sync_nodes(lambda: [(nodes, {
        node['uuid']: inventory_sync.fingerprint(node) for node in nodes})])


class HoldsTestCase(base.DBTestCase):

    def setUp(self):
        super().setUp()
        self.config(cleaning_padding=1800, group='holds')
        self.now = timeutils.utcnow().replace(tzinfo=datetime.timezone.utc)

    def hold(self, amount, start, end, project='p1', spec=None):
        return admission.create_hold(project, amount, spec or _spec(),
                                     self.now + start, self.now + end)

    def reserve(self, project='other', spec=None):
        reservation, _created = reservations.reserve(
            str(uuid.uuid4()), 'compute-1', project, spec or _spec())
        return reservation

    def assertKept(self):
        """Every live hold still fits from now on."""
        now = timeutils.utcnow()
        _version, live = admission.db_holds.live_holds(now)
        promises = [admission._promise_of(hold) for hold in live]
        shortfall = timeline.first_shortfall(
            [promise.window for promise in promises],
            admission._groups(admission._pool(promises, now)), now)
        self.assertIsNone(shortfall)


class TestAdmission(HoldsTestCase):
    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        _sync([_node(index) for index in range(3)]
              + [_node(10 + index, traits=['CUSTOM_GPU'])
                 for index in range(2)])

    def test_admitted_up_to_the_matching_nodes(self):
        self.hold(4, HOUR, 3 * HOUR)
        error = self.assertRaises(exception.HoldNotAdmitted, self.hold, 2,
                                  2 * HOUR, 4 * HOUR)
        self.assertEqual(6, error.kwargs['wanted'])
        self.assertEqual(5, error.kwargs['fit'])
        self.assertEqual(
            self.now + 2 * HOUR - datetime.timedelta(seconds=1800),
            datetime.datetime.fromisoformat(error.kwargs['at']))
        self.hold(1, 2 * HOUR, 4 * HOUR)

    def test_cleaning_padding_separates_windows(self):
        self.hold(5, HOUR, 2 * HOUR)
        # Starts when the first ends: inside its cleaning time.
        self.assertRaises(exception.HoldNotAdmitted, self.hold, 1,
                          2 * HOUR, 3 * HOUR)
        self.hold(5, 3 * HOUR, 4 * HOUR)

    def test_order_does_not_matter(self):
        """A GPU hold and a generic one fit in either order: the generic
        one takes the nodes the GPU one cannot use."""
        self.hold(3, HOUR, 2 * HOUR)
        self.hold(2, HOUR, 2 * HOUR, spec=_spec(trait='CUSTOM_GPU'))
        self.assertRaises(exception.HoldNotAdmitted, self.hold, 1,
                          HOUR, 2 * HOUR)

    def test_another_projects_nodes_do_not_count(self):
        """Holds alike share one read of the nodes; each still counts
        only the nodes its project may use (Ironic's owner)."""
        owned = [dict(_node(20 + index), owner='p2') for index in range(2)]
        _sync([_node(index) for index in range(3)] + owned)
        self.hold(1, HOUR, 2 * HOUR, project='p2')
        self.hold(3, HOUR, 2 * HOUR, project='p1')
        self.assertRaises(exception.HoldNotAdmitted, self.hold, 1, HOUR,
                          2 * HOUR, project='p1')

    def test_other_classes_do_not_count(self):
        self.hold(5, HOUR, 2 * HOUR)
        self.assertRaises(exception.HoldNotAdmitted, self.hold, 1, HOUR,
                          2 * HOUR, spec=_spec(SILVER))

    def test_growing_is_admitted_again_shrinking_always_fits(self):
        first = self.hold(3, HOUR, 2 * HOUR)
        self.hold(2, HOUR, 2 * HOUR)
        self.assertRaises(exception.HoldNotAdmitted, admission.update_hold,
                          first.uuid, amount=4)
        self.assertEqual(3, admission.get_hold(first.uuid).amount)
        self.assertEqual(1, admission.update_hold(first.uuid,
                                                  amount=1).amount)
        self.hold(2, HOUR, 2 * HOUR)

    def test_cancelled_frees_its_nodes(self):
        first = self.hold(5, HOUR, 2 * HOUR)
        self.assertRaises(exception.HoldNotAdmitted, self.hold, 1,
                          HOUR, 2 * HOUR)
        admission.cancel_hold(first.uuid)
        self.assertEqual(admission.CANCELLED,
                         admission.state(admission.get_hold(first.uuid)))
        self.hold(5, HOUR, 2 * HOUR)


class TestReservationsKeepHolds(HoldsTestCase):
    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        _sync([_node(index) for index in range(3)])

    def test_pending_hold_caps_on_demand(self):
        self.hold(2, HOUR, 2 * HOUR)
        self.reserve()
        error = self.assertRaises(exception.NoValidNode, self.reserve)
        self.assertEqual('held', error.kwargs['criterion'])
        self.assertKept()

    def test_a_hold_admitted_after_a_read_of_none_is_kept(self):
        """A reservation that saw no hold remembers the guard's version
        and reads no holds next time; its INSERT finds the version moved
        on by the admission, and it reads them again."""
        self.reserve()
        self.assertIsNotNone(admission._Quiet.version)
        self.hold(2, HOUR, 2 * HOUR)
        error = self.assertRaises(exception.NoValidNode, self.reserve)
        self.assertEqual('held', error.kwargs['criterion'])
        self.assertIsNone(admission._Quiet.version)
        self.assertKept()

    def test_nodes_are_read_only_when_the_holds_are_tight(self):
        """Three free nodes and a hold of one: while more nodes match
        than the hold asks, any one may go without a read of the nodes;
        the last one left is read, and kept."""
        self.hold(1, HOUR, 2 * HOUR)
        pool = self.useFixture(fixtures.MockPatchObject(
            admission, '_pool', wraps=admission._pool)).mock
        self.reserve()
        self.reserve()
        self.assertEqual(0, pool.call_count)
        self.assertRaises(exception.NoValidNode, self.reserve)
        self.assertEqual(1, pool.call_count)
        self.assertKept()

    def test_active_hold_is_used_by_its_project_only(self):
        self.hold(2, datetime.timedelta(0), HOUR)
        self.reserve()
        self.assertRaises(exception.NoValidNode, self.reserve)
        self.reserve(project='p1')
        self.reserve(project='p1')
        self.assertKept()

    def test_node_no_hold_can_use_is_free(self):
        _sync([_node(index) for index in range(3)]
              + [_node(20, resource_class=SILVER)])
        self.hold(3, HOUR, 2 * HOUR)
        self.assertEqual(SILVER, self.reserve(
            spec=_spec(SILVER)).resource_class)
        self.assertRaises(exception.NoValidNode, self.reserve)

    def test_reservations_before_the_hold_count_against_it(self):
        self.reserve()
        self.reserve()
        self.assertRaises(exception.HoldNotAdmitted, self.hold, 2, HOUR,
                          2 * HOUR)
        self.hold(1, HOUR, 2 * HOUR)


class TestConcurrentHolds(HoldsTestCase):
    scenarios = base.SERVER_BACKENDS
    POOL = 6
    WORKERS = 8

    def setUp(self):
        super().setUp()
        _sync([_node(index) for index in range(self.POOL)])

    def _try(self, call):
        try:
            return call()
        except (exception.HoldNotAdmitted, exception.NoValidNode):
            return None

    def test_a_projects_limit_holds_under_concurrent_admissions(self):
        """The limits are checked in the turn: of holds of one project
        sent at once, no more than its maximum amount are admitted."""
        self.config(max_amount_per_project=2, group='holds')

        def hold():
            try:
                return self.hold(1, HOUR, 2 * HOUR)
            except exception.HoldQuotaExceeded:
                return None

        with concurrent.futures.ThreadPoolExecutor(self.WORKERS) as pool:
            results = list(pool.map(lambda _: hold(), range(self.POOL)))
        self.assertEqual(2, len([result for result in results if result]))

    def test_admissions_and_reservations_take_turns(self):
        """Holds of one node each and on-demand reservations race for
        the same pool: whatever the interleaving, every admitted hold
        can still be met."""
        calls = ([lambda: self.hold(1, HOUR, 2 * HOUR)] * self.POOL
                 + [self.reserve] * self.POOL)
        with concurrent.futures.ThreadPoolExecutor(self.WORKERS) as pool:
            results = list(pool.map(self._try, calls))
        holds = [result for result in results[:self.POOL] if result]
        taken = [result for result in results[self.POOL:] if result]
        self.assertEqual(self.POOL, len(holds) + len(taken), results)
        self.assertKept()
