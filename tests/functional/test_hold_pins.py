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

"""A hold's life after admission, on every backend: its nodes pinned at
its start, its project's boots taking them through its own resource
class, idle pins given back, and its end carried out. Nova is a mock
here (tests/nova boots through the real one).
"""

import concurrent.futures
import datetime
from unittest import mock
import uuid

import fixtures
from oslo_utils import timeutils

from reserveapi import pinning
from reserveapi import reservations
from reserveapi.common import exception
from reserveapi.common import states
from reserveapi.db import holds as db_holds
from reserveapi.db import reservations as db_reservations
from reserveapi.holds import admission
from reserveapi.monitoring import database
from tests.functional import base
from tests.functional import test_holds_admission as holds_base

HOUR = datetime.timedelta(hours=1)


def _boot_spec(hold):
    return {'memory_mb': 1, 'vcpus': 1, 'root_gb': 0, 'ephemeral_gb': 0,
            'swap': 0, 'extra_specs': {
                'resources:%s' % admission.boot_resource_class(hold.uuid):
                    '1',
                'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
                'resources:DISK_GB': '0'}}


class PinsTestCase(holds_base.HoldsTestCase):
    NODES = 3

    def setUp(self):
        super().setUp()
        holds_base._sync([holds_base._node(index)
                          for index in range(self.NODES)])
        self.nova = self.useFixture(fixtures.MockPatch(
            'reserveapi.pinning.nova_peer.NovaClient')).mock.return_value
        self.nova.ensure_private_flavor.return_value = 'flavor-1'
        self.nova.delete_server.return_value = True
        self.events = self.useFixture(fixtures.MockPatchObject(
            pinning, 'notifications')).mock

    def running(self, amount, project='p1', at_end='keep'):
        return admission.create_hold(project, amount, holds_base._spec(),
                                     self.now, self.now + HOUR,
                                     at_end=at_end)

    def boot(self, hold, project='p1', host='compute-2'):
        reservation, _created = reservations.reserve(
            str(uuid.uuid4()), host, project, _boot_spec(hold))
        return reservation

    def usage(self, hold):
        return admission.usage([hold])[hold.uuid]

    def read(self, hold):
        return db_holds.get_hold(hold.uuid)


