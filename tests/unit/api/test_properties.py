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

"""Properties of the API's edge, checked on generated input (Hypothesis):
whatever a request spec, a JSON Patch or a raw body holds, the answer is
a value or one of our 4xx exceptions with a one-sentence detail, never
another exception.

The examples are derandomized, so every run checks the same ones and a
failure reproduces; their number is kept modest for ``tox -e py3``.
"""

import dataclasses
import json
import re

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools
import webob

from reserveapi.api import body
from reserveapi.api import types
from reserveapi.api.controllers.v1 import reservations as controller
from reserveapi.common import exception
from reserveapi.common import states
from reserveapi.common import validators
from reserveapi.matcher import spec as spec_mod
from reserveapi_testing import examples

SETTINGS = settings(max_examples=300, deadline=None, database=None,
                    derandomize=True)
REPR = re.compile(r"\{'|\['|<class |object at 0x|\\x[0-9a-f]{2}")

scalars = (st.none() | st.booleans() | st.integers()
           | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=12))
json_values = st.recursive(
    scalars, lambda children: (st.lists(children, max_size=4)
                               | st.dictionaries(st.text(max_size=8),
                                                 children, max_size=4)),
    max_leaves=12)

_PREFIXES = ('resources:', 'resources1:', 'resources_G:', 'trait:',
             'trait2:', 'capabilities:', 'hw:', 'quota:', '')
extra_spec_keys = (
    st.sampled_from(sorted(examples.REQUEST_SPEC['extra_specs'])
                    + ['capabilities', 'cpu_arch', 'resources:VCPU',
                       'resources:MEMORY_MB', 'resources:DISK_GB'])
    | st.builds(str.__add__, st.sampled_from(_PREFIXES),
                st.text(max_size=16)))
extra_spec_values = (
    st.sampled_from(['1', '0', '2', 'required', 'forbidden', 'uefi',
                     '<in> a', '<or> a <or> b', '>= 4', '<= 2', 's== x',
                     '<all-in> a b', 'true', 'True', '', ' 1 ',
                     '99999999999', 'a,b:c'])
    | st.text(max_size=16) | scalars)
amounts = st.integers(min_value=0, max_value=10 ** 25).map(str)
# Resource requests, which end up compared in SQL: any amount.
resources = st.dictionaries(
    st.sampled_from(['resources:VCPU', 'resources:MEMORY_MB',
                     'resources:DISK_GB', 'resources:CUSTOM_GOLD',
                     'resources1:CUSTOM_GOLD', 'resources1:VCPU',
                     'resources2:VCPU']), amounts, max_size=4)
image_properties = st.dictionaries(
    st.sampled_from(['hw_architecture', 'architecture', 'img_hv_type',
                     'hw_vm_mode', 'traits_required', 'trait:CUSTOM_A',
                     'trait:bad', 'hw_numa_nodes'])
    | st.text(max_size=10), json_values | st.text(max_size=12),
    max_size=4)
counts = (st.integers(min_value=-2, max_value=2 ** 32)
          | st.integers(min_value=0, max_value=4096) | json_values)
request_specs = st.fixed_dictionaries({}, optional={
    'memory_mb': counts, 'vcpus': counts, 'root_gb': counts,
    'ephemeral_gb': counts, 'swap': counts, 'vcpu_weight': counts,
    'rxtx_factor': counts,
    'extra_specs': (st.dictionaries(extra_spec_keys, extra_spec_values,
                                    max_size=6) | resources | json_values),
    'image': (st.fixed_dictionaries({}, optional={
        'id': json_values, 'properties': image_properties | json_values})
        | json_values),
    'name': json_values,
})

patch_operations = (
    st.fixed_dictionaries(
        {'op': st.sampled_from(['replace', 'test', 'add', 'remove']),
         'path': st.sampled_from(['/host', '/state', '/uuid', '', 'host'])},
        optional={'value': (st.sampled_from(list(states.RESERVATION_STATES)
                                            + ['compute-1', 'compute-2',
                                               '', 'a/b', ' x'])
                            | json_values),
                  'from': json_values})
    | json_values)
