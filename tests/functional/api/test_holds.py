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

"""``/v1/holds`` (microversions 1.5 and 1.6): the api-ref's story,
admission at the first instant that does not fit, reservations that
keep every hold, pins and what older clients see of them, and who may
do what."""

import datetime
import re
import uuid

import fixtures

from reserveapi import reservations
from reserveapi.db import holds as db_holds
from reserveapi.holds import admission
from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.functional import base
from tests.functional.api import reservation_base as rbase

VERSION = {'OpenStack-API-Version': 'baremetal-reservation 1.6'}
OLDER = {'OpenStack-API-Version': 'baremetal-reservation 1.5'}
"""Holds without pins: what clients before 1.6 see."""
PINS_FIELDS = ('at_end', 'reclaimed', 'shortfall', 'flavor_id',
               'boot_resource_class', 'pinned', 'in_use')
SAMPLE_PROJECT = rbase.SAMPLE_PROJECT
OTHER_PROJECT = rbase.OTHER_PROJECT
PADDING = datetime.timedelta(hours=1)
"""``[holds] cleaning_padding`` by default."""
ISO_UTC = re.compile(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00')
sample = examples.sample


def moment(**delta):
    """Now (UTC, to the second) moved by ``delta``."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    return now + datetime.timedelta(**delta)


class HoldsTestCase(rbase.ReservationTestCase):

    def hold(self, start, end, amount=1, project_id=SAMPLE_PROJECT,
             headers=None, version=VERSION, **fields):
        """POST a hold of the sample's spec; times are datetimes."""
        body = dict(sample('holds/create-request.json'),
                    start=start.isoformat(), end=end.isoformat(),
                    amount=amount, project_id=project_id, **fields)
        return self.call('POST', '/v1/holds', body, headers, version)

    def admitted(self, *args, **kwargs):
        response = self.hold(*args, **kwargs)
        self.assertEqual(201, response.status_int, response.text)
        return response.json

    def call(self, method, path, body=None, headers=None, version=VERSION):
        return self.request(method, path, body, headers=dict(
            self.admin_headers if headers is None else headers, **version))

    def show(self, hold_uuid, headers=None, version=VERSION):
        response = self.call('GET', '/v1/holds/' + hold_uuid,
                             headers=headers, version=version)
        self.assertEqual(200, response.status_int, response.text)
        return response.json

    def listed(self, query='', headers=None):
        response = self.call('GET', '/v1/holds' + query, headers=headers)
        self.assertEqual(200, response.status_int, response.text)
        return [hold['uuid'] for hold in response.json['holds']]

    def gold_nodes(self, count):
        self.nodes(*(inventory.node('node-gold-%d' % number)
                     for number in range(1, count + 1)))

    def running(self, amount):
        """An admitted hold of the sample project that has started."""
        return self.admitted(moment(seconds=-10), moment(hours=8),
                             amount=amount)

    def pin(self, hold, count):
        """Pin ``count`` nodes for ``hold``, as the worker does at its
        start."""
        self.assertEqual(count, reservations.pin(
            db_holds.get_hold(hold['uuid']), count))

    def boot(self, hold):
        """A boot of the hold's flavor by its project, as nova-compute
        reserves it."""
        response = self.reserve(
            request_spec={'extra_specs': {
                'resources:' + hold['boot_resource_class']: '1',
                'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
                'resources:DISK_GB': '0'}},
            headers=self.service_headers, project_id=hold['project_id'])
        self.assertEqual(201, response.status_int, response.text)
        return response.json


class TestHoldStory(HoldsTestCase):
    """The api-ref's examples, from the first POST to the cancel."""

    scenarios = base.EVERY_BACKEND

    def test_hold_list_update_cancel(self):
        self.gold_nodes(3)
        start, end = moment(hours=3), moment(hours=27)
        body = dict(sample('holds/create-request.json'),
                    start=start.isoformat(), end=end.isoformat())
        created = self.call('POST', '/v1/holds', body)
        self.assertEqual(201, created.status_int, created.text)
        hold = created.json
        self.assertMatchesSample(hold, 'holds/create-response.json')
        self.assertEqual((start.isoformat(), end.isoformat(), 'pending'),
                         (hold['start'], hold['end'], hold['state']))
        # Kept at its end by default; no flavor and no pin yet.
        self.assertEqual(
            ('keep', None, 0, 0, 'CUSTOM_HOLD_' + uuid.UUID(
                hold['uuid']).hex.upper()),
            (hold['at_end'], hold['flavor_id'], hold['pinned'],
             hold['in_use'], hold['boot_resource_class']))
        location = 'http://localhost/v1/holds/' + hold['uuid']
        self.assertEqual(location, created.headers['Location'])
        self.assertEqual(location, hold['links'][0]['href'])
        self.assertEqual(hold, self.show(hold['uuid']))

        other = self.admitted(moment(hours=31), moment(hours=32),
                              project_id=OTHER_PROJECT)
        page = self.call('GET', '/v1/holds?limit=1&project_id='
                         + SAMPLE_PROJECT)
        self.assertEqual(200, page.status_int, page.text)
        self.assertEqual([hold], page.json['holds'])
        self.assertNotIn('next', page.json)
        page = self.call('GET', '/v1/holds?limit=1')
        self.assertMatchesSample(page.json, 'holds/list-response.json')
        self.assertEqual([hold['uuid'], other['uuid']], self.listed())
        self.assertEqual([other['uuid']],
                         self.listed('?limit=1&marker=' + hold['uuid']))

        new_end = moment(hours=28)
        update = dict(sample('holds/update-request.json'),
                      end=new_end.isoformat())
        updated = self.call('PATCH', '/v1/holds/' + hold['uuid'], update)
        self.assertEqual(200, updated.status_int, updated.text)
        self.assertMatchesSample(updated.json, 'holds/update-response.json')
        self.assertEqual((3, new_end.isoformat()),
                         (updated.json['amount'], updated.json['end']))
        self.assertEqual(updated.json, self.show(hold['uuid']))

        path = '/v1/holds/' + hold['uuid']
        deleted = self.call('DELETE', path)
        self.assertEqual((204, b''), (deleted.status_int, deleted.body))
        cancelled = self.show(hold['uuid'])
        self.assertEqual('cancelled', cancelled['state'])
        self.assertRegex(cancelled['cancelled_at'], ISO_UTC)
        # Again: nothing changes.
        self.assertEqual(204, self.call('DELETE', path).status_int)
        self.assertEqual(cancelled, self.show(hold['uuid']))
        self.assertError(self.call('PATCH', path, {'amount': 1}), 409,
                         'reserveapi.conflict')

    def test_show_an_active_hold(self):
        # Its nodes pinned and its flavor made, as the worker does; then
        # one boot of its project takes a pin.
        self.gold_nodes(2)
        hold = self.running(amount=2)
        self.pin(hold, 2)
        flavor_id = str(uuid.uuid4())
        db_holds.set_hold_fields(hold['uuid'], {'flavor_id': flavor_id})
        booted = self.boot(hold)
        shown = self.show(hold['uuid'])
        self.assertMatchesSample(shown, 'holds/show-response.json')
        self.assertEqual(('active', flavor_id, 1, 1),
                         (shown['state'], shown['flavor_id'],
                          shown['pinned'], shown['in_use']))
        self.assertEqual(hold['resource_class'], booted['resource_class'])

    def test_times_are_answered_in_utc(self):
        self.gold_nodes(1)
        start, end = moment(hours=3), moment(hours=4)
        local = start.astimezone(
            datetime.timezone(datetime.timedelta(hours=2))).isoformat()
        self.assertIn('+02:00', local)
        body = dict(sample('holds/create-request.json'), amount=1,
                    start=local,
                    end=end.isoformat().replace('+00:00', 'Z'))
        created = self.call('POST', '/v1/holds', body)
        self.assertEqual(201, created.status_int, created.text)
        self.assertEqual((start.isoformat(), end.isoformat()),
                         (created.json['start'], created.json['end']))

    def test_a_time_without_offset_is_a_400_naming_it(self):
        self.gold_nodes(1)
        naive = moment(hours=3).replace(tzinfo=None)
        for field in ('start', 'end'):
            body = dict(sample('holds/create-request.json'),
                        start=moment(hours=2).isoformat(),
                        end=moment(hours=4).isoformat())
            body[field] = naive.isoformat()
            error = self.assertError(self.call('POST', '/v1/holds', body),
                                     400, 'reserveapi.invalid')
            self.assertEqual(
                'Invalid input: field %s must be a date and time with a UTC '
                'offset, such as 2030-01-31T08:00:00+00:00, got "%s".'
                % (field, naive.isoformat()), error['detail'])
            body[field] = 'next tuesday'
            error = self.assertError(self.call('POST', '/v1/holds', body),
                                     400, 'reserveapi.invalid')
            self.assertIn('field %s is not an ISO 8601' % field,
                          error['detail'])
        self.assertEqual([], self.listed())

    def test_an_end_not_after_the_start_is_a_400(self):
        self.gold_nodes(1)
        start = moment(hours=3)
        for end in (start, moment(hours=2)):
            error = self.assertError(self.hold(start, end), 400,
                                     'reserveapi.invalid_hold')
            self.assertIn('not after its start', error['detail'])
        self.assertEqual([], self.listed())

    def test_bad_bodies_are_400_naming_the_field(self):
        self.gold_nodes(1)
        start, end = moment(hours=2), moment(hours=3)
        for fields, named in (({'colour': 'red'}, 'colour'),
                              ({'amount': 0}, 'amount'),
                              ({'amount': '2'}, 'amount'),
                              ({'project_id': ' '}, 'project_id'),
                              ({'conductor_group': 'a b'},
                               'conductor_group')):
            error = self.assertError(self.hold(start, end, **fields), 400,
                                     'reserveapi.invalid')
            self.assertIn(named, error['detail'])
        body = sample('holds/create-request.json')
        del body['amount']
        error = self.assertError(self.call('POST', '/v1/holds', body), 400,
                                 'reserveapi.invalid')
        self.assertIn('field amount is missing', error['detail'])
        error = self.assertError(
            self.hold(start, end, request_spec=rbase.spec(
                extra_specs={'capabilities:gpus': '> 4'})),
            400, 'reserveapi.invalid_request_spec')
        self.assertEqual([], self.listed())

    def test_patch_takes_end_and_amount_only(self):
        self.gold_nodes(2)
        hold = self.admitted(moment(hours=3), moment(hours=5))
        path = '/v1/holds/' + hold['uuid']
        for body, named in (({'start': moment(hours=2).isoformat()},
                             'start'),
                            ({'amount': 1, 'project_id': OTHER_PROJECT},
                             'project_id'),
                            ({}, 'missing both end and amount'),
                            ({'amount': 0}, 'amount'),
                            ({'end': None}, 'end'),
                            ({'end': moment(hours=6).replace(
                                tzinfo=None).isoformat()}, 'end')):
            error = self.assertError(self.call('PATCH', path, body), 400,
                                     'reserveapi.invalid')
            self.assertIn(named, error['detail'])
        self.assertEqual(hold, self.show(hold['uuid']))
        # A hold that grows beyond the nodes is not admitted; one that
        # shrinks always is.
        self.assertError(self.call('PATCH', path, {'amount': 3}), 409,
                         'reserveapi.hold_not_admitted')
        patched = self.call('PATCH', path, {'amount': 2})
        self.assertEqual(200, patched.status_int, patched.text)
        self.assertEqual(2, patched.json['amount'])

    def test_below_microversion_1_5_holds_do_not_exist(self):
        self.gold_nodes(1)
        hold = self.admitted(moment(hours=3), moment(hours=5))
        path = '/v1/holds/' + hold['uuid']
        for headers in ({}, {'OpenStack-API-Version':
                             'baremetal-reservation 1.4'}):
            for method, route, body in (
                    ('GET', '/v1/holds', None),
                    ('POST', '/v1/holds',
                     sample('holds/create-request.json')),
                    ('GET', path, None), ('PATCH', path, {'amount': 1}),
                    ('DELETE', path, None)):
                error = self.assertError(
                    self.request(method, route, body, headers=dict(
                        self.admin_headers, **headers)),
                    404, 'reserveapi.not_found')
                self.assertIn('needs microversion 1.5 or later',
                              error['detail'])
        self.assertEqual('pending', self.show(hold['uuid'])['state'])

    def test_list_filters_sorts_and_pages(self):
        self.nodes(inventory.node('node-gold-1'),
                   inventory.node('node-silver-1',
                                  resource_class='baremetal-silver'))
        gold = self.admitted(moment(hours=5), moment(hours=6))
        silver = self.admitted(
            moment(hours=3), moment(hours=4),
            request_spec=rbase.spec(extra_specs={
                'resources:CUSTOM_BAREMETAL_GOLD': None,
                'resources:CUSTOM_BAREMETAL_SILVER': '1'}))
        other = self.admitted(moment(hours=8), moment(hours=9),
                              project_id=OTHER_PROJECT)
        self.assertEqual('CUSTOM_BAREMETAL_SILVER',
                         self.show(silver['uuid'])['resource_class'])
        self.assertEqual([gold['uuid'], silver['uuid']],
                         self.listed('?project_id=' + SAMPLE_PROJECT))
        self.assertEqual([gold['uuid'], other['uuid']], self.listed(
            '?resource_class=CUSTOM_BAREMETAL_GOLD'))
        self.assertEqual([other['uuid'], gold['uuid'], silver['uuid']],
                         self.listed('?sort_key=start&sort_dir=desc'))
        self.assertEqual([silver['uuid'], gold['uuid'], other['uuid']],
                         self.listed('?sort_key=end'))
        pages, url = [], '/v1/holds?sort_key=start&limit=2'
        while url:
            page = self.call('GET', url.replace('http://localhost', ''))
            self.assertEqual(200, page.status_int, page.text)
            pages.append([hold['uuid'] for hold in page.json['holds']])
            url = page.json.get('next')
        self.assertEqual([[silver['uuid'], gold['uuid']], [other['uuid']]],
                         pages)
        for query, named in (('?sort_key=start_at', 'sort_key'),
                             ('?state=pending', 'state'),
                             ('?marker=' + str(uuid.uuid4()), 'marker'),
                             ('?limit=0', 'limit')):
            error = self.assertError(self.call('GET', '/v1/holds' + query),
                                     400, 'reserveapi.invalid')
            self.assertIn(named, error['detail'])


class TestPins(HoldsTestCase):
    """Microversion 1.6: what a hold pinned and what becomes of it at its
    end; older clients see neither, nor the states new in 1.6."""

    scenarios = base.EVERY_BACKEND

    def test_older_clients_see_no_new_field(self):
        self.gold_nodes(3)
        hold = self.admitted(moment(hours=3), moment(hours=5))
        path = '/v1/holds/' + hold['uuid']
        created = self.hold(moment(hours=6), moment(hours=7), version=OLDER)
        self.assertEqual(201, created.status_int, created.text)
        updated = self.call('PATCH', path, {'amount': 2}, version=OLDER)
        self.assertEqual(200, updated.status_int, updated.text)
        listed = self.call('GET', '/v1/holds', version=OLDER).json['holds']
        older = [created.json, updated.json,
                 self.show(hold['uuid'], version=OLDER)] + listed
        self.assertEqual(5, len(older))
        for body in older:
            self.assertEqual([], [name for name in PINS_FIELDS
                                  if name in body])
        newer = self.show(hold['uuid'])
        self.assertEqual(sorted(set(newer) - set(PINS_FIELDS)),
                         sorted(older[2]))

    def test_at_end(self):
        self.gold_nodes(2)
        hold = self.admitted(moment(hours=3), moment(hours=5),
                             at_end='delete')
        self.assertEqual('delete', hold['at_end'])
        self.assertEqual('delete', self.show(hold['uuid'])['at_end'])
        for value in ('later', 'Delete', None, 1):
            error = self.assertError(
                self.hold(moment(hours=6), moment(hours=7), at_end=value),
                400, 'reserveapi.invalid')
            self.assertIn('field at_end must be "keep" or "delete"',
                          error['detail'])
        # Before 1.6 it is a field like any unknown one.
        error = self.assertError(
            self.hold(moment(hours=6), moment(hours=7), at_end='keep',
                      version=OLDER),
            400, 'reserveapi.invalid')
        self.assertIn('unknown field(s) "at_end"', error['detail'])
        self.assertEqual([hold['uuid']], self.listed())

    def test_new_states_are_active_before_1_6(self):
        self.gold_nodes(2)
        hold = self.running(amount=2)
        for fields, state in (({'shortfall': 1}, 'degraded'),
                              ({'reclaimed': 1}, 'reclaimed')):
            db_holds.set_hold_fields(hold['uuid'], fields)
            shown = self.show(hold['uuid'])
            self.assertEqual(state, shown['state'])
            self.assertEqual(1, shown['shortfall'])
            self.assertEqual('active', self.show(
                hold['uuid'], version=OLDER)['state'])
            self.assertEqual(['active'], [
                listed['state'] for listed in self.call(
                    'GET', '/v1/holds', version=OLDER).json['holds']])
        self.assertEqual(1, shown['reclaimed'])

    def test_capacity_has_a_row_per_running_hold_from_1_6(self):
        self.gold_nodes(3)
        hold = self.running(amount=2)
        self.pin(hold, 2)
        self.boot(hold)
        capacity = self.call('GET', '/v1/capacity').json
        self.assertMatchesSample(capacity,
                                 'capacity/capacity-holds-response.json')
        # The pin and the boot are reserved nodes of their class too.
        rows = [('CUSTOM_BAREMETAL_GOLD', 3, 1, 2),
                (hold['boot_resource_class'], 2, 1, 1)]
        self.assertEqual(rows, [
            (row['resource_class'], row['total'], row['available'],
             row['reserved']) for row in capacity['capacity']])
        # A pending hold has no row yet.
        self.admitted(moment(days=2), moment(days=3),
                      project_id=OTHER_PROJECT)
        self.assertEqual(rows, [
            (row['resource_class'], row['total'], row['available'],
             row['reserved'])
            for row in self.call('GET', '/v1/capacity').json['capacity']])
        # Its boot is the host's, in both rows.
        for host, booted in ((rbase.HOST, 1), (rbase.NEW_HOST, 0)):
            by_host = self.call('GET', '/v1/capacity?host=' + host).json
            self.assertEqual([booted, booted], [
                row['reserved_by_host'] for row in by_host['capacity']])
            # The gold pin and boot are the hold's: allocated under its
            # class, reported as reserved under gold.
            self.assertEqual([(2, booted), (0, 0)], [
                (row['hold_nodes'], row['hold_nodes_by_host'])
                for row in by_host['capacity']])
        older = self.call('GET', '/v1/capacity', version=OLDER).json
        self.assertEqual(['CUSTOM_BAREMETAL_GOLD'], [
            row['resource_class'] for row in older['capacity']])
        self.assertNotIn('hold_nodes', older['capacity'][0])

    def test_cancel_frees_the_pins_at_once(self):
        self.gold_nodes(2)
        hold = self.running(amount=2)
        self.pin(hold, 2)
        self.assertEqual(2, self.show(hold['uuid'])['pinned'])
        self.assertNoValidNode(self.reserve(headers=self.service_headers,
                                            project_id=OTHER_PROJECT))
        self.assertEqual(204, self.call(
            'DELETE', '/v1/holds/' + hold['uuid']).status_int)
        cancelled = self.show(hold['uuid'])
        self.assertEqual(('cancelled', 0),
                         (cancelled['state'], cancelled['pinned']))
        for _node in range(2):
            response = self.reserve(headers=self.service_headers,
                                    project_id=OTHER_PROJECT)
            self.assertEqual(201, response.status_int, response.text)

    def test_a_page_reads_its_holds_usage_once(self):
        self.gold_nodes(3)
        for hour in (3, 6, 9):
            self.admitted(moment(hours=hour), moment(hours=hour + 1),
                          amount=3)
        usage = self.useFixture(fixtures.MockPatchObject(
            admission, 'usage', wraps=admission.usage)).mock
        self.assertEqual(3, len(self.listed()))
        self.assertEqual(1, usage.call_count)
        self.assertEqual(3, len(self.call(
            'GET', '/v1/holds', version=OLDER).json['holds']))
        self.assertEqual(1, usage.call_count)


class TestAdmission(HoldsTestCase):
    """A hold fits beside the others at every instant of its padded
    window, or it is refused at the first instant that does not."""

    scenarios = base.EVERY_BACKEND

    def test_refused_at_the_first_instant_that_does_not_fit(self):
        self.gold_nodes(2)
        start, end = moment(hours=3), moment(hours=8)
        self.admitted(start, end, amount=2)
        response = self.hold(start + PADDING, start + 2 * PADDING,
                             project_id=OTHER_PROJECT)
        error = self.assertError(response, 409,
                                 'reserveapi.hold_not_admitted')
        # The new hold's padded window begins at ``start``, where the
        # first hold holds both nodes.
        self.assertEqual(
            'Hold not admitted: at %s the holds overlapping it want 3 '
            'nodes and only 2 of them can be met.' % start.isoformat(),
            error['detail'])
        shown = sample('holds/not-admitted-response.json')['errors'][0]
        at = re.search(ISO_UTC, shown['detail']).group(0)
        answer = response.json
        answer['errors'][0]['detail'] = error['detail'].replace(
            start.isoformat(), at)
        self.assertMatchesSample(answer, 'holds/not-admitted-response.json')
        # Both paddings lie between one hold's end and the next's start.
        self.assertError(
            self.hold(end + 2 * PADDING - datetime.timedelta(seconds=1),
                      end + 3 * PADDING, project_id=OTHER_PROJECT),
            409, 'reserveapi.hold_not_admitted')
        self.admitted(end + 2 * PADDING, end + 3 * PADDING,
                      project_id=OTHER_PROJECT)
        self.assertEqual(2, len(self.listed()))

    def test_a_cancelled_hold_frees_its_nodes(self):
        self.gold_nodes(1)
        start, end = moment(hours=3), moment(hours=5)
        hold = self.admitted(start, end)
        self.assertError(self.hold(start, end, project_id=OTHER_PROJECT),
                         409, 'reserveapi.hold_not_admitted')
        self.assertEqual(204, self.call(
            'DELETE', '/v1/holds/' + hold['uuid']).status_int)
        self.admitted(start, end, project_id=OTHER_PROJECT)

    def test_nodes_of_another_class_do_not_count(self):
        self.nodes(inventory.node('node-gold-1'),
                   inventory.node('node-silver-1',
                                  resource_class='baremetal-silver'))
        error = self.assertError(
            self.hold(moment(hours=3), moment(hours=5), amount=2), 409,
            'reserveapi.hold_not_admitted')
        self.assertIn('want 2 nodes and only 1 of them', error['detail'])


class TestReservationsKeepHolds(HoldsTestCase):
    """An on-demand reservation takes a node only if every hold can
    still be met without it."""

    scenarios = base.EVERY_BACKEND

    def reserve_for(self, project_id):
        return self.reserve(headers=self.service_headers,
                            project_id=project_id)

    def test_another_project_gets_only_the_nodes_beyond_the_hold(self):
        self.gold_nodes(3)
        hold = self.admitted(moment(seconds=-10), moment(hours=8),
                             amount=2)
        self.assertEqual('active', hold['state'])
        self.assertEqual(201, self.reserve_for(OTHER_PROJECT).status_int)
        self.assertNoValidNode(self.reserve_for(OTHER_PROJECT))
        # The hold's own project reserves during its hold: its nodes.
        for _node in range(2):
            response = self.reserve_for(SAMPLE_PROJECT)
            self.assertEqual(201, response.status_int, response.text)
        self.assertNoValidNode(self.reserve_for(SAMPLE_PROJECT))

    def test_a_pending_hold_keeps_its_nodes(self):
        # It begins in half an hour; its nodes are already being kept
        # for cleaning.
        self.gold_nodes(3)
        hold = self.admitted(moment(minutes=30), moment(hours=8),
                             amount=2)
        self.assertEqual('pending', hold['state'])
        self.assertEqual(201, self.reserve_for(OTHER_PROJECT).status_int)
        refusal = self.reserve_for(OTHER_PROJECT)
        self.assertNoValidNode(refusal)
        self.assertEqual(204, self.call(
            'DELETE', '/v1/holds/' + hold['uuid']).status_int)
        self.assertEqual(201, self.reserve_for(OTHER_PROJECT).status_int)

    def test_a_later_hold_keeps_its_nodes_already(self):
        # An on-demand reservation has no end: a node it took now would
        # still be taken when the hold begins.
        self.gold_nodes(2)
        self.admitted(moment(days=3), moment(days=4))
        self.assertEqual(201, self.reserve_for(OTHER_PROJECT).status_int)
        self.assertNoValidNode(self.reserve_for(OTHER_PROJECT))


class TestHoldPolicy(HoldsTestCase):
    """Admin and service hold; a project's reader sees its own holds, its
    manager cancels them; another project's hold is not there."""

    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        self.gold_nodes(2)
        self.hold_of_a = self.admitted(moment(hours=3), moment(hours=5),
                                       project_id=base.PROJECT_ID)
        self.path = '/v1/holds/' + self.hold_of_a['uuid']
        self.hold_of_b = self.admitted(moment(hours=3), moment(hours=5),
                                       project_id=OTHER_PROJECT)

    def test_a_reader_sees_its_projects_holds_only(self):
        reader = self.headers_for(['reader'])
        self.assertEqual(self.hold_of_a, self.show(self.hold_of_a['uuid'],
                                                   headers=reader))
        for query in ('', '?project_id=' + OTHER_PROJECT,
                      '?resource_class=CUSTOM_BAREMETAL_GOLD'):
            self.assertEqual([self.hold_of_a['uuid']],
                             self.listed(query, headers=reader))
        missing = self.assertError(
            self.call('GET', '/v1/holds/' + str(uuid.uuid4()),
                      headers=reader), 404, 'reserveapi.hold_not_found')
        theirs = self.assertError(
            self.call('GET', '/v1/holds/' + self.hold_of_b['uuid'],
                      headers=reader), 404, 'reserveapi.hold_not_found')
        self.assertEqual(len(missing['detail']), len(theirs['detail']))
        self.assertError(
            self.call('GET', '/v1/holds?marker=' + self.hold_of_b['uuid'],
                      headers=reader), 400, 'reserveapi.invalid')

    def test_another_projects_reader_sees_nothing(self):
        stranger = self.headers_for(['reader'], project_id='someone-else')
        self.assertError(self.call('GET', self.path, headers=stranger), 404,
                         'reserveapi.hold_not_found')
        self.assertEqual([], self.listed(headers=stranger))
        self.assertEqual([], self.listed('?project_id=' + base.PROJECT_ID,
                                         headers=stranger))

    def test_members_neither_hold_nor_change_nor_cancel(self):
        member = self.headers_for(['member', 'reader'])
        for method, path, body in (
                ('POST', '/v1/holds', dict(
                    sample('holds/create-request.json'),
                    project_id=base.PROJECT_ID,
                    start=moment(hours=6).isoformat(),
                    end=moment(hours=7).isoformat())),
                ('PATCH', self.path, {'amount': 2}),
                ('DELETE', self.path, None)):
            self.assertError(self.call(method, path, body, headers=member),
                             403, 'reserveapi.forbidden')
        self.assertEqual(self.hold_of_a, self.show(self.hold_of_a['uuid']))
        self.assertEqual(2, len(self.listed()))

    def test_a_manager_cancels_its_projects_holds(self):
        stranger = self.headers_for(['manager', 'member', 'reader'],
                                    project_id='someone-else')
        self.assertError(self.call('DELETE', self.path, headers=stranger),
                         404, 'reserveapi.hold_not_found')
        self.assertEqual('pending', self.show(self.hold_of_a['uuid'])[
            'state'])
        manager = self.headers_for(['manager', 'member', 'reader'])
        self.assertError(self.call('PATCH', self.path, {'amount': 2},
                                   headers=manager),
                         403, 'reserveapi.forbidden')
        self.assertEqual(204, self.call('DELETE', self.path,
                                        headers=manager).status_int)
        self.assertEqual('cancelled', self.show(self.hold_of_a['uuid'])[
            'state'])
        self.assertEqual('pending', self.show(self.hold_of_b['uuid'])[
            'state'])

    def test_service_holds_for_a_project(self):
        service = self.service_headers
        hold = self.admitted(moment(hours=8), moment(hours=9),
                             project_id=SAMPLE_PROJECT, headers=service)
        self.assertEqual(SAMPLE_PROJECT, hold['project_id'])
        self.assertEqual(3, len(self.listed(headers=service)))
        patched = self.call('PATCH', '/v1/holds/' + hold['uuid'],
                            {'amount': 2}, headers=service)
        self.assertEqual(200, patched.status_int, patched.text)

    def test_a_reader_without_a_project_lists_nothing(self):
        no_project = {'X-Roles': 'reader', 'X-User-Id': 'user',
                      'X-Identity-Status': 'Confirmed'}
        self.assertError(self.call('GET', '/v1/holds', headers=no_project),
                         403, 'reserveapi.forbidden')


class TestPromisedNodes(HoldsTestCase):
    """Capacity and candidates say how many free nodes the holds keep:
    a host reports them as not free, so Placement stops sending boots
    that would take them."""

    scenarios = base.EVERY_BACKEND

    def candidates(self, project_id, version=VERSION):
        body = dict(sample('candidates/candidates-request.json'),
                    project_id=project_id)
        response = self.request('POST', '/v1/candidates', body,
                                headers=dict(self.admin_headers, **version))
        self.assertEqual(200, response.status_int, response.text)
        return response.json

    def test_a_pending_hold_is_promised(self):
        self.gold_nodes(4)
        self.admitted(moment(hours=3), moment(hours=5), amount=3)

        capacity = self.call('GET', '/v1/capacity', version=OLDER).json
        self.assertMatchesSample(capacity,
                                 'capacity/capacity-promised-response.json')
        self.assertEqual([('CUSTOM_BAREMETAL_GOLD', 4, 3)], [
            (row['resource_class'], row['available'], row['promised'])
            for row in capacity['capacity']])
        answer = self.candidates(OTHER_PROJECT)
        self.assertMatchesSample(
            answer, 'candidates/candidates-promised-response.json')
        self.assertEqual((4, 3), (answer['count'], answer['promised']))
        # Its own project's boots before the start do not fill it.
        self.assertEqual(3, self.candidates(SAMPLE_PROJECT)['promised'])
        # Before 1.5 the fields are not there.
        older = {'OpenStack-API-Version': 'baremetal-reservation 1.4'}
        self.assertNotIn('promised', self.candidates(
            OTHER_PROJECT, version=older))
        self.assertNotIn('promised', self.request(
            'GET', '/v1/capacity', headers=dict(
                self.admin_headers, **older)).json['capacity'][0])

    def test_an_active_hold_is_kept_from_other_projects_only(self):
        self.gold_nodes(4)
        self.admitted(moment(seconds=-10), moment(hours=5), amount=3)

        # Its project's boots reach a host: capacity keeps nothing.
        capacity = self.call('GET', '/v1/capacity').json
        self.assertEqual(0, capacity['capacity'][0]['promised'])
        self.assertEqual(0, self.candidates(SAMPLE_PROJECT)['promised'])
        self.assertEqual(3, self.candidates(OTHER_PROJECT)['promised'])
        self.assertEqual(201, self.reserve(
            headers=self.service_headers,
            project_id=SAMPLE_PROJECT).status_int)
        # One of its nodes used by the project: two are still kept.
        self.assertEqual(2, self.candidates(OTHER_PROJECT)['promised'])

    def window(self, start, end, version=VERSION, **fields):
        body = dict(sample('candidates/candidates-window-request.json'),
                    project_id=OTHER_PROJECT, **fields)
        del body['start'], body['end']
        body.update((name, value.isoformat()) for name, value in (
            ('start', start), ('end', end)) if value is not None)
        return self.request('POST', '/v1/candidates', body,
                            headers=dict(self.admin_headers, **version))

    def test_a_window_asks_how_many_a_hold_would_get(self):
        self.gold_nodes(4)
        self.admitted(moment(hours=3), moment(hours=5), amount=3)

        response = self.window(moment(hours=4), moment(hours=6))
        self.assertEqual(200, response.status_int, response.text)
        self.assertMatchesSample(
            response.json, 'candidates/candidates-window-response.json')
        self.assertEqual(1, response.json['admissible'])
        # Beyond the hold and both paddings: every node.
        self.assertEqual(4, self.window(moment(hours=8), moment(
            hours=9)).json['admissible'])
        # What it answers is what a hold is admitted for.
        self.assertEqual(409, self.hold(moment(hours=4), moment(hours=6),
                                        amount=2,
                                        project_id=OTHER_PROJECT).status_int)
        self.admitted(moment(hours=4), moment(hours=6),
                      project_id=OTHER_PROJECT)
        self.assertEqual(0, self.window(moment(hours=4), moment(
            hours=6)).json['admissible'])

    def test_a_window_needs_both_ends_in_order_and_1_5(self):
        self.gold_nodes(1)
        self.assertError(self.window(moment(hours=1), None), 400,
                         'reserveapi.invalid')
        self.assertError(self.window(moment(hours=2), moment(hours=1)),
                         400, 'reserveapi.invalid_hold')
        older = {'OpenStack-API-Version': 'baremetal-reservation 1.4'}
        self.assertError(self.window(moment(hours=1), moment(hours=2),
                                     version=older),
                         400, 'reserveapi.invalid')
        self.assertNotIn('admissible', self.window(None, None).json)

    def test_a_window_at_the_calendars_end_is_a_400(self):
        # Padded by the cleaning time it would run past year 9999.
        self.gold_nodes(1)
        last = datetime.datetime(9999, 12, 31, 23, 30,
                                 tzinfo=datetime.timezone.utc)
        self.assertError(self.window(moment(hours=1), last), 400,
                         'reserveapi.invalid_hold')
