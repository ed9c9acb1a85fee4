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

import dataclasses

import testtools

from reserveapi.common import exception
from reserveapi.matcher import operators
from reserveapi.matcher import spec
from reserveapi_testing import examples


def _parse(extra_specs=None, image=None, **flavor):
    data = dict(flavor)
    if extra_specs is not None:
        data['extra_specs'] = extra_specs
    if image is not None:
        data['image'] = image
    return spec.parse_request_spec(data)


def _image(**properties):
    return {'id': 'image-uuid', 'properties': properties}


class TestParseCapabilities(testtools.TestCase):

    def test_ironic_string(self):
        self.assertEqual({'boot_mode': 'uefi', 'has_gpu': 'true'},
                         spec.parse_capabilities('boot_mode:uefi,has_gpu:true'))

    def test_strips_keys_and_values(self):
        self.assertEqual({'boot_mode': 'uefi', 'disk_label': 'gpt'},
                         spec.parse_capabilities(' boot_mode : uefi , '
                                                 'disk_label:gpt '))

    def test_splits_on_first_colon(self):
        self.assertEqual({'url': 'http://example.com:80'},
                         spec.parse_capabilities('url:http://example.com:80'))

    def test_skips_entries_without_key_or_value(self):
        self.assertEqual({'boot_mode': 'uefi'},
                         spec.parse_capabilities(
                             'boot_mode:uefi,novalue,:nokey,empty:,,  ,x: '))

    def test_last_duplicate_wins(self):
        self.assertEqual({'boot_mode': 'bios'},
                         spec.parse_capabilities('boot_mode:uefi,'
                                                 'boot_mode:bios'))

    def test_dict_values_become_text(self):
        self.assertEqual(
            {'has_gpu': 'true', 'secure_boot': 'false', 'cores': '8',
             'boot_mode': 'uefi'},
            spec.parse_capabilities({'has_gpu': True, 'secure_boot': False,
                                     'cores': 8, ' boot_mode ': ' uefi'}))

    def test_dict_skips_null_and_empty(self):
        self.assertEqual({}, spec.parse_capabilities(
            {'boot_mode': None, 'label': '', '': 'x'}))

    def test_empty(self):
        for value in (None, '', {}):
            self.assertEqual({}, spec.parse_capabilities(value))

    def test_other_types_are_a_type_error(self):
        self.assertRaises(TypeError, spec.parse_capabilities, ['a:b'])


class TestNormalizeResourceClass(testtools.TestCase):

    def test_normalizes_like_nova(self):
        cases = {
            'baremetal-gold': 'CUSTOM_BAREMETAL_GOLD',
            'baremetal.gold': 'CUSTOM_BAREMETAL_GOLD',
            'Baremetal  -- Gold v2': 'CUSTOM_BAREMETAL_GOLD_V2',
            'gold': 'CUSTOM_GOLD',
            # As nova.utils.normalize_rc_name: the prefix is always added.
            'CUSTOM_GOLD': 'CUSTOM_CUSTOM_GOLD',
            'custom-gold': 'CUSTOM_CUSTOM_GOLD',
            'customgold': 'CUSTOM_CUSTOMGOLD',
            'straße': 'CUSTOM_STRA_E',
        }
        for name, expected in cases.items():
            self.assertEqual(expected, spec.normalize_resource_class(name),
                             name)

    def test_unset(self):
        self.assertIsNone(spec.normalize_resource_class(None))
        self.assertIsNone(spec.normalize_resource_class(''))


