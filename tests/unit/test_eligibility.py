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

"""common/eligibility.py is complete and consistent, and every place
that decides eligibility follows it: the matcher's checks and phrases,
the SQL clauses, the stored flag, Ironic's re-check after a claim.
(tests/functional/db/test_eligibility_parity.py compares Python and SQL
on the real databases.)"""

import dataclasses
import datetime

from oslotest import base

from reserveapi.common import eligibility
from reserveapi.common import node_fields
from reserveapi.db import matching
from reserveapi.db import models
from reserveapi.db import nodes as db_nodes
from reserveapi.db import records
from reserveapi.inventory import ironic
from reserveapi.matcher import filters
from tests.unit.inventory import test_file
from tests.unit.matcher import fakes

TESTS = (eligibility.EQUALS, eligibility.IS_SET, eligibility.IS_UNSET,
         eligibility.FALSE)
# Everything a NodeFilter can ask, both ways a size can be asked.
EVERY_REQUEST = [
    matching.NodeFilter(
        resource_class='CUSTOM_GOLD', cpu_arch='x86_64', min_memory_mb=1,
        min_cpus=1, min_local_gb=1,
        required_traits=frozenset({'CUSTOM_A'}),
        forbidden_traits=frozenset({'CUSTOM_B'}),
        capability_in=(('boot_mode', ('uefi',)),),
        capability_true=('secure_boot',), project_id='p1',
        candidates=frozenset({'node-1'}), conductor_group='', shard='s1'),
    matching.NodeFilter(exact_memory_mb=1, exact_cpus=1,
                        conductor_group='east'),
]


def _criterion(name):
    return eligibility.BY_NAME[name]


class TestDeclaration(base.BaseTestCase):

    def test_names_are_unique(self):
        names = [criterion.name for criterion in eligibility.CRITERIA]
        self.assertEqual(len(names), len(set(names)))
        self.assertEqual(set(names), set(eligibility.BY_NAME))

    def test_every_criterion_is_described_and_phrased(self):
        for criterion in eligibility.CRITERIA:
            self.assertTrue(criterion.description, criterion.name)
            self.assertTrue(criterion.phrase, criterion.name)

    def test_node_criteria_and_only_they_have_rules(self):
        kinds = (eligibility.NODE, eligibility.RESERVATION,
                 eligibility.REQUEST)
        record_fields = {field.name
                         for field in dataclasses.fields(records.NodeRecord)}
        for criterion in eligibility.CRITERIA:
            self.assertIn(criterion.sql, kinds, criterion.name)
            rule = criterion.rule
            self.assertEqual(criterion.sql == eligibility.NODE,
                             rule is not None, criterion.name)
            if rule is not None:
                self.assertIn(rule.test, TESTS, criterion.name)
                self.assertIn(rule.field, record_fields, criterion.name)
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

    def test_only_what_sql_narrows_is_inexact(self):
        self.assertEqual(
            ['capabilities'], [criterion.name
                               for criterion in eligibility.CRITERIA
                               if not criterion.sql_exact])

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

    def test_criteria_are_the_declared_in_order(self):
        self.assertEqual(
            [(criterion.name, criterion.description)
             for criterion in eligibility.CRITERIA],
            [(criterion.name, criterion.description)
             for criterion in filters.CRITERIA])

    def test_node_rules_word_a_miss_as_the_checks_always_did(self):
        since = datetime.datetime(2024, 5, 1, 12, 0)
        for name, changes, detail in (
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
                 'sync to read it again' % since)):
            node = dataclasses.replace(fakes.FakeNode(uuid='u'), **changes)
            self.assertEqual((name, filters.Miss(detail)), filters.first_miss(
                None, node, filters.MatchContext()))

    def test_a_criterion_without_a_check_fails_loudly(self):
        checks = dict(filters._CHECKS)
        del checks['owner']
        error = self.assertRaises(ValueError, filters.criteria,
                                  eligibility.CRITERIA, checks)
        self.assertIn('no check: owner', str(error))

    def test_a_check_without_a_criterion_fails_loudly(self):
        checks = dict(filters._CHECKS, on_fire=filters._reserved)
        error = self.assertRaises(ValueError, filters.criteria,
                                  eligibility.CRITERIA, checks)
        self.assertIn('no criterion declared: on_fire', str(error))

    def test_a_rule_with_a_check_of_its_own_fails_loudly(self):
        checks = dict(filters._CHECKS, maintenance=filters._reserved)
        error = self.assertRaises(ValueError, filters.criteria,
                                  eligibility.CRITERIA, checks)
        self.assertIn('a rule and a check: maintenance', str(error))


class TestSQLFollows(base.BaseTestCase):

    def test_eligible_clauses_are_the_node_and_reservation_criteria(self):
        self.assertEqual(
            [criterion.name for criterion in eligibility.CRITERIA
             if criterion.sql in (eligibility.NODE, eligibility.RESERVATION)],
            [name for name, _clause in matching.eligible_clauses()])

    def test_free_clauses_leave_out_only_the_reservation(self):
        self.assertEqual(len(matching.eligible_clauses()) - 1,
                         len(matching.free_clauses()))

    def test_every_request_clause_is_a_declared_request_criterion(self):
        asked = set()
        for node_filter in EVERY_REQUEST:
            clauses = matching.filter_clauses(node_filter)
            names = [name.partition(':')[0] for name, _clause in clauses]
            for name in names:
                self.assertIn(name, eligibility.BY_NAME)
            # In the matcher's order, as tally counts first misses.
            order = [list(eligibility.BY_NAME).index(name) for name in names]
            self.assertEqual(sorted(order), order)
            asked.update(name.partition(':')[0] for name, _clause
                         in matching._request_clauses(node_filter,
                                                      matching._literal))
        request = {criterion.name for criterion in eligibility.CRITERIA
                   if criterion.sql == eligibility.REQUEST}
        # Each one SQL narrows, and nothing else.
        self.assertEqual(request, asked)

    def test_the_stored_flag_is_the_declared_criteria_and_not_vanished(self):
        clauses = [str(clause) for clause in db_nodes._schedulable_clauses()]
        eligible = {name: str(clause)
                    for name, clause in matching.eligible_clauses()}
        self.assertEqual(
            [str(models.Node.vanished.is_(False))] + [
                eligible[name] for name in eligibility.STORED_FLAG],
            clauses)
        self.assertEqual(len(clauses) - 1, len(
            db_nodes._schedulable_clauses(but=('stale',))))


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
