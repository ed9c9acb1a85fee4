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

"""The API's WSME types: the structure of bodies and path parameters.

The request spec's semantic rules (Nova's keys and operators) are the
matcher's and tested there; its structure is checked here, before the
domain sees it.
"""

import datetime

import testtools

from reserveapi.api import body
from reserveapi.api import types
from reserveapi.api.controllers.v1 import holds as hold_controller
from reserveapi.api.controllers.v1 import reservations as controller
from reserveapi.common import exception
from reserveapi_testing import examples

UPPER_UUID = '6F1C0A2E-5B4D-4C3E-9A8F-7E6D5C4B3A21'


def _spec(**fields):
    """The API's plain request spec from ``fields``, or the error."""
    return types.to_plain(body.from_json(types.RequestSpec, fields))


def _reservation(**changes):
    document = {'instance_uuid': UPPER_UUID, 'host': 'compute-3',
                'request_spec': examples.REQUEST_SPEC}
    document.update(changes)
    return body.from_json(controller.ReservationRequest, document)


class TestRequestSpec(testtools.TestCase):

    def test_example_comes_through_unchanged(self):
        self.assertEqual(examples.REQUEST_SPEC,
                         _spec(**examples.REQUEST_SPEC))

    def test_unknown_fields_are_ignored(self):
        self.assertEqual({'memory_mb': 1, 'image': {'id': 'i'}},
                         _spec(name='bm.gold', flavorid='x', memory_mb=1,
                               image={'id': 'i', 'min_ram': 0}))

    def test_counts_must_be_non_negative_integers(self):
        for name in ('memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb', 'swap'):
            for value in (-1, '1024', 1.5, 1024.0, True, None, [1]):
                error = self.assertRaises(exception.InvalidRequestSpec,
                                          _spec, **{name: value})
                self.assertEqual(name, error.key)
                self.assertIn('non-negative integer', error.detail)

    def test_vcpu_weight(self):
        for value in (None, 0, 10):
            _spec(vcpu_weight=value)
        for value in (-1, 'high', 1.5, False):
            error = self.assertRaises(exception.InvalidRequestSpec,
                                      _spec, vcpu_weight=value)
            self.assertEqual('vcpu_weight', error.key)

    def test_rxtx_factor(self):
        for value in (0, 1, 1.0, 2.5):
            _spec(rxtx_factor=value)
        for value in (-0.5, '1.0', None, True, float('nan'), float('inf')):
            error = self.assertRaises(exception.InvalidRequestSpec,
                                      _spec, rxtx_factor=value)
            self.assertEqual('rxtx_factor', error.key)

    def test_extra_spec_values_must_be_strings(self):
        for key, value in (('capabilities:boot_mode', True),
                           ('resources:CUSTOM_GOLD', 1),
                           ('trait:CUSTOM_RAID', None),
                           ('hw:cpu_policy', ['dedicated'])):
            error = self.assertRaises(exception.InvalidRequestSpec, _spec,
                                      extra_specs={key: value})
            self.assertEqual('extra_specs.%s' % key, error.key)
            self.assertIn('values are strings', error.detail)

    def test_extra_specs_must_be_an_object(self):
        error = self.assertRaises(exception.InvalidRequestSpec, _spec,
                                  extra_specs=['trait:CUSTOM_RAID'])
        self.assertEqual('extra_specs', error.key)

    def test_extra_spec_keys_must_be_strings(self):
        error = self.assertRaises(exception.InvalidRequestSpec, _spec,
                                  extra_specs={1: 'x'})
        self.assertEqual('extra_specs', error.key)

    def test_image_shapes(self):
        for image, key, fragment in (
                ('image-uuid', 'image', 'must be an object'),
                ({'id': 4}, 'image.id', 'must be a string'),
                ({'properties': ['x']}, 'image.properties',
                 'must be an object'),
                ({'properties': []}, 'image.properties',
                 'must be an object')):
            error = self.assertRaises(exception.InvalidRequestSpec, _spec,
                                      image=image)
            self.assertEqual(key, error.key)
            self.assertIn(fragment, error.detail)

    def test_nulls_mean_absent_where_nova_sends_them(self):
        self.assertEqual({'extra_specs': None, 'image': None,
                          'vcpu_weight': None},
                         _spec(extra_specs=None, image=None,
                               vcpu_weight=None))
        self.assertEqual({'id': None, 'properties': None},
                         _spec(image={'id': None,
                                      'properties': None})['image'])


