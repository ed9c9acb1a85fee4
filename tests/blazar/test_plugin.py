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

"""The plugin alone: a fake HoldClient and Blazar's database calls
replaced, so that each mapping (arguments, errors, windows) is checked
without the stack."""

import datetime
import json

from blazar import exceptions as blazar_exc
from blazar.enforcement import exceptions as enforcement_exc
from blazar.manager import exceptions as manager_exc
import fixtures
from novaclient import exceptions as nova_exc
from oslo_db import exception as db_exc
import testtools

from reserveapi import client
from reserveapi.blazar import plugin
from reserveapi_testing import examples

UTC = datetime.timezone.utc
START = datetime.datetime(2030, 3, 9, 8, 0)
END = datetime.datetime(2030, 3, 13, 18, 0)
PROJECT = 'a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5'
LEASE = {'id': 'lease-1', 'project_id': PROJECT, 'start_date': START,
         'end_date': END}


def _iso(value):
    return value.replace(tzinfo=UTC).isoformat()


class FakeHolds:
    """HoldClient's calls on a dict; ``fail`` raises on the next call of
    that name."""

    def __init__(self):
        self.holds = {}
        self.calls = []
        self.fail = {}

    def _call(self, name, *args, **kwargs):
        self.calls.append((name, args, kwargs))
        if name in self.fail:
            raise self.fail.pop(name)

    def create(self, project_id, amount, request_spec, start, end,
               shard=None, conductor_group=None, at_end=None):
        self._call('create', project_id, amount, request_spec, start, end,
                   shard=shard, conductor_group=conductor_group,
                   at_end=at_end)
        uuid = 'hold-%d' % (len(self.holds) + 1)
        self.holds[uuid] = {
            'uuid': uuid, 'project_id': project_id, 'amount': amount,
            'request_spec': request_spec, 'start': start.isoformat(),
            'end': end.isoformat(), 'shard': shard,
            'conductor_group': conductor_group, 'at_end': at_end or 'keep',
            'state': 'pending'}
        return dict(self.holds[uuid])

    def get(self, uuid):
        self._call('get', uuid)
        if uuid not in self.holds:
            raise client.NotFound(404, 'reserveapi.hold_not_found',
                                  'Hold %s not found.' % uuid, 'req-1')
        return dict(self.holds[uuid])

    def update(self, uuid, end=None, amount=None):
        self._call('update', uuid, end=end, amount=amount)
        if end is not None:
            self.holds[uuid]['end'] = end.isoformat()
        if amount is not None:
            self.holds[uuid]['amount'] = amount
        return dict(self.holds[uuid])

    def cancel(self, uuid):
        self._call('cancel', uuid)
        self.holds[uuid]['state'] = 'cancelled'


def _refusal(status, code, detail='No.'):
    cls = client.Conflict if status == 409 else client.ClientError
    return cls(status, code, detail, 'req-1')


class PluginTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.holds = FakeHolds()
        self.flavors = {}
        self.plugin = plugin.HoldPlugin(holds=self.holds,
                                        flavors=self._flavor)
        self.reservations = {}
        db = self.useFixture(fixtures.MockPatchObject(plugin, 'db_api'))
        self.db = db.mock
        self.db.lease_get.side_effect = lambda lease_id: dict(LEASE)
        self.db.reservation_get.side_effect = self.reservations.get
        self.db.reservation_update.side_effect = (
            lambda rid, values: self.reservations[rid].update(values))
        self.db.reservation_get_all_by_values.side_effect = (
            lambda **filters: [r for r in self.reservations.values() if all(
                r.get(k) == v for k, v in filters.items())])
        self.now = datetime.datetime(2030, 3, 1, tzinfo=UTC)
        self.useFixture(fixtures.MockPatch(
            'oslo_utils.timeutils.utcnow', side_effect=lambda **_: self.now))

    def _flavor(self, flavor_id):
        if flavor_id not in self.flavors:
            raise nova_exc.NotFound(404)
        return self.flavors[flavor_id]

    def reserve(self, **values):
        values.setdefault('amount', 2)
        if 'flavor_id' not in values:
            values.setdefault('request_spec', examples.REQUEST_SPEC)
        values.update(resource_type=plugin.RESOURCE_TYPE, lease_id='lease-1',
                      start_date=values.get('start_date', START),
                      end_date=values.get('end_date', END))
        uuid = self.plugin.reserve_resource('res-1', values)
        self.reservations['res-1'] = {
            'id': 'res-1', 'lease_id': 'lease-1', 'resource_id': uuid,
            'resource_type': plugin.RESOURCE_TYPE, 'status': 'pending'}
        return uuid


