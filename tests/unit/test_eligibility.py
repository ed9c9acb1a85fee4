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

"""The declaration of every criterion is complete and consistent, and
every place that decides eligibility follows it: the matcher's checks
and phrases, the SQL clauses, the stored flag, Ironic's re-check after a
claim. The node's state is declared in common/eligibility.py, what a
request asks in matcher/filters.py, each with the shape of its SQL,
which db/matching.py builds. (tests/functional/db/test_eligibility_parity.py
compares Python and SQL on the real databases.)"""

import dataclasses
import datetime

from oslotest import base
import sqlalchemy as sa

from reserveapi.common import eligibility
from reserveapi.common import node_fields
from reserveapi.db import matching
from reserveapi.db import models
from reserveapi.db import nodes as db_nodes
from reserveapi.db import records
from reserveapi.inventory import ironic
from reserveapi.matcher import filters
from reserveapi.matcher import spec as spec_mod
from tests.unit.inventory import test_file
from tests.unit.matcher import fakes

TESTS = (eligibility.EQUALS, eligibility.IS_SET, eligibility.IS_UNSET,
         eligibility.FALSE)
_EVERYTHING = {
    'memory_mb': 1024, 'vcpus': 4, 'root_gb': 20,
    'extra_specs': {'resources:CUSTOM_GOLD': '1',
                    'trait:CUSTOM_A': 'required',
                    'trait:CUSTOM_B': 'forbidden',
                    'capabilities:boot_mode': 'uefi',
                    'capabilities:disk_label': '<or> gpt <or> msdos',
                    'capabilities': 'secure_boot'},
    'image': {'properties': {'hw_architecture': 'x86_64'}}}
EVERY_REQUEST = [
    # Everything a request can ask SQL, both ways a size can be asked.
    (spec_mod.parse_request_spec(_EVERYTHING), filters.MatchContext(
        project_id='p1', candidate_nodes=['node-1', 'node-2'],
        conductor_group='', shard='s1')),
    (spec_mod.parse_request_spec(_EVERYTHING), filters.MatchContext(
        exact_match=True, conductor_group='east')),
]


def _node_filter(spec, context):
    return matching.NodeFilter(filters.asked(spec, context))


class TestDeclaration(base.BaseTestCase):

    def test_names_are_unique(self):
        names = [criterion.name for criterion in eligibility.CRITERIA]
        self.assertEqual(len(names), len(set(names)))
        self.assertEqual(set(names), set(eligibility.BY_NAME))

    def test_every_criterion_is_described_and_phrased(self):
        for criterion in eligibility.CRITERIA:
            self.assertTrue(criterion.description, criterion.name)
            self.assertTrue(criterion.phrase, criterion.name)

    def test_every_criterion_has_a_rule_over_the_node(self):
        record_fields = {field.name
                         for field in dataclasses.fields(records.NodeRecord)}
        for criterion in eligibility.CRITERIA:
            self.assertIn(criterion.sql,
                          (eligibility.NODE, eligibility.RESERVATION),
                          criterion.name)
            rule = criterion.rule
            self.assertIn(rule.test, TESTS, criterion.name)
            self.assertTrue(rule.field in record_fields or isinstance(
                getattr(records.NodeRecord, rule.field, None), property),
                criterion.name)
            self.assertTrue(hasattr(models.Node, rule.field))
            self.assertTrue(rule.miss, criterion.name)

    def test_stored_and_rechecked_criteria_are_node_rules(self):
        self.assertTrue(eligibility.STORED_FLAG)
        self.assertTrue(eligibility.AFTER_CLAIM)
        for criterion in eligibility.CRITERIA:
            if criterion.stored_flag or criterion.after_claim:
                self.assertEqual(eligibility.NODE, criterion.sql,
                                 criterion.name)
            if criterion.after_claim:
                # Read from the node dict the inventory normalizes.
                self.assertIn(criterion.rule.field, node_fields.NAMES)

    def test_the_universe_is_vanished_first_and_never_eligible(self):
        self.assertEqual(['vanished'], [criterion.name for criterion
                                        in eligibility.UNIVERSE])
        self.assertEqual(eligibility.UNIVERSE, eligibility.CRITERIA[:1])
        for criterion in eligibility.UNIVERSE:
            self.assertIn(criterion.name, eligibility.STORED_FLAG)

    def test_rule_tests(self):
        def passing(test, value, expected=None):
            return eligibility.passes(
                eligibility.NodeRule('field', test, 'miss', expected))(value)

        self.assertTrue(passing(eligibility.EQUALS, 'a', 'a'))
        self.assertFalse(passing(eligibility.EQUALS, None, 'a'))
        for unset in (None, ''):
            self.assertTrue(passing(eligibility.IS_UNSET, unset))
            self.assertFalse(passing(eligibility.IS_SET, unset))
        for value in ('x', datetime.datetime(2024, 1, 1)):
            self.assertFalse(passing(eligibility.IS_UNSET, value))
            self.assertTrue(passing(eligibility.IS_SET, value))
        self.assertTrue(passing(eligibility.FALSE, False))
        self.assertFalse(passing(eligibility.FALSE, True))


