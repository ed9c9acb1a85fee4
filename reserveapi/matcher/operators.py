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

"""Nova's extra-spec operator language, with its silent traps made loud.

Evaluation follows ``nova/scheduler/filters/extra_specs_ops.py`` for every
requirement Nova can ever match.  Where Nova silently never matches (or
raises), :func:`parse_requirement` raises ``InvalidRequestSpec`` instead, so
the flavor author gets a 400 naming the key rather than "no valid node".
"""

import dataclasses
import math
import operator

from reserveapi.common import exception

OR = '<or>'
ALL_IN = '<all-in>'
# Internal: the legacy ``capabilities: "name,..."`` list needs "true" in any
# case, which the public grammar cannot express.  Never parsed from text.
ANY_CASE_TRUE = 'true (any case)'


def as_text(value):
    """Render a node value the way requirements see it.

    Nova compares ``str(value)``; booleans are lower-cased so that a JSON
    ``true`` capability equals the ``"true"`` Ironic stores in its strings.
    """
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return str(value)


def as_number(text):
    """The finite float in ``text``, or None when it is not one."""
    try:
        number = float(text)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _numeric(compare):
    def method(node_text, operand):
        number = as_number(node_text)
        return number is not None and compare(number, float(operand))
    return method


# Operators taking exactly one operand word.  Note "=" means "at least", as
# in Nova: "= 4" matches a node value of 8.
_SINGLE_OPERAND = {
    '=': _numeric(operator.ge),
    '==': _numeric(operator.eq),
    '!=': _numeric(operator.ne),
    '>=': _numeric(operator.ge),
    '<=': _numeric(operator.le),
    's==': operator.eq,
    's!=': operator.ne,
    's<': operator.lt,
    's<=': operator.le,
    's>': operator.gt,
    's>=': operator.ge,
    '<in>': lambda node_text, operand: operand in node_text,
}
_NUMERIC = frozenset(('=', '==', '!=', '>=', '<='))
OPERATORS = frozenset(_SINGLE_OPERAND) | {ALL_IN, OR}
# Nova reads ">=4" or "<in>uefi" as a literal value that no node has; such a
# first word is a missing space, not a value anyone means.
_GLUED_PREFIXES = tuple(sorted(op for op in OPERATORS if len(op) > 1))


@dataclasses.dataclass(frozen=True)
class Requirement:
    """One capability requirement: ``key`` must satisfy ``text``.

    ``key`` is the capability name looked up on the node; ``op`` is None
    for Nova's whole-string equality.
    """

    key: str
    text: str
    op: str | None = None
    operands: tuple[str, ...] = ()

    def matches(self, node_value):
        """Whether a node's value satisfies this requirement; never raises.

        A missing value never matches, and neither does a numeric operator
        against a value that is not a number.
        """
        if node_value is None:
            return False
        node_text = as_text(node_value)
        if self.op is None:
            return node_text == self.text
        if self.op == OR:
            return node_text in self.operands
        if self.op == ALL_IN:
            return all(word in node_text for word in self.operands)
        if self.op == ANY_CASE_TRUE:
            return node_text.lower() == 'true'
        return _SINGLE_OPERAND[self.op](node_text, self.operands[0])


def equals(key, value):
    """A plain equality requirement (legacy ``k:v`` list items)."""
    return Requirement(key=key, text=value)


def any_case_true(key):
    """The legacy bare-name requirement: the capability is ``true``."""
    return Requirement(key=key, text=ANY_CASE_TRUE, op=ANY_CASE_TRUE)


def parse_requirement(key, text, spec_key=None):
    """Parse ``text`` into a :class:`Requirement` on capability ``key``.

    ``spec_key`` names the request field in errors; it defaults to
    ``extra_specs.capabilities:<key>``.  Stricter than Nova on purpose,
    each of these is a 400: ``>`` or ``<`` as an operator, an operator
    glued to its operand or with none, a malformed ``<or>``, and extra
    operand words after a single-operand operator.  Nova silently never
    matches the former and ignores the extra words (``s== a b`` is
    ``s== a`` there).  Surrounding whitespace is stripped because node
    capability values are stripped too.
    """
    spec_key = spec_key or 'extra_specs.capabilities:%s' % key

    def invalid(reason):
        return exception.InvalidRequestSpec(key=spec_key, reason=reason)

    if not isinstance(text, str):
        raise invalid('the requirement must be a string')
    words = text.split()
    if not words:
        raise invalid('an empty requirement can never match')
    op, operands = words[0], tuple(words[1:])
    if op in ('>', '<'):
        raise invalid("'%s' is not an operator (Nova compares the whole "
                      "string and never matches): use >= / <= for numbers "
                      "or s%s for strings" % (op, op))
    if op == OR:
        return Requirement(key, text.strip(), OR, _alternatives(operands,
                                                                invalid))
    if op in OPERATORS and not operands:
        raise invalid("operator '%s' needs an operand" % op)
    if op == ALL_IN:
        return Requirement(key, text.strip(), ALL_IN, operands)
    if op in _SINGLE_OPERAND:
        if len(operands) > 1:
            raise invalid("operator '%s' takes one operand, got %d (Nova "
                          "ignores all but the first)" % (op, len(operands)))
        if op in _NUMERIC and as_number(operands[0]) is None:
            raise invalid("operator '%s' needs a number, got '%s'"
                          % (op, operands[0]))
        return Requirement(key, text.strip(), op, operands)
    if op.startswith(_GLUED_PREFIXES):
        raise invalid("'%s' starts with an operator: put a space between "
                      "the operator and its operand" % op)
    if OR in operands:
        raise invalid("alternatives must each follow '<or>': "
                      "'<or> a <or> b'")
    return Requirement(key, text.strip())


def _alternatives(words, invalid):
    """The alternatives of ``<or> a <or> b``, given the words after the
    first ``<or>``.  Nova silently skips a word where a separator belongs.
    """
    if not words:
        raise invalid("'<or>' needs at least one alternative")
    alternatives = []
    expect_alternative = True
    for word in words:
        if expect_alternative and word == OR:
            raise invalid("'<or>' has an empty alternative")
        if not expect_alternative and word != OR:
            raise invalid("alternatives must be separated by '<or>': "
                          "'<or> a <or> b', got '%s'" % word)
        if expect_alternative:
            alternatives.append(word)
        expect_alternative = not expect_alternative
    if expect_alternative:
        raise invalid("'<or>' has an empty alternative")
    return tuple(alternatives)