class TestPins(PinsTestCase):
    scenarios = base.EVERY_BACKEND

    def test_start_pins_the_nodes_it_keeps(self):
        hold = self.running(2)
        pinning.tend()
        self.assertEqual(admission.Usage(pinned=2), self.usage(hold))
        self.assertEqual(admission.ACTIVE, admission.state(self.read(hold)))
        # One node is left for anyone; the pins are nobody's instances.
        self.assertEqual('other', self.reserve().project_id)
        self.assertRaises(exception.NoValidNode, self.reserve)
        self.assertEqual([], [r for r in reservations.list_reservations()
                              if r.state == states.PINNED])
        # A second round pins nothing more.
        pinning.tend()
        self.assertEqual(admission.Usage(pinned=2), self.usage(hold))
        self.assertKept()

    def test_boot_takes_a_pin_through_the_hold_class(self):
        hold = self.running(2)
        pinning.tend()
        pinned = {pin.node_uuid for pin in db_reservations.list_pins(
            self.read(hold).id)}
        first = self.boot(hold)
        second = self.boot(hold, host='compute-3')
        self.assertEqual(pinned, {first.node_uuid, second.node_uuid})
        self.assertEqual(states.RESERVED, first.state)
        self.assertEqual(self.read(hold).id, first.hold_id)
        self.assertEqual(admission.Usage(in_use=2), self.usage(hold))
        error = self.assertRaises(exception.NoValidNode, self.boot, hold)
        self.assertEqual('hold', error.kwargs['criterion'])
        self.assertKept()

    def test_boot_without_pins_reserves_for_the_hold(self):
        """Before the worker pinned, the hold's boot still gets one of
        the nodes the hold keeps."""
        hold = self.running(2)
        self.reserve()
        booted = self.boot(hold)
        self.assertEqual(self.read(hold).id, booted.hold_id)
        self.assertEqual(admission.Usage(in_use=1), self.usage(hold))
        self.assertRaises(exception.NoValidNode, self.reserve)

    def test_only_its_project_boots_its_flavor_while_it_runs(self):
        hold = self.running(1)
        pinning.tend()
        error = self.assertRaises(exception.NoValidNode, self.boot, hold,
                                  project='p2')
        self.assertEqual('hold', error.kwargs['criterion'])
        pending = admission.create_hold('p1', 1, holds_base._spec(),
                                        self.now + 2 * HOUR,
                                        self.now + 3 * HOUR)
        error = self.assertRaises(exception.NoValidNode, self.boot, pending)
        self.assertIn('pending', error.kwargs['reason'])
        unknown = mock.Mock(uuid=str(uuid.uuid4()))
        self.assertRaises(exception.NoValidNode, self.boot, unknown)

    def test_the_projects_usual_boots_fill_its_hold(self):
        """Admission counts the project's ordinary boots since the start
        as its hold's, and so does the worker: it pins that many fewer,
        and the other holds get their nodes."""
        first = self.running(1)
        self.reserve(project='p1')
        second = self.running(2, project='p2')
        pinning.tend()
        self.assertEqual(admission.Usage(), self.usage(first))
        self.assertEqual(admission.Usage(pinned=2), self.usage(second))
        for hold in (first, second):
            self.assertEqual(admission.ACTIVE,
                             admission.state(self.read(hold)))
        self.assertKept()

    def test_a_usual_boot_after_the_pins_frees_one(self):
        holds_base._sync([holds_base._node(index) for index in range(4)])
        hold = self.running(2)
        pinning.tend()
        self.reserve(project='p1')
        pinning.tend()
        self.assertEqual(admission.Usage(pinned=1), self.usage(hold))
        self.assertEqual(0, self.read(hold).shortfall)
        # The freed pin is anyone's again.
        self.reserve()
        self.reserve()
        self.assertRaises(exception.NoValidNode, self.reserve)
        self.assertKept()

    def test_a_usual_boot_fills_one_hold_of_its_project(self):
        holds_base._sync([holds_base._node(index) for index in range(4)])
        first, second = self.running(1), self.running(1)
        self.reserve(project='p1')
        pinning.tend()
        self.assertEqual([admission.Usage(), admission.Usage(pinned=1)],
                         [self.usage(first), self.usage(second)])
        self.assertKept()

    def test_degraded_while_nodes_are_missing(self):
        hold = self.running(3)
        holds_base._sync([holds_base._node(index)
                          for index in range(self.NODES)][:2])
        pinning.tend()
        self.assertEqual(1, self.read(hold).shortfall)
        self.assertEqual(admission.DEGRADED,
                         admission.state(self.read(hold)))
        holds_base._sync([holds_base._node(index)
                          for index in range(self.NODES)])
        pinning.tend()
        self.assertEqual(admission.ACTIVE, admission.state(self.read(hold)))
        self.assertEqual(admission.Usage(pinned=3), self.usage(hold))

    def test_idle_pins_are_reclaimed(self):
        self.config(pin_idle_time=60, group='holds')
        hold = self.running(2)
        pinning.tend()
        self.boot(hold)
        pinning.tend()
        self.assertEqual(admission.Usage(pinned=1, in_use=1),
                         self.usage(hold))
        pinning.tend(timeutils.utcnow() + datetime.timedelta(seconds=61))
        after = self.read(hold)
        self.assertEqual((1, 1), (after.reclaimed, after.kept))
        self.assertEqual(admission.RECLAIMED, admission.state(after))
        self.assertEqual(admission.Usage(in_use=1), self.usage(hold))
        self.events.hold_reclaimed.assert_called_once()
        # Not pinned again: the hold keeps one node fewer.
        pinning.tend()
        self.assertEqual(admission.Usage(in_use=1), self.usage(hold))
        self.assertEqual('other', self.reserve().project_id)
        self.assertKept()

    def test_cancel_frees_the_pins_at_once(self):
        hold = self.running(3)
        pinning.tend()
        pinning.cancel_hold(hold.uuid)
        self.assertEqual(admission.Usage(), self.usage(hold))
        for _node in range(self.NODES):
            self.reserve()

    def test_the_end_deletes_the_instances_through_nova(self):
        hold = self.running(2, at_end='delete')
        pinning.tend()
        booted = self.boot(hold)
        self.assertEqual('flavor-1', self.read(hold).flavor_id)
        pinning.tend(self.now.replace(tzinfo=None) + 2 * HOUR)
        self.nova.delete_server.assert_called_once_with(
            booted.instance_uuid)
        self.nova.delete_flavor.assert_called_once_with('flavor-1')
        self.assertIsNotNone(self.read(hold).finished_at)
        self.assertEqual(admission.Usage(in_use=1), self.usage(hold))
        self.events.hold_finished.assert_called_once_with(
            mock.ANY, admission.ENDED, [booted.instance_uuid])
        # Done once.
        pinning.tend(self.now.replace(tzinfo=None) + 2 * HOUR)
        self.assertEqual(1, self.nova.delete_server.call_count)

    def test_the_end_keeps_the_instances(self):
        hold = self.running(2, at_end='keep')
        pinning.tend()
        booted = self.boot(hold, host='compute-1')
        later = self.now.replace(tzinfo=None) + 2 * HOUR
        pinning.tend(later)
        self.nova.delete_server.assert_not_called()
        self.assertEqual(admission.Usage(in_use=1), self.usage(hold))
        self.assertIsNotNone(self.read(hold).finished_at)
        # Its class stays while the kept instance uses it.
        boot_class = admission.boot_resource_class(hold.uuid)
        (row,) = [row for row in admission.boot_capacity('compute-1', later)
                  if row['resource_class'] == boot_class]
        self.assertEqual((1, 0, 1, 1), (row['total'], row['available'],
                                        row['reserved'],
                                        row['reserved_by_host']))
        reservations.release(booted.uuid, lambda reservation: None)
        self.assertEqual([], admission.boot_capacity('compute-1', later))

    def test_a_warning_before_the_end(self):
        self.config(end_notice=600, group='holds')
        hold = self.running(1)
        pinning.tend()
        self.events.hold_ending.assert_not_called()
        later = self.now.replace(tzinfo=None) + HOUR
        pinning.tend(later - datetime.timedelta(seconds=300))
        pinning.tend(later - datetime.timedelta(seconds=200))
        self.events.hold_ending.assert_called_once()
        self.assertIsNotNone(self.read(hold).warned_at)

    def test_nova_down_loses_nothing(self):
        """A flavor Nova could not create is created at a later round;
        the pins do not wait for it."""
        self.nova.ensure_private_flavor.side_effect = [
            exception.NovaUnavailable(reason='down'), 'flavor-2']
        hold = self.running(1)
        self.assertRaises(exception.NovaUnavailable, pinning.tend)
        self.assertEqual(admission.Usage(pinned=1), self.usage(hold))
        self.assertIsNone(self.read(hold).flavor_id)
        pinning.tend()
        self.assertEqual('flavor-2', self.read(hold).flavor_id)
        name, = self.nova.ensure_private_flavor.call_args.args
        self.assertEqual('reserveapi-hold-' + hold.uuid, name)
        self.assertEqual(
            {'resources:' + admission.boot_resource_class(hold.uuid): '1',
             'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
             'resources:DISK_GB': '0'},
            self.nova.ensure_private_flavor.call_args.kwargs[
                'extra_specs'])
        self.assertEqual('p1', self.nova.ensure_private_flavor.call_args
                         .kwargs['project_id'])

    def test_gauges_count_pins_boots_and_shortfall(self):
        def gauges():
            found = {}
            for family in database.DatabaseCollector().collect():
                for sample in family.samples:
                    if sample.name in ('reserveapi_hold_nodes',
                                       'reserveapi_hold_shortfall_nodes'):
                        found[sample.name, sample.labels.get('use')] = (
                            sample.value)
            return found

        hold = self.running(3)
        holds_base._sync([holds_base._node(index)
                          for index in range(self.NODES)][:2])
        pinning.tend()
        self.boot(hold)
        self.assertEqual({('reserveapi_hold_nodes', 'pinned'): 1,
                          ('reserveapi_hold_nodes', 'in_use'): 1,
                          ('reserveapi_hold_shortfall_nodes', None): 1},
                         gauges())

    def test_capacity_reports_each_running_hold_under_its_class(self):
        hold = self.running(2)
        pinning.tend()
        self.boot(hold, host='compute-1')
        capacity = reservations.get_capacity(host='compute-1', holds=True)
        rows = {row['resource_class']: row for row in capacity['capacity']}
        own = rows[admission.boot_resource_class(hold.uuid)]
        self.assertEqual((2, 1, 1, 1), (own['total'], own['available'],
                                        own['reserved'],
                                        own['reserved_by_host']))
        self.assertEqual(1, rows[holds_base.GOLD]['available'])
        self.assertNotIn(admission.boot_resource_class(hold.uuid), {
            row['resource_class'] for row in
            reservations.get_capacity(host='compute-1')['capacity']})