class TestCanonicalizeArch(testtools.TestCase):

    def test_aliases(self):
        cases = {
            'i386': 'i686', 'i486': 'i686', 'i586': 'i686', 'x86': 'i686',
            'x86_32': 'i686', 'I686': 'i686',
            'amd64': 'x86_64', 'x64': 'x86_64', 'X86_64': 'x86_64',
            'arm64': 'aarch64', 'AArch64': 'aarch64',
            'armv7': 'armv7l', 'armv7l': 'armv7l',
            'ppc64le': 'ppc64le', 's390x': 's390x',
        }
        for name, expected in cases.items():
            self.assertEqual(expected, spec.canonicalize_arch(name), name)

    def test_unknown_well_formed_name_is_kept_lower_case(self):
        self.assertEqual('riscv64', spec.canonicalize_arch('RISCV64'))

    def test_malformed_name(self):
        for name in ('', 'x86-64', 'x86 64', 'arm/v7'):
            self.assertRaises(ValueError, spec.canonicalize_arch, name)

    def test_none(self):
        self.assertIsNone(spec.canonicalize_arch(None))


class TestParseRequestSpec(testtools.TestCase):

    def test_design_example(self):
        parsed = spec.parse_request_spec(examples.REQUEST_SPEC)
        self.assertEqual(1024, parsed.memory_mb)
        self.assertEqual(8, parsed.vcpus)
        self.assertEqual(31, parsed.disk_gb)
        self.assertEqual('CUSTOM_BAREMETAL_GOLD', parsed.resource_class)
        self.assertEqual({'CUSTOM_RAID', 'HW_CPU_X86_AVX2'},
                         parsed.required_traits)
        self.assertEqual(frozenset(), parsed.forbidden_traits)
        self.assertEqual('x86_64', parsed.cpu_arch)
        self.assertEqual(
            (operators.any_case_true('supports_uefi'),
             operators.any_case_true('has_gpu'),
             operators.parse_requirement('boot_mode', 'uefi')),
            parsed.capabilities)
        self.assertTrue(parsed.check_memory)
        self.assertTrue(parsed.check_vcpus)
        self.assertTrue(parsed.check_disk)

    def test_empty_spec_defaults(self):
        parsed = spec.parse_request_spec({})
        self.assertEqual(spec.RequestSpec(), parsed)
        self.assertEqual((0, 0, 0), (parsed.memory_mb, parsed.vcpus,
                                     parsed.disk_gb))
        self.assertIsNone(parsed.resource_class)
        self.assertIsNone(parsed.cpu_arch)
        self.assertEqual((), parsed.capabilities)

    def test_request_spec_is_frozen(self):
        parsed = spec.parse_request_spec({})
        self.assertRaises(dataclasses.FrozenInstanceError, setattr, parsed,
                          'memory_mb', 1)

    def test_unknown_fields_are_ignored(self):
        parsed = spec.parse_request_spec({'name': 'bm.gold', 'flavorid': 'x',
                                          'memory_mb': 1})
        self.assertEqual(1, parsed.memory_mb)

class TestFlavorFields(testtools.TestCase):

    def test_disk_adds_root_ephemeral_and_swap_rounded_up(self):
        cases = [
            ({'root_gb': 20}, 20),
            ({'root_gb': 20, 'ephemeral_gb': 10}, 30),
            ({'root_gb': 20, 'swap': 1}, 21),
            ({'root_gb': 20, 'swap': 1024}, 21),
            ({'root_gb': 20, 'swap': 1025}, 22),
            ({'root_gb': 20, 'swap': 2048}, 22),
            ({'swap': 0}, 0),
        ]
        for flavor, disk_gb in cases:
            self.assertEqual(disk_gb, _parse(**flavor).disk_gb, flavor)

