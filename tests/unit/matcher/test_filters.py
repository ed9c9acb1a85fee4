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
import datetime
import types

import testtools

from reserveapi.matcher import filters
from reserveapi.matcher import operators
from reserveapi.matcher import spec
from tests.unit.matcher import fakes

GOLD_SPEC = spec.RequestSpec(
    memory_mb=1024, vcpus=8, disk_gb=31,
    resource_class='CUSTOM_BAREMETAL_GOLD',
    required_traits=frozenset({'CUSTOM_RAID'}),
    forbidden_traits=frozenset({'CUSTOM_BROKEN'}),
    capabilities=(operators.parse_requirement('boot_mode', 'uefi'),),
    cpu_arch='x86_64',
)
NO_CONTEXT = filters.MatchContext()


def _node(**changes):
    """A node that matches GOLD_SPEC, with ``changes`` applied."""
    node = fakes.FakeNode(
        uuid='1be26c0b-03f2-4d2e-ae87-c02d7f33c123', name='node-1',
        resource_class='CUSTOM_BAREMETAL_GOLD', memory_mb=2048, cpus=8,
        local_gb=100, cpu_arch='x86_64', capabilities={'boot_mode': 'uefi'},
        traits=frozenset({'CUSTOM_RAID'}), owner=None, lessee=None)
    return dataclasses.replace(node, **changes)


class FilterTestCase(testtools.TestCase):

    def assertPasses(self, node, spec_=GOLD_SPEC, context=NO_CONTEXT):
        self.assertIsNone(filters.first_miss(spec_, node, context))
        self.assertEqual(([node], []),
                         filters.partition(spec_, [node], context))

    def assertFailsOn(self, criterion, node, spec_=GOLD_SPEC,
                      context=NO_CONTEXT):
        failure = filters.first_miss(spec_, node, context)
        self.assertIsNotNone(failure, 'node unexpectedly matches')
        self.assertEqual(criterion, failure[0], failure)
        self.assertEqual(([], [(node, *failure)]),
                         filters.partition(spec_, [node], context))
        return failure[1].detail


class TestEligibility(FilterTestCase):

    def test_baseline_node_matches(self):
        self.assertPasses(_node())

    def test_provision_state_must_be_available(self):
        for state in ('active', 'manageable', 'cleaning', None):
            detail = self.assertFailsOn('provision_state',
                                        _node(provision_state=state))
            self.assertIn(str(state), detail)

    def test_power_state_must_be_known(self):
        self.assertFailsOn('power_state', _node(power_state=None))
        self.assertPasses(_node(power_state='power on'))

    def test_maintenance(self):
        self.assertFailsOn('maintenance', _node(maintenance=True))

    def test_retired(self):
        self.assertFailsOn('retired', _node(retired=True))

    def test_instance_uuid(self):
        detail = self.assertFailsOn('instance_uuid',
                                    _node(instance_uuid='instance-1'))
        self.assertIn('instance-1', detail)

    def test_reserved(self):
        self.assertFailsOn('reserved', _node(reserved=True))

    def test_first_failure_follows_criteria_order(self):
        node = _node(maintenance=True, reserved=True, memory_mb=1,
                     resource_class='CUSTOM_SILVER')
        self.assertFailsOn('maintenance', node)
        self.assertFailsOn('reserved', dataclasses.replace(
            node, maintenance=False))


class TestCandidateNodes(FilterTestCase):

    def test_none_means_every_node(self):
        self.assertPasses(_node(), context=filters.MatchContext(
            candidate_nodes=None))

    def test_by_uuid_or_name(self):
        node = _node()
        for candidates in ([node.uuid], ['node-1'], ['other', 'node-1']):
            self.assertPasses(node, context=filters.MatchContext(
                candidate_nodes=candidates))

    def test_not_a_candidate(self):
        for candidates in (['node-2'], []):
            self.assertFailsOn('candidate_nodes', _node(),
                               context=filters.MatchContext(
                                   candidate_nodes=candidates))

    def test_unnamed_node(self):
        self.assertFailsOn('candidate_nodes', _node(name=None),
                           context=filters.MatchContext(
                               candidate_nodes=['node-1']))

    def test_candidates_become_a_frozenset(self):
        context = filters.MatchContext(candidate_nodes=['a', 'b', 'a'])
        self.assertEqual(frozenset({'a', 'b'}), context.candidate_nodes)
        self.assertRaises(dataclasses.FrozenInstanceError, setattr, context,
                          'exact_match', True)