class TestConcurrentBoots(PinsTestCase):
    """Boots of a hold, on-demand reservations and the worker at once:
    no node in two live rows, and the hold never short of what it was
    promised."""

    scenarios = base.SERVER_BACKENDS
    NODES = 6
    WORKERS = 6

    def _try(self, call):
        try:
            return call()
        except exception.NoValidNode:
            return None

    def test_no_node_twice(self):
        hold = self.running(3)
        calls = ([lambda: self.boot(hold)] * 4 + [self.reserve] * 5
                 + [pinning.tend] * 2)
        with concurrent.futures.ThreadPoolExecutor(self.WORKERS) as pool:
            done = [result for result in pool.map(self._try, calls)
                    if result is not None]
        booted = [r for r in done if getattr(r, 'hold_id', None)]
        on_demand = [r for r in done if getattr(r, 'project_id', None)
                     == 'other']
        self.assertEqual(3, len(booted))
        self.assertLessEqual(len(on_demand), 3)
        # A pin made by a boot while the worker pinned too is freed at
        # the next round: then the rest is anyone's.
        pinning.tend()
        for _more in range(3 - len(on_demand)):
            self.reserve()
        self.assertRaises(exception.NoValidNode, self.reserve)
        live = reservations.list_reservations()
        self.assertEqual(len(live), len({r.node_uuid for r in live}))
        self.assertEqual(admission.Usage(in_use=3), self.usage(hold))
        self.assertKept()


    def test_boots_beyond_the_hold_leave_no_pin(self):
        """More boots at once than the hold keeps, before the worker
        pinned: each pins a node for itself, and the boots free the
        surplus themselves rather than keep it from everyone until the
        worker's next round."""
        hold = self.running(3)
        with concurrent.futures.ThreadPoolExecutor(self.WORKERS) as pool:
            done = [result for result in pool.map(
                self._try, [lambda: self.boot(hold)] * self.WORKERS)
                if result is not None]
        self.assertEqual(3, len(done))
        self.assertEqual(admission.Usage(in_use=3), self.usage(hold))
        for _more in range(self.NODES - 3):
            self.reserve()
        self.assertRaises(exception.NoValidNode, self.reserve)
        self.assertKept()


class TestWorkersAtOnce(PinsTestCase):
    """Two workers that read the same hold before either tended it: the
    warning and the end's event go out once."""

    scenarios = base.EVERY_BACKEND

    def test_events_once(self):
        self.config(end_notice=600, group='holds')
        hold = self.read(self.running(1, at_end='delete'))
        later = self.now.replace(tzinfo=None) + HOUR
        for _worker in range(2):
            pinning._warn(hold, later - datetime.timedelta(seconds=60))
        for _worker in range(2):
            pinning._finish(hold, later + HOUR)
        self.assertEqual(1, self.events.hold_ending.call_count)
        self.assertEqual(1, self.events.hold_finished.call_count)
        self.assertIsNotNone(self.read(hold).finished_at)