class TestResources(testtools.TestCase):

    def _assert_invalid(self, extra_specs, key, fragment):
        error = self.assertRaises(exception.InvalidRequestSpec, _parse,
                                  extra_specs)
        self.assertEqual(key, error.key)
        self.assertIn(fragment, error.detail)

    def test_custom_class(self):
        parsed = _parse({'resources:CUSTOM_BAREMETAL_GOLD': '1'})
        self.assertEqual('CUSTOM_BAREMETAL_GOLD', parsed.resource_class)

    def test_group_suffixes(self):
        for key in ('resources1:CUSTOM_GOLD', 'resources_gold:CUSTOM_GOLD',
                    'resources-x:CUSTOM_GOLD'):
            self.assertEqual('CUSTOM_GOLD', _parse({key: '1'}).resource_class,
                             key)

    def test_zero_standard_classes_switch_sizing_off(self):
        parsed = _parse({'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
                         'resources:DISK_GB': '0'},
                        memory_mb=1024, vcpus=8, root_gb=20)
        self.assertFalse(parsed.check_memory)
        self.assertFalse(parsed.check_vcpus)
        self.assertFalse(parsed.check_disk)

    def test_each_zero_switches_only_its_own_check(self):
        cases = {'VCPU': 'check_vcpus', 'MEMORY_MB': 'check_memory',
                 'DISK_GB': 'check_disk'}
        for resource_class, flag in cases.items():
            parsed = _parse({'resources:%s' % resource_class: '0'})
            flags = {name: getattr(parsed, name) for name in cases.values()}
            expected = {name: name != flag for name in cases.values()}
            self.assertEqual(expected, flags, resource_class)

    def test_non_zero_standard_class_keeps_sizing_and_overrides_flavor(self):
        parsed = _parse({'resources:VCPU': '16', 'resources:MEMORY_MB': '512',
                         'resources:DISK_GB': '100'},
                        memory_mb=1024, vcpus=8, root_gb=20)
        self.assertTrue(parsed.check_vcpus)
        self.assertTrue(parsed.check_memory)
        self.assertTrue(parsed.check_disk)
        self.assertEqual((16, 512, 100),
                         (parsed.vcpus, parsed.memory_mb, parsed.disk_gb))

    def test_malformed_class_name(self):
        for name in ('custom_gold', 'CUSTOM-GOLD', 'CUSTOM GOLD', ''):
            key = 'resources:%s' % name
            self._assert_invalid({key: '1'}, 'extra_specs.%s' % key,
                                 'malformed resource class')

    def test_other_standard_classes_are_not_bare_metal(self):
        for name in ('PCI_DEVICE', 'VGPU', 'GOLD', 'CUSTOM_'):
            key = 'resources:%s' % name
            self._assert_invalid({key: '1'}, 'extra_specs.%s' % key,
                                 'one CUSTOM_ resource class')

    def test_malformed_amount(self):
        for amount in ('', 'one', '-1', '1.5', '+1', '0x1'):
            self._assert_invalid({'resources:CUSTOM_GOLD': amount},
                                 'extra_specs.resources:CUSTOM_GOLD',
                                 'non-negative integer')
            self._assert_invalid({'resources:VCPU': amount},
                                 'extra_specs.resources:VCPU',
                                 'non-negative integer')

    def test_custom_amount_must_be_one(self):
        for amount in ('0', '2'):
            self._assert_invalid({'resources:CUSTOM_GOLD': amount},
                                 'extra_specs.resources:CUSTOM_GOLD',
                                 'the amount must be 1')

    def test_two_custom_classes(self):
        self._assert_invalid({'resources:CUSTOM_GOLD': '1',
                              'resources1:CUSTOM_SILVER': '1'},
                             'extra_specs.resources1:CUSTOM_SILVER',
                             'already have CUSTOM_GOLD')

    def test_same_custom_class_twice(self):
        self._assert_invalid({'resources:CUSTOM_GOLD': '1',
                              'resources1:CUSTOM_GOLD': '1'},
                             'extra_specs.resources1:CUSTOM_GOLD',
                             'requested twice')