class TestMatcherFollows(base.BaseTestCase):

    def test_the_nodes_state_comes_first_then_the_request(self):
        self.assertEqual(
            [(criterion.name, criterion.description, criterion.phrase)
             for criterion in eligibility.CRITERIA + filters.REQUEST],
            [(criterion.name, criterion.description, criterion.phrase)
             for criterion in filters.CRITERIA])
        names = [criterion.name for criterion in filters.CRITERIA]
        self.assertEqual(len(names), len(set(names)))

    def test_every_request_criterion_asks_sql(self):
        # No criterion is left to Python alone.
        for criterion in filters.REQUEST:
            self.assertTrue(callable(criterion.asks), criterion.name)
        spec, context = EVERY_REQUEST[0]
        self.assertEqual(
            [criterion.name for criterion in filters.REQUEST],
            [name for name, _shape, _asked in filters.asked(spec, context)])

    def test_node_rules_word_a_miss_as_the_checks_always_did(self):
        since = datetime.datetime(2024, 5, 1, 12, 0)
        for name, changes, detail in (
                ('vanished', {'vanished': True},
                 'vanished from the inventory'),
                ('provision_state', {'provision_state': 'active'},
                 'provision state is active'),
                ('provision_state', {'provision_state': None},
                 'provision state is None'),
                ('power_state', {'power_state': None},
                 'power state is unknown'),
                ('maintenance', {'maintenance': True}, 'in maintenance'),
                ('retired', {'retired': True}, 'retired'),
                ('instance_uuid', {'instance_uuid': 'i-1'},
                 'has instance i-1'),
                ('stale', {'stale_since': since},
                 'released or refused by Ironic since %s; waiting for a '
                 'sync to read it again' % since),
                ('reserved', {'reserved': True}, 'has a live reservation')):
            node = dataclasses.replace(fakes.FakeNode(uuid='u'), **changes)
            self.assertEqual((name, filters.Miss(detail)), filters.first_miss(
                None, node, filters.MatchContext()))