class TestReserve(PluginTestCase):

    def test_hold_for_the_lease_project_over_its_window(self):
        uuid = self.reserve(amount=2, at_end='delete', shard='s1',
                            conductor_group='g1')

        (call,) = self.holds.calls
        self.assertEqual(('create', (PROJECT, 2, examples.REQUEST_SPEC,
                                     START.replace(tzinfo=UTC),
                                     END.replace(tzinfo=UTC)),
                          {'shard': 's1', 'conductor_group': 'g1',
                           'at_end': 'delete'}), call)
        hold = self.holds.holds[uuid]
        self.assertEqual((_iso(START), _iso(END)),
                         (hold['start'], hold['end']))

    def test_request_spec_as_text(self):
        self.reserve(request_spec=json.dumps(examples.REQUEST_SPEC))
        self.assertEqual(examples.REQUEST_SPEC, self.holds.calls[0][1][2])

    def test_lease_from_now_holds_from_this_second(self):
        self.now = START.replace(tzinfo=UTC) + datetime.timedelta(seconds=42)
        uuid = self.reserve()
        self.assertEqual(self.now.isoformat(), self.holds.holds[uuid]['start'])

    def test_flavor_becomes_the_request_spec(self):
        self.flavors['gold'] = {
            'id': 'gold', 'name': 'baremetal-gold', 'ram': 1024, 'vcpus': 8,
            'disk': 20, 'OS-FLV-EXT-DATA:ephemeral': 10, 'swap': '',
            'rxtx_factor': 1.0,
            'extra_specs': {'resources:CUSTOM_BAREMETAL_GOLD': '1'}}
        self.reserve(flavor_id='gold')
        spec = self.holds.calls[0][1][2]
        self.assertEqual(
            {'name': 'baremetal-gold', 'flavorid': 'gold', 'memory_mb': 1024,
             'vcpus': 8, 'root_gb': 20, 'ephemeral_gb': 10, 'swap': 0,
             'rxtx_factor': 1.0,
             'extra_specs': {'resources:CUSTOM_BAREMETAL_GOLD': '1'},
             'image': {}}, spec)

    def test_unknown_flavor(self):
        self.assertRaises(blazar_exc.InvalidInput, self.reserve,
                          flavor_id='lead')
        self.assertEqual([], self.holds.calls)

    def test_malformed_reservations_are_refused_before_any_call(self):
        cases = [
            ({'amount': None}, manager_exc.MalformedParameter),
            ({'amount': 0}, manager_exc.MalformedParameter),
            ({'amount': '2.5'}, manager_exc.MalformedParameter),
            ({'amonut': 2}, manager_exc.MalformedParameter),
            ({'at_end': 'shelve'}, manager_exc.MalformedParameter),
            ({'request_spec': '{not json'}, manager_exc.MalformedParameter),
            ({'request_spec': None}, manager_exc.MissingParameter),
            ({'flavor_id': 'gold'}, manager_exc.MalformedParameter),
        ]
        for values, error in cases:
            reservation = dict(resource_type=plugin.RESOURCE_TYPE, amount=2,
                               request_spec=examples.REQUEST_SPEC)
            reservation.update(values)
            self.assertRaises(error, self.plugin.allocation_candidates,
                              reservation)
        missing = {'resource_type': plugin.RESOURCE_TYPE,
                   'request_spec': examples.REQUEST_SPEC}
        self.assertRaises(manager_exc.MissingParameter,
                          self.plugin.allocation_candidates, missing)
        self.assertEqual([], self.holds.calls)

    def test_refusals_become_blazar_exceptions_with_our_reason(self):
        cases = [
            (_refusal(409, plugin.HOLD_NOT_ADMITTED, 'Hold not admitted: x'),
             manager_exc.NotEnoughHostsAvailable),
            (_refusal(400, 'reserveapi.invalid_hold', 'Starts too late.'),
             blazar_exc.InvalidInput),
            (_refusal(403, plugin.HOLD_QUOTA_EXCEEDED, 'Over the limit.'),
             enforcement_exc.ExternalServiceFilterException),
            (client.ServiceUnavailable(None, None, 'Connection refused.',
                                       None),
             blazar_exc.ServiceClient),
        ]
        for refusal, error in cases:
            self.holds.fail['create'] = refusal
            exc = self.assertRaises(error, self.reserve)
            self.assertIn(refusal.detail, str(exc))
            self.assertIs(error, type(exc))