class TestOwnerAndLessee(FilterTestCase):

    def test_rule(self):
        cases = [
            # owner, lessee, project, usable
            (None, None, 'p1', True),
            ('p1', None, 'p1', True),
            (None, 'p1', 'p1', True),
            ('p1', 'p2', 'p1', True),
            ('p2', 'p1', 'p1', True),
            ('p2', None, 'p1', False),
            (None, 'p2', 'p1', False),
            ('p2', 'p3', 'p1', False),
            ('p2', 'p3', None, True),
        ]
        for owner, lessee, project, usable in cases:
            node = _node(owner=owner, lessee=lessee)
            context = filters.MatchContext(project_id=project)
            failure = filters.first_miss(GOLD_SPEC, node, context)
            self.assertEqual(usable, failure is None,
                             (owner, lessee, project, failure))
            if not usable:
                self.assertEqual('owner', failure[0])


class TestResourceClass(FilterTestCase):

    def test_node_class_is_compared_as_nova_reports_it(self):
        # The inventory normalizes a node's class once, as Nova does; the
        # matcher compares that, so Ironic's CUSTOM_BAREMETAL_GOLD (which
        # Nova reports as CUSTOM_CUSTOM_BAREMETAL_GOLD) is another class.
        self.assertPasses(_node(resource_class='CUSTOM_BAREMETAL_GOLD'))
        self.assertFailsOn('resource_class', _node(
            resource_class='CUSTOM_CUSTOM_BAREMETAL_GOLD'))

    def test_wrong_class(self):
        for name in ('CUSTOM_BAREMETAL_SILVER', None, ''):
            detail = self.assertFailsOn('resource_class',
                                        _node(resource_class=name))
            self.assertIn('CUSTOM_BAREMETAL_GOLD', detail)

    def test_no_class_requested_accepts_any(self):
        spec_ = dataclasses.replace(GOLD_SPEC, resource_class=None)
        self.assertPasses(_node(resource_class='CUSTOM_SILVER'), spec_)
        self.assertPasses(_node(resource_class=None), spec_)


class TestSizing(FilterTestCase):

    def test_memory(self):
        self.assertPasses(_node(memory_mb=1024))
        detail = self.assertFailsOn('memory_mb', _node(memory_mb=1023))
        self.assertIn('needs 1024', detail)
        self.assertFailsOn('memory_mb', _node(memory_mb=None))

    def test_cpus(self):
        self.assertPasses(_node(cpus=64))
        self.assertFailsOn('cpus', _node(cpus=4))

    def test_disk(self):
        self.assertPasses(_node(local_gb=31))
        self.assertFailsOn('local_gb', _node(local_gb=30))

    def test_exact_match_demands_equal_memory_and_cpus(self):
        exact = filters.MatchContext(exact_match=True)
        self.assertPasses(_node(memory_mb=1024, cpus=8), context=exact)
        detail = self.assertFailsOn('memory_mb', _node(memory_mb=2048),
                                    context=exact)
        self.assertIn('exactly', detail)
        self.assertFailsOn('cpus', _node(memory_mb=1024, cpus=16),
                           context=exact)

    def test_exact_match_leaves_disk_at_least(self):
        exact = filters.MatchContext(exact_match=True)
        self.assertPasses(_node(memory_mb=1024, local_gb=1000),
                          context=exact)

    def test_switched_off_checks_ignore_the_node(self):
        unchecked = dataclasses.replace(GOLD_SPEC, check_memory=False,
                                        check_vcpus=False, check_disk=False)
        small = _node(memory_mb=0, cpus=0, local_gb=None)
        self.assertPasses(small, unchecked)
        self.assertPasses(small, unchecked,
                          filters.MatchContext(exact_match=True))

    def test_parsed_zero_resources_switch_sizing_off(self):
        spec_ = spec.parse_request_spec({
            'memory_mb': 4096, 'vcpus': 64, 'root_gb': 500,
            'extra_specs': {'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
                            'resources:DISK_GB': '0'}})
        self.assertPasses(_node(memory_mb=1, cpus=1, local_gb=1), spec_)


