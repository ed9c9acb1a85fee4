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

"""Matching, rule by rule through SQL and Python, and the refusal that
explains an empty match."""

import uuid

from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.functional import base
from tests.functional.api import reservation_base as rbase

SAMPLE_PROJECT = rbase.SAMPLE_PROJECT
OTHER_PROJECT = rbase.OTHER_PROJECT
NO_SIZING = rbase.NO_SIZING
spec = rbase.spec
sample = examples.sample


class TestMatching(rbase.ReservationTestCase):
    """The api-ref's "Matching a request spec", rule by rule, through SQL
    and Python.
    """

    scenarios = base.EVERY_BACKEND

    def test_resource_class_normalized(self):
        self.nodes(inventory.node('silver', resource_class='baremetal-silver'),
                   inventory.node('gold', resource_class='Baremetal.Gold'),
                   inventory.node('plain', resource_class='baremetal'))
        self.assertChooses('gold', spec())
        self.assertChooses('silver', spec(extra_specs={
            'resources:CUSTOM_BAREMETAL_GOLD': None,
            'resources:CUSTOM_BAREMETAL_SILVER': '1'}))
        self.assertNoValidNode(
            self.reserve(spec(extra_specs={
                'resources:CUSTOM_BAREMETAL_GOLD': None,
                'resources:CUSTOM_BAREMETAL_PLATINUM': '1'})),
            '3 nodes: 3 wrong resource class')

    def test_zero_standard_resources_switch_sizing_off(self):
        self.nodes(inventory.node('tiny', memory_mb=512, cpus=1, local_gb=4))
        big = spec(memory_mb=65536, vcpus=64, root_gb=500)
        self.assertNoValidNode(self.reserve(big),
                               '1 node: 1 wrong memory size')
        self.assertNoValidNode(
            self.reserve(spec(memory_mb=256, vcpus=64, root_gb=500)),
            '1 node: 1 wrong cpu count')
        self.assertNoValidNode(
            self.reserve(spec(memory_mb=256, vcpus=1, root_gb=500)),
            '1 node: 1 too little disk')
        # One check off at a time: the next one still refuses.
        self.assertNoValidNode(
            self.reserve(spec(memory_mb=65536, vcpus=64, root_gb=500,
                              extra_specs={'resources:MEMORY_MB': '0'})),
            '1 node: 1 wrong cpu count')
        self.assertNoValidNode(
            self.reserve(spec(memory_mb=65536, vcpus=64, root_gb=500,
                              extra_specs={'resources:MEMORY_MB': '0',
                                           'resources:VCPU': '0'})),
            '1 node: 1 too little disk')
        self.assertChooses('tiny', spec(memory_mb=65536, vcpus=64,
                                        root_gb=500, extra_specs=NO_SIZING))
        # A non-zero standard amount overrides the flavor field, as in Nova.
        self.assertNoValidNode(
            self.reserve(spec(memory_mb=256, vcpus=1, root_gb=1,
                              extra_specs={'resources:MEMORY_MB': '1024'})),
            '1 node: 1 wrong memory size')

    def test_disk_counts_root_ephemeral_and_swap_rounded_up(self):
        self.nodes(inventory.node('disk-31', local_gb=31))
        # 20 + 10 + ceil(1024 MiB swap) = 31 GiB: fits exactly.
        self.assertChooses('disk-31', spec(root_gb=20, ephemeral_gb=10,
                                           swap=1024))
        # 20 + 10 + ceil(1 MiB) = 31.
        self.assertChooses('disk-31', spec(root_gb=20, ephemeral_gb=10,
                                           swap=1))
        # 20 + 10 + ceil(1025 MiB) = 32.
        self.assertNoValidNode(
            self.reserve(spec(root_gb=20, ephemeral_gb=10, swap=1025)),
            '1 node: 1 too little disk')
        self.assertNoValidNode(
            self.reserve(spec(root_gb=22, ephemeral_gb=10, swap=0)),
            '1 node: 1 too little disk')

    def test_sizes_at_least_and_exact_match(self):
        self.nodes(inventory.node('big', memory_mb=16384, cpus=16),
                   inventory.node('more-cpus', memory_mb=8192, cpus=16))
        exact = spec(memory_mb=8192, vcpus=8)
        self.config(subset_size=1, group='matcher')
        self.assertChooses('more-cpus', exact)
        self.config(exact_match=True, group='matcher')
        self.assertNoValidNode(
            self.reserve(exact),
            '2 nodes: 1 wrong memory size, 1 wrong cpu count')
        self.assertChooses('more-cpus', spec(memory_mb=8192, vcpus=16))
        self.assertChooses('big', spec(memory_mb=16384, vcpus=16))
        # Disk is never exact, as in Nova.
        self.assertChooses('big', spec(memory_mb=16384, vcpus=16,
                                       root_gb=1, ephemeral_gb=0, swap=0))

    def test_traits_from_flavor_and_image(self):
        self.nodes(
            inventory.node('raid', traits=['CUSTOM_RAID']),
            inventory.node('raid-avx2', traits=['CUSTOM_RAID',
                                                'HW_CPU_X86_AVX2']),
            inventory.node('raid-avx2-gpu', ironic_traits=True,
                           traits=['CUSTOM_RAID', 'HW_CPU_X86_AVX2',
                                   'CUSTOM_GPU']))
        without_gpu = spec(extra_specs={'trait:CUSTOM_GPU': 'forbidden'})
        self.assertChooses('raid-avx2', without_gpu)
        with_gpu = spec(image_properties={'traits_required': ['CUSTOM_GPU']})
        self.assertChooses('raid-avx2-gpu', with_gpu)
        by_flavor = spec(extra_specs={'trait:CUSTOM_GPU': 'required'},
                         image_properties={'trait:HW_CPU_X86_AVX2': None})
        self.assertChooses('raid-avx2-gpu', by_flavor)
        only_raid = spec(image_properties={'trait:HW_CPU_X86_AVX2': None},
                         extra_specs={'trait:HW_CPU_X86_AVX2': 'forbidden'})
        self.assertChooses('raid', only_raid)
        self.assertNoValidNode(
            self.reserve(spec(extra_specs={'trait:CUSTOM_FPGA': 'required'})),
            '3 nodes: 3 lack trait CUSTOM_FPGA')

    def _capability_nodes(self, key, values):
        """One node per value of capability ``key``, named after it."""
        self.nodes(*[inventory.node(
            'cap-%s' % index, memory_mb=8192 + index,
            capabilities='%s:%s' % (key, value))
            for index, value in enumerate(values)])

    def capability_spec(self, key, requirement):
        return spec(extra_specs={'capabilities': None,
                                 'capabilities:boot_mode': None,
                                 'capabilities:' + key: requirement})

    def test_capability_equals_means_at_least(self):
        self._capability_nodes('gpus', ['2', '4', 'many'])
        # "=" is Nova's "at least": 3 matches 4 only, 2 matches 2 or 4.
        self.assertChooses('cap-1', self.capability_spec('gpus', '= 3'))
        self.config(subset_size=1, group='matcher')
        self.assertChooses('cap-0', self.capability_spec('gpus', '= 2'))
        self.assertChooses('cap-0', self.capability_spec('gpus', '== 2'))
        self.assertChooses('cap-1', self.capability_spec('gpus', '>= 3'))
        self.assertChooses('cap-0', self.capability_spec('gpus', '<= 3'))
        self.assertChooses('cap-1', self.capability_spec('gpus', '!= 2'))
        # A numeric operator never matches "many", and never fails.
        self.assertNoValidNode(
            self.reserve(self.capability_spec('gpus', '= 5')),
            '3 nodes: 3 fail capability gpus; capability gpus: closest '
            'nodes have 2 (1), 4 (1), many (1)')

    def test_capability_whole_string_and_string_operators(self):
        self._capability_nodes('boot_mode', ['uefi', 'bios', 'uefi-http'])
        self.assertChooses('cap-0', self.capability_spec('boot_mode',
                                                         'uefi'))
        self.assertChooses('cap-0', self.capability_spec('boot_mode',
                                                         's== uefi'))
        self.assertChooses('cap-1', self.capability_spec('boot_mode',
                                                         's< c'))
        self.assertChooses('cap-2', self.capability_spec('boot_mode',
                                                         's> uefi'))
        self.assertChooses('cap-1', self.capability_spec(
            'boot_mode', '<or> bios <or> legacy'))
        self.assertChooses('cap-2', self.capability_spec('boot_mode',
                                                         '<in> http'))
        self.assertChooses('cap-2', self.capability_spec(
            'boot_mode', '<all-in> uefi http'))
        self.assertNoValidNode(
            self.reserve(self.capability_spec('boot_mode', 'UEFI')),
            '3 nodes: 3 fail capability boot_mode; capability boot_mode: '
            'closest nodes have bios (1), uefi (1), uefi-http (1)')

    def test_capability_substring_is_not_a_word_match(self):
        self._capability_nodes('cpu_model', ['Xeon Gold 6230'])
        self.assertChooses('cap-0', self.capability_spec('cpu_model',
                                                         '<in> old'))

    def test_legacy_capability_list(self):
        self.nodes(
            inventory.node('no-gpu', capabilities='supports_uefi:true,'
                                                  'has_gpu:false'),
            inventory.node('gpu', capabilities='supports_uefi:TRUE,'
                                               'has_gpu:True'),
            inventory.node('gpu-bios', memory_mb=9000,
                           capabilities='supports_uefi:true,has_gpu:true,'
                                        'boot_mode:bios'))
        legacy = spec(extra_specs={'capabilities:boot_mode': None})
        self.config(subset_size=1, group='matcher')
        self.assertChooses('gpu', legacy)
        self.assertChooses('gpu-bios', spec(extra_specs={
            'capabilities:boot_mode': None,
            'capabilities': 'has_gpu, boot_mode:bios'}))
        self.assertNoValidNode(
            self.reserve(spec(extra_specs={
                'capabilities:boot_mode': None,
                'capabilities': 'supports_uefi,has_fpga'})),
            '3 nodes: 3 fail capability has_fpga; capability has_fpga: '
            'closest nodes have <unset> (3)')

    def test_image_architecture(self):
        self.nodes(inventory.node('x86', cpu_arch='x86_64'),
                   inventory.node('arm', cpu_arch='aarch64'))
        self.assertChooses('arm', spec(image_properties={
            'hw_architecture': 'arm64'}))
        self.assertChooses('x86', spec(image_properties={
            'hw_architecture': 'AMD64'}))
        self.assertChooses('arm', spec(image_properties={
            'hw_architecture': None, 'architecture': 'aarch64'}))
        self.assertNoValidNode(
            self.reserve(spec(image_properties={
                'hw_architecture': 'ppc64le'})),
            '2 nodes: 2 wrong cpu_arch')

    def test_image_may_say_baremetal_and_hvm(self):
        self.nodes(inventory.node('node-gold-1'))
        self.assertChooses('node-gold-1', spec(image_properties={
            'img_hv_type': 'baremetal', 'hw_vm_mode': 'hvm'}))

    def test_eligibility(self):
        self.nodes(
            inventory.node('deploying', provision_state='deploying'),
            inventory.node('no-power', power_state=None),
            inventory.node('maintenance', maintenance=True),
            inventory.node('retired', retired=True),
            inventory.node('busy', instance_uuid=str(uuid.uuid4())),
            inventory.node('free'))
        self.assertReserved(self.reserve(), 'free')
        self.assertNoValidNode(
            self.reserve(),
            '6 nodes: 1 not available, 1 in an unknown power state, 1 in '
            'maintenance, 1 retired, 1 with an instance, 1 reserved')

    def test_owner_and_lessee(self):
        self.nodes(
            inventory.node('others', owner=OTHER_PROJECT),
            inventory.node('leased-to-others', lessee=OTHER_PROJECT,
                           memory_mb=12288),
            inventory.node('mine', owner=SAMPLE_PROJECT),
            inventory.node('leased-to-me', owner=OTHER_PROJECT,
                           lessee=SAMPLE_PROJECT, memory_mb=16384))
        self.config(subset_size=1, group='matcher')
        self.assertChooses('mine', spec(), project_id=SAMPLE_PROJECT)
        self.assertChooses('others', spec(), project_id=OTHER_PROJECT)
        self.assertChooses('leased-to-me', spec(), project_id=SAMPLE_PROJECT,
                           candidate_nodes=['leased-to-me'])
        self.assertNoValidNode(
            self.reserve(spec(), project_id='someone-else'),
            "4 nodes: 4 not the project's")
        self.nodes(inventory.node('shared'), inventory.node('mine',
                                                            owner='x'))
        self.assertChooses('shared', spec(), project_id='someone-else')

    def test_candidate_nodes_by_uuid_and_name(self):
        self.nodes(*[inventory.node('node-%d' % index)
                     for index in range(3)])
        self.assertChooses('node-1', spec(), candidate_nodes=['node-1'])
        self.assertChooses('node-2', spec(), candidate_nodes=[
            inventory.node_uuid('node-2')])
        self.assertChooses('node-0', spec(), candidate_nodes=[
            'node-0', inventory.node_uuid('node-0'), 'gone'])
        self.assertNoValidNode(self.reserve(spec(), candidate_nodes=['gone']),
                               '3 nodes: 3 not in candidate_nodes')
        self.assertNoValidNode(self.reserve(spec(), candidate_nodes=[]),
                               '3 nodes: 3 not in candidate_nodes')

    def test_best_fit_first(self):
        self.nodes(inventory.node('large', memory_mb=262144, cpus=64,
                                  local_gb=4000),
                   inventory.node('medium', memory_mb=16384, cpus=16,
                                  local_gb=400),
                   inventory.node('small', memory_mb=4096, cpus=8,
                                  local_gb=40))
        self.config(subset_size=1, group='matcher')
        for _attempt in range(4):
            self.assertChooses('small', spec())
        first = self.assertReserved(self.reserve(), 'small')
        second = self.assertReserved(self.reserve(), 'medium')
        third = self.assertReserved(self.reserve(), 'large')
        self.assertEqual(3, len({first['uuid'], second['uuid'],
                                 third['uuid']}))

    def test_subset_spreads_equal_nodes(self):
        self.nodes(*[inventory.node('node-%d' % index) for index in range(4)])
        chosen = set()
        for _attempt in range(40):
            response = self.reserve()
            self.assertEqual(201, response.status_int, response.text)
            chosen.add(response.json['node_name'])
            self.release(response.json['uuid'])
        self.assertGreater(len(chosen), 1)


