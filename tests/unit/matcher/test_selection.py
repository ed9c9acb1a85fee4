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

import collections
import dataclasses
import random

import testtools

from reserveapi.common import eligibility
from reserveapi.matcher import filters
from reserveapi.matcher import operators
from reserveapi.matcher import selection
from reserveapi.matcher import spec
from tests.unit.matcher import fakes

SPEC = spec.RequestSpec(memory_mb=1024, vcpus=8, disk_gb=100)


def _node(uuid, memory_mb=1024, cpus=8, local_gb=100, **fields):
    return fakes.FakeNode(uuid=uuid, memory_mb=memory_mb, cpus=cpus,
                          local_gb=local_gb, **fields)


def _uuids(nodes):
    return [node.uuid for node in nodes]


def _choose(spec_, nodes, subset_size, rng=random):
    """The node a request tries first: the head of the ranking."""
    ranked = selection.rank(spec_, nodes, subset_size, rng)
    return ranked[0] if ranked else None


def _eliminate(spec_, nodes, context):
    """What eliminated ``nodes``, as the domain gets it per batch."""
    _matched, misses = filters.partition(spec_, nodes, context)
    return selection.eliminate(misses)


class TestWaste(testtools.TestCase):

    def test_memory_then_cpus_then_disk(self):
        self.assertEqual((1024, 8, 0),
                         selection.waste(SPEC, _node('a', 2048, 16, 100)))

    def test_only_checked_dimensions(self):
        node = _node('a', 2048, 16, 150)
        cases = [
            ({'check_memory': False}, (8, 50)),
            ({'check_vcpus': False}, (1024, 50)),
            ({'check_disk': False}, (1024, 8)),
            ({'check_memory': False, 'check_vcpus': False,
              'check_disk': False}, ()),
        ]
        for changes, expected in cases:
            self.assertEqual(expected, selection.waste(
                dataclasses.replace(SPEC, **changes), node), changes)

    def test_unknown_sizes_count_as_zero(self):
        self.assertEqual((-1024, -8, -100), selection.waste(
            SPEC, _node('a', None, None, None)))

    def test_memory_outranks_cpus_and_disk(self):
        lean_memory = _node('a', 1024, 64, 1000)
        lean_cpus = _node('b', 2048, 8, 100)
        self.assertLess(selection.waste(SPEC, lean_memory),
                        selection.waste(SPEC, lean_cpus))


class TestRankAndChoose(testtools.TestCase):

    # Waste grows with the index: n0 is the best fit.
    NODES = [_node('n%d' % index, 1024 + index * 512) for index in range(8)]

    def _shuffled_nodes(self, seed=7):
        nodes = list(self.NODES)
        random.Random(seed).shuffle(nodes)
        return nodes

    def test_best_subset_first_then_the_rest_in_waste_order(self):
        ranked = selection.rank(SPEC, self._shuffled_nodes(), 3,
                                random.Random(1))
        self.assertEqual({'n0', 'n1', 'n2'}, set(_uuids(ranked[:3])))
        self.assertEqual(['n3', 'n4', 'n5', 'n6', 'n7'], _uuids(ranked[3:]))

    def test_rank_keeps_every_node(self):
        ranked = selection.rank(SPEC, self._shuffled_nodes(), 3,
                                random.Random(1))
        self.assertEqual(sorted(_uuids(self.NODES)), sorted(_uuids(ranked)))

    def test_subset_is_shuffled(self):
        heads = {tuple(_uuids(selection.rank(SPEC, self.NODES, 3,
                                             random.Random(seed))[:3]))
                 for seed in range(50)}
        self.assertGreater(len(heads), 1)
        for head in heads:
            self.assertEqual({'n0', 'n1', 'n2'}, set(head))

    def test_seeded_rng_is_reproducible(self):
        first = selection.rank(SPEC, self.NODES, 4, random.Random(42))
        second = selection.rank(SPEC, self.NODES, 4, random.Random(42))
        self.assertEqual(_uuids(first), _uuids(second))

    def test_choose_picks_only_within_the_best_subset(self):
        picks = collections.Counter(
            _choose(SPEC, self._shuffled_nodes(seed), 3,
                             random.Random(seed)).uuid
            for seed in range(300))
        self.assertEqual({'n0', 'n1', 'n2'}, set(picks))

    def test_subset_of_one_picks_the_least_waste(self):
        for seed in range(20):
            chosen = _choose(SPEC, self._shuffled_nodes(seed), 1,
                                      random.Random(seed))
            self.assertEqual('n0', chosen.uuid)

    def test_subset_below_one_means_one(self):
        for subset_size in (0, -5):
            chosen = _choose(SPEC, self._shuffled_nodes(),
                                      subset_size, random.Random(3))
            self.assertEqual('n0', chosen.uuid)

    def test_subset_larger_than_the_nodes(self):
        ranked = selection.rank(SPEC, self.NODES[:2], 10, random.Random(0))
        self.assertEqual({'n0', 'n1'}, set(_uuids(ranked)))

    def test_identical_nodes_are_spread(self):
        nodes = [_node('same-%d' % index) for index in range(10)]
        picks = {_choose(SPEC, nodes, 1, random.Random(seed)).uuid
                 for seed in range(100)}
        self.assertGreater(len(picks), 5)

    def test_nothing_to_choose(self):
        self.assertIsNone(_choose(SPEC, [], 3, random.Random(0)))
        self.assertEqual([], selection.rank(SPEC, [], 3, random.Random(0)))

    def test_accepts_any_iterable_and_the_random_module(self):
        chosen = _choose(SPEC, iter(self.NODES), 1)
        self.assertEqual('n0', chosen.uuid)


