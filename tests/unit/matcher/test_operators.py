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

import testtools

from reserveapi.common import exception
from reserveapi.matcher import operators


def _matches(text, node_value, key='boot_mode'):
    return operators.parse_requirement(key, text).matches(node_value)


class TestNovaSemantics(testtools.TestCase):
    """The table in prior-art.md section c.1, case by case."""

    def _check(self, cases):
        for text, node_value, expected in cases:
            self.assertEqual(
                expected, _matches(text, node_value),
                'requirement %r against node value %r' % (text, node_value))

    def test_no_operator_is_whole_string_equality(self):
        self._check([
            ('uefi', 'uefi', True),
            ('uefi', 'UEFI', False),
            ('4', '4.0', False),
            ('4.0', '4', False),
            ('two words', 'two words', True),
            ('two words', 'two', False),
        ])

    def test_equality_ignores_surrounding_whitespace(self):
        self.assertTrue(_matches('  uefi ', 'uefi'))

    def test_equals_sign_means_at_least(self):
        self._check([
            ('= 4', '8', True),
            ('= 4', '4', True),
            ('= 4', '4.0', True),
            ('= 4', '3', False),
            ('= 4.5', '4', False),
            ('= 4', 8, True),
        ])

    def test_numeric_comparisons(self):
        self._check([
            ('== 4.0', '4', True),
            ('== 4', '5', False),
            ('!= 4', '5', True),
            ('!= 4', '4.0', False),
            ('>= 4', '4', True),
            ('>= 4', '3.9', False),
            ('<= 4', '4', True),
            ('<= 4', '4.1', False),
            ('>= -1', '0', True),
        ])

    def test_numeric_operator_on_non_numeric_value_is_no_match(self):
        for op in ('=', '==', '!=', '>=', '<='):
            for node_value in ('abc', '', 'nan', 'inf', '4 GiB'):
                self.assertFalse(
                    _matches('%s 4' % op, node_value),
                    '%s 4 against %r' % (op, node_value))

    def test_string_comparisons(self):
        self._check([
            ('s== abc', 'abc', True),
            ('s== abc', 'ABC', False),
            ('s!= abc', 'abd', True),
            ('s!= abc', 'abc', False),
            ('s< b', 'a', True),
            ('s< b', 'b', False),
            ('s<= b', 'b', True),
            ('s> a', 'b', True),
            ('s> b', 'b', False),
            ('s>= b', 'b', True),
            ('s>= b', 'a', False),
        ])

    def test_string_comparison_is_lexicographic(self):
        self.assertFalse(_matches('s> 2.9', '2.10'))
        self.assertTrue(_matches('s< 2.9', '2.10'))

    def test_string_operator_compares_numbers_as_text(self):
        self.assertFalse(_matches('s== 4', '4.0'))

    def test_in_is_substring(self):
        self._check([
            ('<in> uefi', 'uefi', True),
            ('<in> uefi', 'bios,uefi', True),
            ('<in> efi', 'uefi', True),
            ('<in> uefi', 'bios', False),
        ])

    def test_all_in_needs_every_word_as_substring(self):
        self._check([
            ('<all-in> aes mmx', 'mmxaes', True),
            ('<all-in> aes mmx', 'aes,mmx,sse', True),
            ('<all-in> aes mmx', 'aes', False),
            ('<all-in> aes', 'aes', True),
        ])

    def test_or_matches_any_alternative_exactly(self):
        self._check([
            ('<or> uefi <or> bios', 'uefi', True),
            ('<or> uefi <or> bios', 'bios', True),
            ('<or> uefi <or> bios', 'legacy', False),
            ('<or> uefi <or> bios', 'uefi bios', False),
            ('<or> uefi', 'uefi', True),
            ('<or> a <or> b <or> c', 'c', True),
        ])

    def test_missing_node_value_never_matches(self):
        for text in ('uefi', '= 1', '!= 1', 's!= a', '<in> a',
                     '<all-in> a', '<or> a <or> b'):
            self.assertFalse(_matches(text, None), text)

    def test_boolean_node_value_is_lower_case_text(self):
        self.assertTrue(_matches('true', True))
        self.assertTrue(_matches('false', False))
        self.assertFalse(_matches('True', True))