class TestReservationRequest(testtools.TestCase):

    def test_uuid_made_canonical(self):
        self.assertEqual(UPPER_UUID.lower(), _reservation().instance_uuid)

    def test_request_spec_must_be_an_object(self):
        for value in (['memory_mb'], '{}', None):
            error = self.assertRaises(exception.Invalid, _reservation,
                                      request_spec=value)
            self.assertNotIsInstance(error, exception.InvalidRequestSpec)
            self.assertIn('request_spec', error.detail)

    def test_fields_are_named(self):
        for changes, field in (
                ({'instance_uuid': 'nope'}, 'instance_uuid'),
                ({'host': ''}, 'host'),
                ({'project_id': 7}, 'project_id'),
                ({'candidate_nodes': [1]}, 'candidate_nodes[0]'),
                ({'flavor': 'gold'}, 'flavor')):
            error = self.assertRaises(exception.Invalid, _reservation,
                                      **changes)
            self.assertIn(field, error.detail)

    def test_candidate_uuids_made_canonical_names_kept(self):
        request = _reservation(candidate_nodes=[UPPER_UUID, 'Node-1'])
        self.assertEqual([UPPER_UUID.lower(), 'Node-1'],
                         request.candidate_nodes)


class TestPathAndPatch(testtools.TestCase):

    def test_path_uuid(self):
        self.assertEqual(UPPER_UUID.lower(), body.path_arg(
            types.uuid, UPPER_UUID, 'reservation_uuid'))
        error = self.assertRaises(exception.Invalid, body.path_arg,
                                  types.uuid, 'node-1', 'reservation_uuid')
        self.assertIn('reservation_uuid', error.detail)

    def test_node_ident(self):
        self.assertEqual(UPPER_UUID.lower(),
                         types.node_ident.validate(UPPER_UUID))
        self.assertEqual('Node-1', types.node_ident.validate('Node-1'))
        self.assertRaises(ValueError, types.node_ident.validate, 'n' * 256)

    def test_json_patch(self):
        patch_type = types.JsonPatch(('/host', '/state'))
        good = [{'op': 'replace', 'path': '/host', 'value': 'compute-7'}]
        self.assertEqual(good, body.from_json(patch_type, good))
        for bad, detail in (
                ([], 'the request body must be a non-empty JSON Patch list'),
                ({'host': 'x'}, 'the request body must be a non-empty'),
                (['replace'], 'field [0] must be an operation object, not '
                              '"replace"'),
                ([{'op': 'add', 'path': '/host', 'value': 'x'}],
                 'field [0].op must be "replace" or "test", got "add"'),
                ([{'op': 'replace', 'path': '/uuid', 'value': 'x'}],
                 'field [0].path must be "/host" or "/state", got "/uuid"'),
                ([good[0], {'op': 'replace', 'path': '/host'}],
                 'field [1].value is missing'),
                ([{'op': {'a': 1}, 'path': '/host', 'value': 'x'}],
                 'field [0].op must be "replace" or "test", got an '
                 'object')):
            error = self.assertRaises(exception.Invalid, body.from_json,
                                      patch_type, bad)
            self.assertIn(detail, error.detail)
            self.assertNotIn("'", error.detail)


class TestHoldRequest(testtools.TestCase):
    """Times carry their offset; amounts start at one."""

    def _hold(self, **changes):
        document = {'project_id': 'p', 'amount': 1,
                    'request_spec': examples.REQUEST_SPEC,
                    'start': '2030-01-31T09:00:00+01:00',
                    'end': '2030-01-31T10:00:00Z'}
        document.update(changes)
        return body.from_json(hold_controller.HoldRequest, document)

    def test_times_become_aware_utc(self):
        hold = self._hold()
        utc = datetime.timezone.utc
        self.assertEqual(
            (datetime.datetime(2030, 1, 31, 8, tzinfo=utc),
             datetime.datetime(2030, 1, 31, 10, tzinfo=utc)),
            (hold.start, hold.end))

    def test_a_time_without_offset_is_refused_by_name(self):
        for field, value, detail in (
                ('start', '2030-01-31T09:00:00',
                 'field start must be a date and time with a UTC offset'),
                ('end', '2030-01-31', 'field end must be a date and time '
                 'with a UTC offset'),
                ('end', 'tomorrow', 'field end is not an ISO 8601 date and '
                 'time: "tomorrow"'),
                ('start', 1735689600, 'field start must be an ISO 8601 '
                 'date and time string, not 1735689600'),
                ('start', '9999-12-31T23:00:00-05:00',
                 'field start is out of range')):
            error = self.assertRaises(exception.Invalid, self._hold,
                                      **{field: value})
            self.assertIn(detail, error.detail)

    def test_amount_from_one(self):
        for value in (0, -1, True, 1.0, '1', 2 ** 31):
            error = self.assertRaises(exception.Invalid, self._hold,
                                      amount=value)
            self.assertIn('field amount must be an integer from 1',
                          error.detail)
        self.assertEqual(2 ** 31 - 1, self._hold(amount=2 ** 31 - 1).amount)

    def test_an_update_takes_end_and_amount_only(self):
        update = body.from_json(hold_controller.HoldUpdate, {'amount': 2})
        self.assertEqual(2, update.amount)
        error = self.assertRaises(exception.Invalid, body.from_json,
                                  hold_controller.HoldUpdate,
                                  {'start': '2030-01-31T09:00:00Z'})
        self.assertIn('unknown field(s) "start"', error.detail)