class TestEliminate(testtools.TestCase):

    SPEC = spec.RequestSpec(
        resource_class='CUSTOM_GOLD',
        required_traits=frozenset({'CUSTOM_RAID'}),
        capabilities=(operators.parse_requirement('boot_mode', 'uefi'),))
    CONTEXT = filters.MatchContext()

    def _gold(self, uuid, **fields):
        fields.setdefault('resource_class', 'CUSTOM_GOLD')
        fields.setdefault('traits', frozenset({'CUSTOM_RAID'}))
        fields.setdefault('capabilities', {'boot_mode': 'uefi'})
        return _node(uuid, **fields)

    def test_counts_first_failure_and_add_up_to_the_total(self):
        nodes = (
            [self._gold('rc-%d' % i, resource_class='CUSTOM_SILVER',
                        reserved=True)
             for i in range(2)]
            + [self._gold('res-%d' % i, reserved=True) for i in range(3)]
            + [self._gold('trait-%d' % i, traits=frozenset())
               for i in range(4)]
            + [self._gold('cap-%d' % i, capabilities={'boot_mode': 'bios'})
               for i in range(5)])
        eliminated, values = _eliminate(self.SPEC, nodes,
                                                 self.CONTEXT)
        self.assertEqual({'reserved': 5, 'required_traits:CUSTOM_RAID': 4,
                          'capabilities:boot_mode': 5}, eliminated)
        self.assertEqual(len(nodes), sum(eliminated.values()))
        self.assertEqual({'boot_mode': collections.Counter({'bios': 5})},
                         values)

    def test_matching_nodes_are_not_counted(self):
        nodes = [self._gold('ok'), self._gold('bad', maintenance=True)]
        eliminated, values = _eliminate(self.SPEC, nodes,
                                                 self.CONTEXT)
        self.assertEqual({'maintenance': 1}, eliminated)
        self.assertEqual({}, values)

    def test_missing_capability_is_unset(self):
        nodes = [self._gold('a', capabilities={}),
                 self._gold('b', capabilities='boot_mode:bios')]
        _eliminated, values = _eliminate(self.SPEC, nodes,
                                                  self.CONTEXT)
        self.assertEqual(
            collections.Counter({selection.UNSET: 1, 'bios': 1}),
            values['boot_mode'])

    def test_capability_values_are_all_counted(self):
        # The cut to the most common happens once, in explain(), after
        # the batches are summed: a batch keeps every value.
        counts = {'v%d' % i: i + 1 for i in range(8)}
        nodes = [self._gold('%s-%d' % (value, i),
                            capabilities={'boot_mode': value})
                 for value, count in counts.items() for i in range(count)]
        eliminated, values = _eliminate(self.SPEC, nodes, self.CONTEXT)
        self.assertEqual(len(nodes), eliminated['capabilities:boot_mode'])
        self.assertEqual(collections.Counter(counts), values['boot_mode'])