class TestTraits(testtools.TestCase):

    def _assert_invalid(self, key, fragment, extra_specs=None, image=None):
        error = self.assertRaises(exception.InvalidRequestSpec, _parse,
                                  extra_specs, image)
        self.assertEqual(key, error.key)
        self.assertIn(fragment, error.detail)

    def test_required_and_forbidden(self):
        parsed = _parse({'trait:CUSTOM_RAID': 'required',
                         'trait1:HW_CPU_X86_AVX2': 'required',
                         'trait:CUSTOM_NO_GPU': 'forbidden'})
        self.assertEqual({'CUSTOM_RAID', 'HW_CPU_X86_AVX2'},
                         parsed.required_traits)
        self.assertEqual({'CUSTOM_NO_GPU'}, parsed.forbidden_traits)
        self.assertIsInstance(parsed.required_traits, frozenset)
        self.assertIsInstance(parsed.forbidden_traits, frozenset)

    def test_value_must_be_required_or_forbidden(self):
        for value in ('Required', 'yes', '', 'optional'):
            self._assert_invalid('extra_specs.trait:CUSTOM_RAID',
                                 "'required' or 'forbidden'",
                                 {'trait:CUSTOM_RAID': value})

    def test_malformed_trait_name(self):
        for name in ('custom_raid', 'CUSTOM-RAID', ''):
            key = 'trait:%s' % name
            self._assert_invalid('extra_specs.%s' % key, 'malformed trait',
                                 {key: 'required'})

    def test_required_and_forbidden_in_the_flavor(self):
        self._assert_invalid('extra_specs.trait1:CUSTOM_RAID',
                             'also required by extra_specs.trait:CUSTOM_RAID',
                             {'trait:CUSTOM_RAID': 'required',
                              'trait1:CUSTOM_RAID': 'forbidden'})

    def test_forbidden_by_flavor_required_by_image(self):
        self._assert_invalid(
            'extra_specs.trait:CUSTOM_RAID',
            'also required by image.properties.trait:CUSTOM_RAID',
            {'trait:CUSTOM_RAID': 'forbidden'},
            _image(**{'trait:CUSTOM_RAID': 'required'}))

    def test_image_traits(self):
        parsed = _parse(image=_image(**{
            'trait:CUSTOM_RAID': 'required',
            'traits_required': ['HW_CPU_X86_AVX2', 'CUSTOM_RAID']}))
        self.assertEqual({'CUSTOM_RAID', 'HW_CPU_X86_AVX2'},
                         parsed.required_traits)

    def test_image_can_only_require(self):
        self._assert_invalid('image.properties.trait:CUSTOM_RAID',
                             'can only require',
                             image=_image(**{'trait:CUSTOM_RAID':
                                             'forbidden'}))

    def test_image_malformed_trait(self):
        self._assert_invalid('image.properties.trait:raid', 'malformed trait',
                             image=_image(**{'trait:raid': 'required'}))

    def test_image_traits_required_must_be_a_list_of_names(self):
        key = 'image.properties.traits_required'
        for value in ('CUSTOM_RAID', '', {}):
            self._assert_invalid(key, 'must be a list',
                                 image=_image(traits_required=value))
        self._assert_invalid(key, 'malformed trait',
                             image=_image(traits_required=['custom_raid']))
        self._assert_invalid(key, 'malformed trait',
                             image=_image(traits_required=[1]))