class TestUpdate(PluginTestCase):

    def setUp(self):
        super().setUp()
        self.uuid = self.reserve()
        self.holds.calls = []

    def update(self, **values):
        values.setdefault('start_date', START)
        values.setdefault('end_date', END)
        self.plugin.update_reservation('res-1', values)
        return [call for call in self.holds.calls if call[0] != 'get']

    def test_end_moves(self):
        later = END + datetime.timedelta(hours=2)
        self.assertEqual([('update', (self.uuid,), {
            'end': later.replace(tzinfo=UTC), 'amount': None})],
            self.update(end_date=later))

    def test_amount_changes(self):
        self.assertEqual([('update', (self.uuid,), {
            'end': None, 'amount': 3})], self.update(amount=3))

    def test_nothing_changed(self):
        self.assertEqual([], self.update(amount=2))

    def test_what_a_hold_cannot_change(self):
        self.assertRaises(manager_exc.CantUpdateParameter, self.update,
                          flavor_id='gold')
        self.assertRaises(manager_exc.MalformedParameter, self.update,
                          colour='red')

    def test_growth_refused_keeps_the_lease(self):
        self.holds.fail['update'] = _refusal(409, plugin.HOLD_NOT_ADMITTED)
        self.assertRaises(manager_exc.NotEnoughHostsAvailable, self.update,
                          amount=3)

    def test_start_moved_replaces_the_pending_hold(self):
        later = START + datetime.timedelta(hours=2)
        calls = self.update(start_date=later)
        self.assertEqual(['create', 'cancel'], [call[0] for call in calls])
        new = self.reservations['res-1']['resource_id']
        self.assertNotEqual(self.uuid, new)
        self.assertEqual(_iso(later), self.holds.holds[new]['start'])
        self.assertEqual('cancelled', self.holds.holds[self.uuid]['state'])

    def test_start_move_refused_keeps_the_hold(self):
        self.holds.fail['create'] = _refusal(409, plugin.HOLD_NOT_ADMITTED)
        exc = self.assertRaises(
            manager_exc.NotEnoughHostsAvailable, self.update,
            start_date=START + datetime.timedelta(hours=2))
        self.assertIn(self.uuid, str(exc))
        self.assertEqual(self.uuid, self.reservations['res-1']['resource_id'])
        self.assertEqual('pending', self.holds.holds[self.uuid]['state'])

    def test_start_move_blazar_cannot_record_cancels_the_new_hold(self):
        """Blazar's database fails once the new hold is admitted: the
        lease keeps the old hold, and the new one is not left promised
        beside it."""
        self.db.reservation_update.side_effect = db_exc.DBError('gone')
        self.assertRaises(db_exc.DBError, self.update,
                          start_date=START + datetime.timedelta(hours=2))
        self.assertEqual(self.uuid, self.reservations['res-1']['resource_id'])
        self.assertEqual({self.uuid: 'pending', 'hold-2': 'cancelled'},
                         {uuid: hold['state']
                          for uuid, hold in self.holds.holds.items()})

    def test_started_lease_keeps_its_start(self):
        self.now = START.replace(tzinfo=UTC) + datetime.timedelta(hours=1)
        self.holds.holds[self.uuid]['state'] = 'active'
        later = END + datetime.timedelta(hours=2)
        calls = self.update(end_date=later)
        self.assertEqual(['update'], [call[0] for call in calls])