class TestExplain(testtools.TestCase):

    def test_design_example(self):
        text = selection.explain(
            120,
            {'reserved': 10, 'resource_class': 80,
             'required_traits:CUSTOM_RAID': 30},
            {'boot_mode': collections.Counter({'legacy': 3, 'bios': 12})})
        self.assertEqual(
            '120 nodes: 80 wrong resource class, 30 lack trait CUSTOM_RAID, '
            '10 reserved; capability boot_mode: closest nodes have bios '
            '(12), legacy (3)', text)

    def test_ties_follow_criteria_order(self):
        text = selection.explain(
            3, {'reserved': 1, 'capabilities:boot_mode': 1, 'maintenance': 1},
            {})
        self.assertEqual('3 nodes: 1 in maintenance, 1 reserved, '
                         '1 fail capability boot_mode', text)

    def test_capability_values_keep_the_five_most_common(self):
        values = collections.Counter({'v%d' % i: i + 1 for i in range(8)})
        values[selection.UNSET] = 4
        text = selection.explain(44, {'capabilities:boot_mode': 44},
                                 {'boot_mode': values})
        self.assertTrue(text.endswith(
            'closest nodes have v7 (8), v6 (7), v5 (6), v4 (5), v3 (4)'),
            text)

    def test_values_are_cut_after_the_batches_are_summed(self):
        # "rare" is sixth in each batch, first once they are summed.
        batches = [collections.Counter({'a%d' % i: 3 for i in range(5)}),
                   collections.Counter({'b%d' % i: 3 for i in range(5)})]
        for batch in batches:
            batch['rare'] = 2
        summed = sum(batches, collections.Counter())
        text = selection.explain(34, {'capabilities:boot_mode': 34},
                                 {'boot_mode': summed})
        self.assertTrue(text.endswith(
            'closest nodes have rare (4), a0 (3), a1 (3), a2 (3), a3 (3)'),
            text)

    def test_every_criterion_reads_as_declared(self):
        for criterion in filters.CRITERIA:
            key = criterion.name + (':CUSTOM_X' if '%s' in criterion.phrase
                                    else '')
            self.assertEqual(
                '1 node: 1 ' + eligibility.worded(criterion.phrase,
                                                  'CUSTOM_X'),
                selection.explain(1, {key: 1}, {}))

    def test_singular_and_empty(self):
        self.assertEqual('1 node: 1 retired',
                         selection.explain(1, {'retired': 1}, {}))
        self.assertEqual('0 nodes', selection.explain(0, {}, {}))
        self.assertEqual('2 nodes', selection.explain(2, {'retired': 0}, {}))

    def test_unknown_criterion_is_shown_as_is(self):
        self.assertEqual('4 nodes: 4 on_fire',
                         selection.explain(4, {'on_fire': 4}, {}))

    def test_several_capabilities_sorted_by_name(self):
        text = selection.explain(
            2, {'capabilities:boot_mode': 1, 'capabilities:disk_label': 1},
            {'disk_label': collections.Counter({'msdos': 1}),
             'boot_mode': collections.Counter({selection.UNSET: 1})})
        self.assertTrue(text.endswith(
            '; capability boot_mode: closest nodes have <unset> (1)'
            '; capability disk_label: closest nodes have msdos (1)'), text)

    def test_eliminate_then_explain_adds_up(self):
        spec_ = spec.parse_request_spec({
            'memory_mb': 1024,
            'extra_specs': {'resources:CUSTOM_GOLD': '1',
                            'capabilities:boot_mode': 'uefi'}})
        nodes = ([_node('a-%d' % i, resource_class='CUSTOM_SILVER')
                  for i in range(6)]
                 + [_node('b-%d' % i, resource_class='CUSTOM_GOLD',
                          memory_mb=512)
                    for i in range(3)]
                 + [_node('c', resource_class='CUSTOM_GOLD',
                          capabilities='boot_mode:bios')])
        eliminated, values = _eliminate(
            spec_, nodes, filters.MatchContext())
        self.assertEqual(len(nodes), sum(eliminated.values()))
        self.assertEqual(
            '10 nodes: 6 wrong resource class, 3 wrong memory size, '
            '1 fail capability boot_mode; capability boot_mode: closest '
            'nodes have bios (1)',
            selection.explain(len(nodes), eliminated, values))


