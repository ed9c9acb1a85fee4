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

"""Malformed request specs: every trap is a 400 naming the key."""

import uuid

from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.functional import base
from tests.functional.api import reservation_base as rbase

HOST = rbase.HOST
spec = rbase.spec


class TestMalformedSpecs(rbase.ReservationTestCase):
    """Every trap is a 400 naming the key, and changes nothing."""

    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        self.nodes(inventory.node('node-gold-1'))

    def assertRejected(self, body_or_response, key,
                       code='reserveapi.invalid_request_spec'):
        """A 400 whose detail names ``key``; nothing was reserved."""
        response = body_or_response
        if isinstance(body_or_response, dict):
            response = self.request('POST', '/v1/reservations',
                                    body_or_response)
        error = self.assertError(response, 400, code)
        self.assertIn(key, error['detail'])
        self.assertNothingReserved()
        return error

    def body(self, request_spec):
        return {'instance_uuid': str(uuid.uuid4()), 'host': HOST,
                'request_spec': request_spec}

    def test_spec_traps(self):
        traps = [
            ('capabilities:cpu_count', '> 4'),
            ('capabilities:cpu_count', '< 4'),
            ('capabilities:boot_mode', '<or> uefi bios'),
            ('capabilities:boot_mode', 'uefi <or> bios'),
            ('capabilities:boot_mode', '<or>'),
            ('capabilities:boot_mode', '<or> uefi <or>'),
            ('capabilities:cpu_count', '>='),
            ('capabilities:cpu_count', '='),
            ('capabilities:boot_mode', 's=='),
            ('capabilities:boot_mode', '<in>'),
            ('capabilities:boot_mode', '<all-in>'),
            ('capabilities:cpu_count', '>=4'),
            ('capabilities:cpu_count', '>= four'),
            ('trait:CUSTOM_RAID', 'maybe'),
            ('trait:custom-raid', 'required'),
            ('resources:CUSTOM_BAREMETAL-GOLD', '1'),
            ('resources:custom_baremetal_gold', '1'),
            ('resources:BAREMETAL_GOLD', '1'),
            ('resources:CUSTOM_BAREMETAL_GOLD', 'one'),
            ('resources:CUSTOM_BAREMETAL_GOLD', '2'),
            ('resources:VCPU', '-1'),
        ]
        for key, value in traps:
            self.assertRejected(self.body(spec(extra_specs={key: value})),
                                'extra_specs.' + key)

    def test_flavor_and_image_traps(self):
        traps = [
            (spec(memory_mb=-1), 'memory_mb'),
            (spec(vcpus='8'), 'vcpus'),
            (spec(root_gb=1.5), 'root_gb'),
            (spec(swap=True), 'swap'),
            (spec(rxtx_factor='fast'), 'rxtx_factor'),
            (spec(extra_specs={'capabilities:boot_mode': 1}),
             'extra_specs.capabilities:boot_mode'),
            (spec(extra_specs={'trait:CUSTOM_RAID': True}),
             'extra_specs.trait:CUSTOM_RAID'),
            (dict(spec(), extra_specs=['a']), 'extra_specs'),
            (spec(image_properties={'img_hv_type': 'kvm'}),
             'image.properties.img_hv_type'),
            (spec(image_properties={'hw_vm_mode': 'xen'}),
             'image.properties.hw_vm_mode'),
            (spec(image_properties={'hw_architecture': 'x86-64!'}),
             'image.properties.hw_architecture'),
            (spec(image_properties={'trait:HW_CPU_X86_AVX2': 'forbidden'}),
             'image.properties.trait:HW_CPU_X86_AVX2'),
            (spec(image_properties={'traits_required': 'CUSTOM_RAID'}),
             'image.properties.traits_required'),
            (dict(spec(), image='ubuntu'), 'image'),
            (spec(extra_specs={'trait:CUSTOM_GPU': 'forbidden'},
                  image_properties={'traits_required': ['CUSTOM_GPU']}),
             'extra_specs.trait:CUSTOM_GPU'),
        ]
        for request_spec, key in traps:
            self.assertRejected(self.body(request_spec), key)

    def test_body_traps(self):
        good = self.body(examples.REQUEST_SPEC)
        without_spec = dict(good)
        del without_spec['request_spec']
        without_host = dict(good)
        del without_host['host']
        traps = [
            (without_spec, 'request_spec'),
            (dict(good, request_spec=[]), 'request_spec'),
            (dict(good, request_spec='{}'), 'request_spec'),
            (dict(good, request_spec=None), 'request_spec'),
            (dict(good, instance_uuid='not-a-uuid'), 'instance_uuid'),
            (dict(good, instance_uuid=42), 'instance_uuid'),
            (without_host, 'host'),
            (dict(good, host=''), 'host'),
            (dict(good, host='h' * 256), 'host'),
            (dict(good, project_id=7), 'project_id'),
            (dict(good, candidate_nodes='node-gold-1'), 'candidate_nodes'),
            (dict(good, candidate_nodes=[1]), 'candidate_nodes'),
            (dict(good, flavor='gold'), 'flavor'),
        ]
        for body, key in traps:
            self.assertRejected(body, key, 'reserveapi.invalid')

    def test_not_json(self):
        for text in ('{"instance_uuid": ', 'null', '[]', '"spec"'):
            response = self.app.post(
                '/v1/reservations', text, headers=self.admin_headers,
                content_type='application/json', status='*')
            self.assertRejected(response, 'body', 'reserveapi.invalid')

    def test_unknown_extra_spec_namespaces_are_ignored(self):
        request_spec = spec(extra_specs={
            'hw:cpu_policy': 'dedicated', 'quota:cpu_shares': '1024',
            'aggregate_instance_extra_specs:ssd': 'true'})
        self.assertReserved(self.reserve(request_spec), 'node-gold-1')