class TestCpuArch(FilterTestCase):

    def test_node_arch_is_canonicalized(self):
        self.assertPasses(_node(cpu_arch='amd64'))
        self.assertPasses(_node(cpu_arch='X86_64'))

    def test_mismatch(self):
        for arch in ('aarch64', None, 'not valid!'):
            self.assertFailsOn('cpu_arch', _node(cpu_arch=arch))

    def test_image_without_arch_accepts_any(self):
        spec_ = dataclasses.replace(GOLD_SPEC, cpu_arch=None)
        self.assertPasses(_node(cpu_arch='ppc64le'), spec_)
        self.assertPasses(_node(cpu_arch=None), spec_)


class TestTraits(FilterTestCase):

    def test_missing_required_trait(self):
        detail = self.assertFailsOn('required_traits',
                                    _node(traits=frozenset({'CUSTOM_OTHER'})))
        self.assertIn('CUSTOM_RAID', detail)
        self.assertFailsOn('required_traits', _node(traits=None))

    def test_extra_traits_are_fine(self):
        self.assertPasses(_node(traits={'CUSTOM_RAID', 'HW_CPU_X86_AVX2'}))

    def test_forbidden_trait(self):
        detail = self.assertFailsOn(
            'forbidden_traits', _node(traits={'CUSTOM_RAID', 'CUSTOM_BROKEN'}))
        self.assertIn('CUSTOM_BROKEN', detail)


class TestCapabilities(FilterTestCase):

    def _spec(self, *requirements):
        return dataclasses.replace(GOLD_SPEC, capabilities=requirements)

    def test_ironic_string_capabilities(self):
        self.assertPasses(_node(capabilities='boot_mode:uefi,has_gpu:true'))

    def test_mismatch_names_capability_and_value(self):
        detail = self.assertFailsOn('capabilities',
                                    _node(capabilities={'boot_mode': 'bios'}))
        self.assertIn('boot_mode', detail)
        self.assertIn('bios', detail)

    def test_missing_capability(self):
        detail = self.assertFailsOn('capabilities', _node(capabilities={}))
        self.assertIn('unset', detail)

    def test_every_requirement_must_hold(self):
        spec_ = self._spec(operators.parse_requirement('boot_mode', 'uefi'),
                           operators.parse_requirement('cores', '>= 16'))
        self.assertPasses(_node(capabilities={'boot_mode': 'uefi',
                                              'cores': '32'}), spec_)
        detail = self.assertFailsOn(
            'capabilities', _node(capabilities={'boot_mode': 'uefi',
                                                'cores': '8'}), spec_)
        self.assertIn('cores', detail)

    def test_numeric_operator_on_text_is_a_mismatch_not_an_error(self):
        spec_ = self._spec(operators.parse_requirement('cores', '>= 16'))
        self.assertFailsOn('capabilities', _node(capabilities={'cores':
                                                               'many'}), spec_)

    def test_legacy_list_accepts_true_in_any_case(self):
        spec_ = spec.parse_request_spec(
            {'extra_specs': {'capabilities': 'supports_uefi,has_gpu'}})
        for value in ('true', 'True', 'TRUE', True):
            self.assertPasses(_node(capabilities={'supports_uefi': value,
                                                  'has_gpu': 'true'}), spec_)
        self.assertFailsOn('capabilities', _node(capabilities={
            'supports_uefi': 'true', 'has_gpu': 'false'}), spec_)
        self.assertFailsOn('capabilities', _node(capabilities={
            'supports_uefi': 'true'}), spec_)

    def test_legacy_cpu_arch_reads_the_node_arch(self):
        spec_ = spec.parse_request_spec({'extra_specs': {'cpu_arch':
                                                         'x86_64'}})
        self.assertPasses(_node(capabilities={}), spec_)
        self.assertFailsOn('capabilities', _node(cpu_arch='aarch64'), spec_)
        self.assertFailsOn('capabilities', _node(cpu_arch=None), spec_)

    def test_node_capabilities(self):
        node = _node(cpu_arch='x86_64',
                     capabilities='boot_mode:uefi,cpu_arch:i686')
        self.assertEqual({'cpu_arch': 'i686', 'boot_mode': 'uefi'},
                         filters.node_capabilities(node))
        self.assertEqual({}, filters.node_capabilities(
            _node(cpu_arch=None, capabilities=None)))