class TestLifecycle(PluginTestCase):

    def setUp(self):
        super().setUp()
        self.uuid = self.reserve()

    def test_end_cancels_a_hold_not_ended(self):
        self.plugin.on_end(self.uuid)
        self.assertEqual('cancelled', self.holds.holds[self.uuid]['state'])

    def test_end_leaves_an_ended_hold(self):
        self.holds.holds[self.uuid]['state'] = 'ended'
        self.plugin.on_end(self.uuid)
        self.assertNotIn('cancel', [call[0] for call in self.holds.calls])

    def test_end_of_a_hold_gone(self):
        self.plugin.on_end('hold-gone')

    def test_end_fails_while_the_service_is_down(self):
        # Blazar keeps the lease (in ERROR) rather than lose the hold.
        self.holds.fail['get'] = client.ServiceUnavailable(
            None, None, 'Connection refused.', None)
        self.assertRaises(blazar_exc.ServiceClient, self.plugin.on_end,
                          self.uuid)

    def test_start_of_a_cancelled_hold_fails_the_reservation(self):
        self.holds.holds[self.uuid]['state'] = 'cancelled'
        self.assertRaises(blazar_exc.BlazarException, self.plugin.on_start,
                          self.uuid)

    def test_start_while_the_service_is_down(self):
        self.holds.fail['get'] = client.ServiceUnavailable(
            None, None, 'Connection refused.', None)
        self.plugin.on_start(self.uuid)


class TestAllocations(PluginTestCase):

    def test_a_reservation_allocates_its_hold(self):
        uuid = self.reserve()
        self.assertEqual([uuid], self.plugin.allocation_candidates(
            self.reservations['res-1']))
        self.assertEqual([], self.plugin.allocation_candidates({
            'resource_type': plugin.RESOURCE_TYPE, 'amount': 1,
            'request_spec': examples.REQUEST_SPEC}))

    def test_list_and_query(self):
        uuid = self.reserve()
        expected = [{'id': 'res-1', 'lease_id': 'lease-1',
                     'start_date': START, 'end_date': END}]
        self.assertEqual([{'resource_id': uuid, 'reservations': expected}],
                         self.plugin.list_allocations(
                             {'reservation_id': 'res-1'}))
        self.assertEqual({uuid: expected, 'other': []},
                         self.plugin.query_allocations([uuid, 'other']))
        self.reservations['res-1']['status'] = 'deleted'
        self.assertEqual([], self.plugin.list_allocations({}))

    def test_get_is_the_hold(self):
        uuid = self.reserve()
        self.assertEqual(uuid, self.plugin.get(uuid)['uuid'])
        self.assertRaises(blazar_exc.NotFound, self.plugin.get, 'gone')


class TestEntryPoint(testtools.TestCase):

    def test_blazar_finds_the_plugin(self):
        from reserveapi_testing import blazar as blazar_fixture
        (entry_point,) = blazar_fixture.check_plugin_installed()
        self.assertIs(plugin.HoldPlugin, entry_point.load())
        self.assertEqual(plugin.PLUGIN_NAME, entry_point.name)