class TestSQLFollows(base.BaseTestCase):

    def test_every_request_criterion_has_a_shape_sql_builds(self):
        for criterion in filters.REQUEST:
            self.assertIsInstance(criterion.sql, eligibility.SQLShape,
                                  criterion.name)
        self.assertEqual(set(eligibility.SQLShape.__subclasses__()),
                         set(matching.SHAPE_CLAUSES))

    def test_shapes_name_the_nodes_columns(self):
        for criterion in filters.REQUEST:
            for value in dataclasses.astuple(criterion.sql):
                for column in (value if isinstance(value, tuple)
                               else (value,)):
                    if isinstance(column, str):
                        self.assertTrue(hasattr(models.Node, column),
                                        criterion.name)

    def test_eligible_clauses_are_the_declared_criteria(self):
        self.assertEqual(
            [criterion.name for criterion in eligibility.CRITERIA],
            [name for name, _clause in matching.eligible_clauses()])

    def test_free_clauses_leave_out_only_the_reservation(self):
        self.assertEqual(len(matching.eligible_clauses()) - 1,
                         len(matching.free_clauses()))

    def test_every_request_clause_is_a_declared_request_criterion(self):
        order = [criterion.name for criterion in filters.CRITERIA]
        for spec, context in EVERY_REQUEST:
            node_filter = _node_filter(spec, context)
            names = [name.partition(':')[0] for name, _clause
                     in matching.filter_clauses(node_filter)]
            # In the matcher's order, as tally counts first misses.
            self.assertEqual(sorted(names, key=order.index), names)
            self.assertEqual(
                [criterion.name for criterion in eligibility.CRITERIA]
                + [name for name, _shape, _asked in node_filter.asked],
                list(dict.fromkeys(names)))

    def test_only_capabilities_are_narrowed_but_not_decided(self):
        self.assertEqual(['capabilities'], [
            criterion.name for criterion in filters.REQUEST
            if not criterion.sql.exact])
        for spec, context in EVERY_REQUEST:
            node_filter = _node_filter(spec, context)
            self.assertEqual(['capabilities'], list(dict.fromkeys(
                name.partition(':')[0]
                for name, _clause in matching.filter_clauses(node_filter)
                if not node_filter.decides(name))))

    def test_a_template_binds_what_the_literal_clauses_compare_with(self):
        for spec, context in EVERY_REQUEST:
            node_filter = _node_filter(spec, context)
            template, params = matching._parameterized(node_filter)
            literal = sa.and_(*[clause for _name, clause in
                                matching._request_clauses(
                                    node_filter, matching._literal)])
            bound = sa.and_(*[clause for _name, clause in
                              matching._request_clauses(
                                  template, _binding(params))])
            self.assertEqual(_rendered(literal), _rendered(bound))

    def test_requests_asking_alike_share_a_template(self):
        spec, context = EVERY_REQUEST[0]
        other = dataclasses.replace(
            spec, resource_class='CUSTOM_SILVER', memory_mb=2048,
            required_traits=frozenset({'CUSTOM_C'}))
        self.assertEqual(
            matching._parameterized(_node_filter(spec, context))[0],
            matching._parameterized(_node_filter(other, context))[0])

    def test_the_stored_flag_is_the_declared_criteria(self):
        clauses = [str(clause) for clause in db_nodes._schedulable_clauses()]
        eligible = {name: str(clause)
                    for name, clause in matching.eligible_clauses()}
        self.assertEqual(
            [eligible[name] for name in eligibility.STORED_FLAG], clauses)
        self.assertEqual('vanished', eligibility.STORED_FLAG[0])
        self.assertEqual(len(clauses) - 1, len(
            db_nodes._schedulable_clauses(but=('stale',))))


def _binding(params):
    """A template's ``value``: its parameter, bound to its value."""
    def value(name, encode=None, expanding=False):
        return sa.bindparam(name, params[name], expanding=expanding)
    return value


def _rendered(clause):
    return str(clause.compile(compile_kwargs={'literal_binds': True}))


class TestIronicFollows(base.BaseTestCase):

    def _normalized(self, **changes):
        return dict(test_file.EXPECTED, **dict({'instance_uuid': 'i-1'},
                                               **changes))

    def test_an_answer_passing_every_rule_is_usable(self):
        self.assertIsNone(ironic._unusable(self._normalized(), 'i-1'))

    def test_another_instance_is_named_first(self):
        self.assertEqual('claimed by instance i-2', ironic._unusable(
            self._normalized(instance_uuid='i-2', maintenance=True),
            'i-1'))

    def test_every_rechecked_rule_refuses_as_the_matcher_would(self):
        node_record = fakes.FakeNode(uuid='u')
        for rule in eligibility.AFTER_CLAIM:
            failing = next(value for value in (None, True, 'manageable')
                           if not eligibility.passes(rule)(value))
            reason = ironic._unusable(
                self._normalized(**{rule.field: failing}), 'i-1')
            self.assertEqual(eligibility.worded(
                rule.claim_miss or rule.miss, failing), reason)
            self.assertIsNotNone(filters.first_miss(
                None, dataclasses.replace(node_record,
                                          **{rule.field: failing}),
                filters.MatchContext()))