class TestCapabilities(testtools.TestCase):

    def _assert_invalid(self, extra_specs, key, fragment):
        error = self.assertRaises(exception.InvalidRequestSpec, _parse,
                                  extra_specs)
        self.assertEqual(key, error.key)
        self.assertIn(fragment, error.detail)

    def test_scoped_capability_uses_operators(self):
        parsed = _parse({'capabilities:boot_mode': '<or> uefi <or> bios',
                         'capabilities:cpu_count': '>= 8'})
        self.assertEqual(
            (operators.parse_requirement('boot_mode', '<or> uefi <or> bios'),
             operators.parse_requirement('cpu_count', '>= 8')),
            parsed.capabilities)

    def test_operator_errors_name_the_extra_spec(self):
        self._assert_invalid({'capabilities:boot_mode': '> 1'},
                             'extra_specs.capabilities:boot_mode',
                             'is not an operator')

    def test_nested_scope(self):
        self._assert_invalid({'capabilities:cpu_info:vendor': 'Intel'},
                             'extra_specs.capabilities:cpu_info:vendor',
                             'flat')

    def test_malformed_capability_name(self):
        for name in ('', ' boot_mode'):
            key = 'capabilities:%s' % name
            self._assert_invalid({key: 'uefi'}, 'extra_specs.%s' % key,
                                 'malformed capability name')

    def test_legacy_comma_list(self):
        parsed = _parse({'capabilities':
                         'supports_uefi, has_gpu ,boot_mode:uefi,,'})
        self.assertEqual((operators.any_case_true('supports_uefi'),
                          operators.any_case_true('has_gpu'),
                          operators.equals('boot_mode', 'uefi')),
                         parsed.capabilities)

    def test_legacy_comma_list_malformed_item(self):
        for value in ('a,:uefi', 'boot_mode:', ':'):
            self._assert_invalid({'capabilities': value},
                                 'extra_specs.capabilities',
                                 'malformed capability')

    def test_legacy_unscoped_cpu_arch(self):
        parsed = _parse({'cpu_arch': 'x86_64'})
        self.assertEqual((operators.equals('cpu_arch', 'x86_64'),),
                         parsed.capabilities)
        self._assert_invalid({'cpu_arch': '> 1'}, 'extra_specs.cpu_arch',
                             'is not an operator')


class TestExtraSpecs(testtools.TestCase):

    def test_unknown_namespaces_are_ignored(self):
        parsed = _parse({'hw:cpu_policy': 'dedicated',
                         'quota:disk_read_bytes_sec': '10240',
                         'aggregate_instance_extra_specs:ssd': 'true',
                         'hw_rng:allowed': 'True',
                         'group_policy': 'none',
                         'some_unscoped_key': '> nonsense'})
        self.assertEqual(spec.RequestSpec(), parsed)

class TestImage(testtools.TestCase):

    def _assert_invalid(self, image, key, fragment):
        error = self.assertRaises(exception.InvalidRequestSpec, _parse,
                                  image=image)
        self.assertEqual(key, error.key)
        self.assertIn(fragment, error.detail)

    def test_architecture_is_canonicalized(self):
        self.assertEqual('x86_64',
                         _parse(image=_image(hw_architecture='amd64')).cpu_arch)
        self.assertEqual('aarch64',
                         _parse(image=_image(architecture='arm64')).cpu_arch)

    def test_hw_architecture_wins_over_architecture(self):
        parsed = _parse(image=_image(hw_architecture='x86_64',
                                     architecture='aarch64'))
        self.assertEqual('x86_64', parsed.cpu_arch)

    def test_empty_architecture_is_unset(self):
        self.assertIsNone(_parse(image=_image(hw_architecture='')).cpu_arch)

    def test_malformed_architecture(self):
        self._assert_invalid(_image(hw_architecture='x86-64'),
                             'image.properties.hw_architecture', 'malformed')
        self._assert_invalid(_image(architecture=64),
                             'image.properties.architecture',
                             'must be a string')

    def test_bare_metal_hypervisor_type(self):
        for value in ('baremetal', 'BareMetal', None, ''):
            _parse(image=_image(img_hv_type=value))
        for value in ('kvm', 'ironic', 1):
            self._assert_invalid(_image(img_hv_type=value),
                                 'image.properties.img_hv_type',
                                 'can never match')

    def test_hvm_vm_mode(self):
        for value in ('hvm', 'HVM', 'hv', 'baremetal', None):
            _parse(image=_image(hw_vm_mode=value))
        for value in ('xen', 'exe', 'uml'):
            self._assert_invalid(_image(hw_vm_mode=value),
                                 'image.properties.hw_vm_mode',
                                 'can never match')

    def test_image_without_properties(self):
        parsed = _parse(image={'id': 'image-uuid', 'properties': None})
        self.assertIsNone(parsed.cpu_arch)