class TestPartition(FilterTestCase):

    def test_any_partition_without_one_in_the_request(self):
        self.assertPasses(_node(conductor_group='rack-a', shard='s1'))

    def test_conductor_group_and_shard(self):
        context = filters.MatchContext(conductor_group='rack-a', shard='s1')
        self.assertPasses(_node(conductor_group='rack-a', shard='s1'),
                          context=context)
        for changes in ({'conductor_group': 'rack-b', 'shard': 's1'},
                        {'conductor_group': 'rack-a', 'shard': None},
                        {'conductor_group': None, 'shard': 's1'}):
            detail = self.assertFailsOn('partition', _node(**changes),
                                        context=context)
            self.assertIn('shard', detail)

    def test_empty_conductor_group_is_the_default_group(self):
        context = filters.MatchContext(conductor_group='')
        self.assertPasses(_node(conductor_group=None), context=context)
        self.assertFailsOn('partition', _node(conductor_group='rack-a'),
                           context=context)


class TestStale(FilterTestCase):

    def test_a_stale_node_waits_for_a_sync(self):
        detail = self.assertFailsOn('stale', _node(
            stale_since=datetime.datetime(2030, 1, 1)))
        self.assertIn('waiting for a sync', detail)


class TestCriteria(FilterTestCase):

    FAILING_NODES = {
        'vanished': {'vanished': True},
        'provision_state': {'provision_state': 'active'},
        'power_state': {'power_state': None},
        'maintenance': {'maintenance': True},
        'retired': {'retired': True},
        'instance_uuid': {'instance_uuid': 'i-1'},
        'stale': {'stale_since': datetime.datetime(2030, 1, 1)},
        'reserved': {'reserved': True},
        'candidate_nodes': {'name': 'node-9', 'uuid': 'u-9'},
        'partition': {'shard': 'shard-2'},
        'owner': {'owner': 'someone-else'},
        'resource_class': {'resource_class': 'CUSTOM_SILVER'},
        'cpu_arch': {'cpu_arch': 'aarch64'},
        'memory_mb': {'memory_mb': 512},
        'cpus': {'cpus': 1},
        'local_gb': {'local_gb': 1},
        'required_traits': {'traits': frozenset()},
        'forbidden_traits': {'traits': {'CUSTOM_RAID', 'CUSTOM_BROKEN'}},
        'capabilities': {'capabilities': {}},
    }
    BASE = {'shard': 'shard-1'}
    CONTEXT = filters.MatchContext(project_id='p1',
                                   candidate_nodes=['node-1'],
                                   conductor_group='', shard='shard-1')

    def test_names_are_unique_described_and_phrased(self):
        names = [criterion.name for criterion in filters.CRITERIA]
        self.assertEqual(len(names), len(set(names)))
        self.assertEqual(set(names), set(filters.BY_NAME))
        for criterion in filters.CRITERIA:
            self.assertTrue(callable(criterion.check))
            self.assertTrue(criterion.description)
            self.assertTrue(criterion.phrase)

    def test_every_criterion_is_covered_here(self):
        self.assertEqual({criterion.name for criterion in filters.CRITERIA},
                         set(self.FAILING_NODES))

    def test_each_criterion_rejects_only_its_own_failure(self):
        for name, changes in self.FAILING_NODES.items():
            node = _node(**dict(self.BASE, **changes))
            self.assertFailsOn(name, node, context=self.CONTEXT)
            verdicts = {criterion.name: criterion.check(
                GOLD_SPEC, node, self.CONTEXT) is None
                for criterion in filters.CRITERIA}
            self.assertEqual({name}, {key for key, passed in verdicts.items()
                                      if not passed})

    def test_all_criteria_pass_for_a_matching_node(self):
        for criterion in filters.CRITERIA:
            self.assertIsNone(criterion.check(
                GOLD_SPEC, _node(**self.BASE), self.CONTEXT), criterion.name)

    def test_any_object_with_the_attributes_is_a_node(self):
        node = types.SimpleNamespace(**dataclasses.asdict(_node()))
        self.assertPasses(node)
        node.maintenance = True
        self.assertFailsOn('maintenance', node)