patches = st.lists(patch_operations, max_size=4) | json_values


@dataclasses.dataclass(frozen=True)
class _Reservation:
    host: str = 'compute-1'
    state: str = states.RESERVED


class TestProperties(testtools.TestCase):

    def assertOneSentence(self, error):
        self.assertIsInstance(error, exception.ReserveapiException)
        self.assertLess(error.status, 500)
        self.assertNotIn('\n', error.detail)
        self.assertIsNone(REPR.search(error.detail), error.detail)

    @SETTINGS
    @given(request_specs)
    def test_a_request_spec_is_read_or_refused_by_key(self, document):
        try:
            converted = body.from_json(types.RequestSpec, document)
            parsed = spec_mod.parse_request_spec(types.to_plain(converted))
        except exception.InvalidRequestSpec as error:
            self.assertOneSentence(error)
            self.assertTrue(error.key)
            return
        except exception.Invalid as error:
            self.assertOneSentence(error)
            return
        self.assertIsInstance(parsed, spec_mod.RequestSpec)
        for size in (parsed.memory_mb, parsed.vcpus, parsed.disk_gb):
            self.assertLess(size, 2 ** 63)
        if parsed.resource_class is not None:
            self.assertTrue(parsed.resource_class.startswith('CUSTOM_'))

    @SETTINGS
    @given(resources, counts)
    def test_what_sql_compares_fits_its_columns(self, extra_specs, memory):
        try:
            parsed = spec_mod.parse_request_spec(types.to_plain(
                body.from_json(types.RequestSpec, {
                    'extra_specs': extra_specs, 'memory_mb': memory})))
        except exception.Invalid as error:
            self.assertOneSentence(error)
            return
        # Every backend compares a 64-bit integer with its columns; only
        # SQLite fails beyond (sums of bounded amounts stay far below).
        for size in (parsed.memory_mb, parsed.vcpus, parsed.disk_gb):
            self.assertLess(size, 2 ** 63)

    @SETTINGS
    @given(patches, st.sampled_from(list(states.RESERVATION_STATES)))
    def test_a_json_patch_changes_only_host_and_state(self, patch, state):
        current = _Reservation(state=state)
        try:
            checked = body.from_json(types.JsonPatch(controller.PATCHABLE),
                                     patch)
            changes = controller._new_values(current, checked)
        except (exception.Invalid, exception.Conflict) as error:
            self.assertOneSentence(error)
            return
        self.assertLessEqual(set(changes), {'host', 'state'})
        if 'host' in changes:
            self.assertEqual(changes['host'],
                             validators.host_name(changes['host']))
            self.assertNotEqual(current.host, changes['host'])

    @SETTINGS
    @given(st.sampled_from(['host', 'state']), st.data())
    def test_replacing_with_the_current_values_changes_nothing(
            self, path, data):
        current = _Reservation()
        patch = [{'op': op, 'path': '/' + path,
                  'value': getattr(current, path)}
                 for op in data.draw(st.lists(
                     st.sampled_from(['replace', 'test']), min_size=1,
                     max_size=3))]
        self.assertEqual({}, controller._new_values(
            current, body.from_json(types.JsonPatch(controller.PATCHABLE),
                                    patch)))

    @SETTINGS
    @given(st.binary(max_size=200)
           | st.text(max_size=60).map(str.encode)
           | json_values.map(lambda value: json.dumps(value).encode())
           | st.integers(min_value=1, max_value=3000).map(
               lambda depth: b'[' * depth + b']' * depth)
           | st.integers(min_value=1, max_value=3000).map(
               lambda depth: b'{"a":' * depth + b'1' + b'}' * depth))
    def test_a_raw_body_is_parsed_or_refused(self, raw):
        request = webob.Request.blank('/', method='POST', body=raw,
                                      content_type='application/json')
        try:
            document = body.parse(request)
        except (exception.Invalid, exception.UnsupportedMediaType) as error:
            self.assertOneSentence(error)
            return
        if raw:
            self.assertEqual(json.loads(raw.decode('utf-8')), document)