class TestRefusalCause(testtools.TestCase):
    """What a refusal is counted by, from nodes counted with the
    requested class first: never the other classes' nodes, unless the
    class has none; ``reserved`` when held nodes would have matched."""

    def test_other_classes_are_no_reason(self):
        self.assertEqual('required_traits', selection.refusal_cause(
            {'resource_class': 80, 'required_traits:CUSTOM_RAID': 3,
             'maintenance': 1}))

    def test_a_class_without_nodes(self):
        self.assertEqual('resource_class', selection.refusal_cause(
            {'resource_class': 80, 'retired': 0}))

    def test_held_nodes_that_would_match(self):
        self.assertEqual('reserved', selection.refusal_cause(
            {'resource_class': 80, 'maintenance': 30, 'reserved': 1}))

    def test_ties_go_in_criterion_order(self):
        self.assertEqual('maintenance', selection.refusal_cause(
            {'maintenance': 2, 'required_traits:CUSTOM_RAID': 2}))

    def test_nothing_at_all(self):
        self.assertEqual('none', selection.refusal_cause({}))
        self.assertEqual('none', selection.refusal_cause({'retired': 0}))


class TestCandidatesOrder(testtools.TestCase):
    """What POST /v1/candidates shows: exclusions in the matcher's order,
    groups of alike nodes counted once each, nodes best fit first."""

    SPEC = spec.parse_request_spec({'extra_specs': {
        'capabilities:gpus': '= 2', 'capabilities:boot_mode': 'uefi',
        'trait:CUSTOM_RAID': 'required', 'trait:CUSTOM_A': 'required'}})

    def test_excluded_in_the_order_criteria_apply(self):
        eliminated = {'capabilities:boot_mode': 9, 'capabilities:gpus': 1,
                      'required_traits:CUSTOM_RAID': 2,
                      'required_traits:CUSTOM_A': 2, 'resource_class': 50,
                      'reserved': 3, 'retired': 0}
        values = {'boot_mode': collections.Counter({'bios': 8, 'x': 1}),
                  'gpus': collections.Counter({'1': 1})}
        self.assertEqual(
            [('reserved', None, 3, 'reserved', ()),
             ('resource_class', None, 50, 'wrong resource class', ()),
             ('required_traits', 'CUSTOM_A', 2, 'lack trait CUSTOM_A', ()),
             ('required_traits', 'CUSTOM_RAID', 2, 'lack trait CUSTOM_RAID',
              ()),
             ('capabilities', 'gpus', 1, 'fail capability gpus',
              (('1', 1),)),
             ('capabilities', 'boot_mode', 9, 'fail capability boot_mode',
              (('bios', 8), ('x', 1)))],
            [tuple(exclusion) for exclusion in selection.excluded(
                self.SPEC, eliminated, values)])

    def test_a_group_counts_for_its_nodes(self):
        group = _node('group', capabilities={'gpus': '1'})
        miss = filters.Miss('capability gpus is 1', 'gpus')
        self.assertEqual(
            ({'capabilities:gpus': 7},
             {'gpus': collections.Counter({'1': 7})}),
            selection.eliminate([(group, 'capabilities', miss)], [7]))

    def test_by_fit_keeps_the_order_of_equal_nodes(self):
        nodes = [_node('big', 4096), _node('first'), _node('second'),
                 _node('mid', 2048)]
        self.assertEqual(['first', 'second', 'mid', 'big'],
                         _uuids(selection.by_fit(SPEC, nodes)))