class TestNoValidNode(rbase.ReservationTestCase):
    scenarios = base.EVERY_BACKEND

    def test_detail_counts_each_criterion(self):
        self.nodes(
            inventory.node('node-gold-1'),
            inventory.node('node-gold-2',
                           capabilities='boot_mode:bios,supports_uefi:true,'
                                        'has_gpu:true'),
            inventory.node('node-gold-3', traits=['HW_CPU_X86_AVX2']),
            inventory.node('node-silver-1', resource_class='baremetal-silver'),
            inventory.node('node-silver-2', resource_class='baremetal-silver'))
        self.assertReserved(self.reserve(), 'node-gold-1')
        response = self.request('POST', '/v1/reservations',
                                sample('reservations/create-request.json'))
        self.assertNoValidNode(
            response,
            '5 nodes: 2 wrong resource class, 1 reserved, 1 lack trait '
            'CUSTOM_RAID, 1 fail capability boot_mode; capability '
            'boot_mode: closest nodes have bios (1)')
        self.assertMatchesSample(
            response.json, 'reservations/no-valid-node-response.json')
        self.assertEqual(1, len(self.list_reservations()))

    def test_detail_adds_python_and_sql_counts(self):
        # Sizes and traits are decided in SQL, "=" and "<in>" in Python.
        self.nodes(
            inventory.node('small', memory_mb=512),
            inventory.node('two-gpus', capabilities='gpus:2'),
            inventory.node('one-gpu', capabilities='gpus:1', memory_mb=9000),
            inventory.node('no-gpu', capabilities='', memory_mb=9001))
        request_spec = spec(extra_specs={'capabilities': None,
                                         'capabilities:boot_mode': None,
                                         'capabilities:gpus': '= 4'})
        self.assertNoValidNode(
            self.reserve(request_spec),
            '4 nodes: 3 fail capability gpus, 1 wrong memory size; '
            'capability gpus: closest nodes have 1 (1), 2 (1), <unset> (1)')

    def test_empty_inventory(self):
        self.nodes()
        self.assertNoValidNode(self.reserve(), '0 nodes')