class TestParseRequirementRejects(testtools.TestCase):
    """Where Nova silently never matches, the flavor gets a 400."""

    def _assert_invalid(self, text, fragment=None):
        error = self.assertRaises(exception.InvalidRequestSpec,
                                  operators.parse_requirement,
                                  'boot_mode', text)
        self.assertEqual('extra_specs.capabilities:boot_mode', error.key)
        self.assertEqual(400, error.status)
        if fragment:
            self.assertIn(fragment, error.detail)
        return error

    def test_greater_and_less_are_not_operators(self):
        for text in ('> 4', '< 4', '>', '<'):
            error = self._assert_invalid(text, 'is not an operator')
            self.assertIn('>= / <=', error.detail)

    def test_operator_without_operand(self):
        for op in ('=', '==', '!=', '>=', '<=', 's==', 's!=', 's<', 's<=',
                   's>', 's>=', '<in>', '<all-in>'):
            self._assert_invalid(op, 'needs an operand')
            self._assert_invalid('  %s  ' % op, 'needs an operand')

    def test_bare_or(self):
        self._assert_invalid('<or>', 'at least one alternative')

    def test_or_alternatives_not_separated(self):
        self._assert_invalid('<or> a b', "separated by '<or>'")
        self._assert_invalid('<or> a <or> b c', "separated by '<or>'")

    def test_or_with_empty_alternative(self):
        for text in ('<or> a <or>', '<or> <or> a', '<or> a <or> <or> b'):
            self._assert_invalid(text, 'empty alternative')

    def test_or_without_leading_operator(self):
        self._assert_invalid('uefi <or> bios', "follow '<or>'")

    def test_extra_operand_words(self):
        for text in ('s== abc def', '<in> uefi bios', '= 4 8', '>= 1 2'):
            self._assert_invalid(text, 'takes one operand')

    def test_numeric_operator_needs_numeric_operand(self):
        for text in ('= abc', '== 4GB', '>= nan', '<= inf', '!= x'):
            self._assert_invalid(text, 'needs a number')

    def test_operator_glued_to_operand(self):
        for text in ('>=4', '<in>uefi', 's==abc', '<or>a'):
            self._assert_invalid(text, 'put a space')

    def test_empty_requirement(self):
        for text in ('', '   '):
            self._assert_invalid(text, 'can never match')

    def test_non_string_requirement(self):
        self._assert_invalid(4, 'must be a string')

    def test_spec_key_names_the_field(self):
        error = self.assertRaises(exception.InvalidRequestSpec,
                                  operators.parse_requirement,
                                  'cpu_arch', '> 1', 'extra_specs.cpu_arch')
        self.assertEqual('extra_specs.cpu_arch', error.key)


class TestParseRequirementAccepts(testtools.TestCase):

    def test_exposes_key_and_text(self):
        requirement = operators.parse_requirement('boot_mode', ' s== uefi ')
        self.assertEqual('boot_mode', requirement.key)
        self.assertEqual('s== uefi', requirement.text)
        self.assertEqual('s==', requirement.op)
        self.assertEqual(('uefi',), requirement.operands)

    def test_equality_has_no_operator(self):
        requirement = operators.parse_requirement('boot_mode', 'uefi')
        self.assertIsNone(requirement.op)
        self.assertEqual('uefi', requirement.text)

    def test_all_in_takes_many_words(self):
        requirement = operators.parse_requirement('cpu_flags',
                                                  '<all-in> aes mmx sse')
        self.assertEqual(('aes', 'mmx', 'sse'), requirement.operands)

    def test_or_keeps_only_alternatives(self):
        requirement = operators.parse_requirement('boot_mode',
                                                  '<or> uefi <or> bios')
        self.assertEqual(('uefi', 'bios'), requirement.operands)

    def test_value_merely_containing_operator_characters(self):
        self.assertTrue(_matches('a>b', 'a>b'))
        self.assertTrue(_matches('x = y', 'x = y'))

    def test_requirements_are_hashable_values(self):
        self.assertEqual(operators.parse_requirement('k', '= 4'),
                         operators.parse_requirement('k', '= 4'))
        self.assertEqual(1, len({operators.parse_requirement('k', 'v'),
                                 operators.parse_requirement('k', 'v')}))


class TestInternalRequirements(testtools.TestCase):

    def test_any_case_true(self):
        requirement = operators.any_case_true('has_gpu')
        self.assertEqual('has_gpu', requirement.key)
        for value in ('true', 'True', 'TRUE', True):
            self.assertTrue(requirement.matches(value), value)
        for value in ('false', 'yes', '1', '', None, False):
            self.assertFalse(requirement.matches(value), value)

    def test_any_case_true_cannot_be_typed(self):
        requirement = operators.parse_requirement('has_gpu',
                                                  operators.ANY_CASE_TRUE)
        self.assertIsNone(requirement.op)
        self.assertFalse(requirement.matches('TRUE'))

    def test_equals(self):
        requirement = operators.equals('boot_mode', 'uefi')
        self.assertTrue(requirement.matches('uefi'))
        self.assertFalse(requirement.matches('UEFI'))


class TestHelpers(testtools.TestCase):

    def test_as_text(self):
        self.assertEqual('true', operators.as_text(True))
        self.assertEqual('false', operators.as_text(False))
        self.assertEqual('8', operators.as_text(8))
        self.assertEqual('uefi', operators.as_text('uefi'))

    def test_as_number(self):
        self.assertEqual(4.0, operators.as_number('4'))
        self.assertEqual(-1.5, operators.as_number(' -1.5 '))
        for text in ('abc', '', None, 'nan', 'inf', '-inf', '1e999'):
            self.assertIsNone(operators.as_number(text), text)
