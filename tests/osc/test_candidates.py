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


"""``openstack baremetal reservation candidates`` without a cloud, by
``tox -e osc`` (tests/functional/test_openstack_commands.py runs it
against a served API): the flavor and the image are
python-openstackclient's own fakes of Nova's and Glance's answers
(openstacksdk resources, ``openstackclient.tests.unit``), found through
the SDK proxies of the client manager as OSC's own commands find them;
the spec sent is the one Nova's driver builds from that flavor and
image, by the same builder.
"""

import io
import json
import os
from unittest import mock

import fixtures
from openstackclient.tests.unit.compute.v2 import fakes as compute_fakes
from openstackclient.tests.unit.image.v2 import fakes as image_fakes
from osc_lib import exceptions
from oslotest import base

from reserveapi.client import request_spec
from reserveapi.matcher import spec as matcher_spec
from reserveapi.osc import candidates

EXTRA_SPECS = {'resources:CUSTOM_BAREMETAL_GOLD': '1',
               'resources:VCPU': '0', 'capabilities:boot_mode': 'uefi',
               'trait:CUSTOM_RAID': 'required'}
ANSWER = {
    'count': 3, 'total': 7,
    'by_partition': [{'shard': 'rack-1', 'conductor_group': '', 'count': 2},
                     {'shard': None, 'conductor_group': 'g', 'count': 1}],
    'excluded': [{'criterion': 'capabilities', 'item': 'boot_mode',
                  'count': 4, 'reason': 'fail capability boot_mode',
                  'values': [{'value': 'bios', 'count': 4}]}],
    'nodes': [{'uuid': 'u1', 'name': 'node-1'}, {'uuid': 'u2', 'name': None}],
}


class TestRequestSpec(base.BaseTestCase):
    """What the compute and image APIs show, as Nova's objects hold it."""

    def test_flavor_as_nova_holds_it(self):
        self.assertEqual(
            {'name': 'bm.gold', 'flavorid': '42', 'memory_mb': 4096,
             'vcpus': 4, 'root_gb': 100, 'ephemeral_gb': 10, 'swap': 0,
             'rxtx_factor': 1.0, 'extra_specs': EXTRA_SPECS},
            request_spec.flavor_from_compute({
                'id': '42', 'name': 'bm.gold', 'ram': 4096, 'vcpus': 4,
                'disk': 100, 'OS-FLV-EXT-DATA:ephemeral': 10, 'swap': '',
                'rxtx_factor': 1.0, 'os-flavor-access:is_public': True,
                'extra_specs': EXTRA_SPECS}))

    def test_image_as_nova_holds_it(self):
        image = request_spec.image_from_glance({
            'id': 'i', 'name': 'raid', 'status': 'active', 'size': 10,
            'architecture': 'amd64', 'hypervisor_type': 'baremetal',
            'vm_mode': 'hvm', 'trait:HW_CPU_X86_AVX2': 'required',
            'trait:CUSTOM_X': 'forbidden', 'hw_firmware_type': 'uefi'})
        self.assertEqual(
            {'id': 'i', 'properties': {
                'hw_architecture': 'amd64', 'img_hv_type': 'baremetal',
                'hw_vm_mode': 'hvm', 'hw_firmware_type': 'uefi',
                'traits_required': ['HW_CPU_X86_AVX2']}}, image)
        # The current name wins over the legacy one, as in Nova.
        self.assertEqual('aarch64', request_spec.image_from_glance({
            'id': 'i', 'architecture': 'x86_64',
            'hw_architecture': 'aarch64'})['properties']['hw_architecture'])

    def test_build(self):
        spec = request_spec.build(
            {'name': 'f', 'memory_mb': 1, 'unknown': 2, 'extra_specs': None},
            {'id': 'i', 'properties': {}})
        self.assertEqual({'name': 'f', 'memory_mb': 1, 'extra_specs': {},
                          'image': {'id': 'i', 'properties': {}}}, spec)


class TestShowCandidates(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.flavor = compute_fakes.create_one_flavor({
            'name': 'baremetal-gold', 'ram': 4096, 'vcpus': 4, 'disk': 100,
            'extra_specs': EXTRA_SPECS})
        self.image = image_fakes.create_one_image({
            'name': 'raid', 'architecture': 'x86_64',
            'trait:HW_CPU_X86_AVX2': 'required'})
        self.app = mock.Mock(stdout=io.StringIO())
        manager = self.app.client_manager
        manager.compute.find_flavor.return_value = self.flavor
        manager.image.find_image.return_value = self.image
        self.client = manager.baremetal_reservation.reservations
        self.client.candidates.return_value = ANSWER
        self.command = candidates.ShowCandidates(self.app, None)

    def run_command(self, *argv):
        parsed = self.command.get_parser('candidates').parse_args(argv)
        self.command.take_action(parsed)
        return self.app.stdout.getvalue()

    def test_flavor_and_image_make_the_driver_s_spec(self):
        output = self.run_command('--flavor', 'baremetal-gold', '--image',
                                  'raid', '--shard', 'rack-1', '--limit',
                                  '2')
        manager = self.app.client_manager
        manager.compute.find_flavor.assert_called_once_with(
            'baremetal-gold', ignore_missing=False, get_extra_specs=True)
        manager.image.find_image.assert_called_once_with(
            'raid', ignore_missing=False)
        (spec,), options = self.client.candidates.call_args
        self.assertEqual(
            {'project_id': None, 'shard': 'rack-1', 'conductor_group': None,
             'limit': 2}, options)
        self.assertEqual(
            {'name': 'baremetal-gold', 'flavorid': self.flavor.id,
             'memory_mb': 4096, 'vcpus': 4, 'root_gb': 100,
             'ephemeral_gb': 0, 'swap': 0, 'rxtx_factor': 1.0,
             'extra_specs': EXTRA_SPECS,
             'image': {'id': self.image.id, 'properties': {
                 'hw_architecture': 'x86_64',
                 'traits_required': ['HW_CPU_X86_AVX2']}}}, spec)
        parsed = matcher_spec.parse_request_spec(spec)
        self.assertEqual(
            ('CUSTOM_BAREMETAL_GOLD', {'CUSTOM_RAID', 'HW_CPU_X86_AVX2'},
             'x86_64', False),
            (parsed.resource_class, parsed.required_traits, parsed.cpu_arch,
             parsed.check_vcpus))
        self.assertIn('3 of 7 nodes could be reserved now.', output)
        self.assertIn('| rack-1 | (default)       | 2     |', output)
        self.assertIn('| fail capability boot_mode | boot_mode | 4     | '
                      'bios (4) |', output)
        self.assertIn('Best fit first: node-1, u2', output)

    def test_a_raw_spec_from_a_file(self):
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, 'spec.json')
        with open(path, 'w') as stream:
            json.dump({'extra_specs': EXTRA_SPECS}, stream)
        self.run_command('--spec', path, '--conductor-group', '')
        self.client.candidates.assert_called_once_with(
            {'extra_specs': EXTRA_SPECS}, project_id=None, shard=None,
            conductor_group='', limit=None)
        self.app.client_manager.compute.find_flavor.assert_not_called()

    def test_refusals(self):
        parser = self.command.get_parser('candidates')
        for argv in ((), ('--flavor', 'f', '--spec', 'x')):
            self.assertRaises(SystemExit, parser.parse_args, argv)
        self.assertRaises(exceptions.CommandError, self.command.take_action,
                          parser.parse_args(['--spec', '/nonexistent']))
        self.assertRaises(exceptions.CommandError, self.command.take_action,
                          parser.parse_args(['--spec', '/nonexistent',
                                             '--image', 'raid']))
