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

"""What makes a node eligible for a request: every criterion of the
node's own state declared once, in the order the matcher checks them,
before what the request asks.

Everything else follows from this table: the matcher's Python checks
(``matcher/filters.py``), the words of a refusal
(``matcher/selection.py``), the SQL that narrows and counts
(``db/matching.py``), the stored ``schedulable`` flag that leads the
best-fit index and that the capacity counters count from
(``db/nodes.py``), the re-check in a reservation's INSERT
(``db/reservations.py``) and the re-check of Ironic's answer to a
claim (``inventory/ironic.py``).

Where SQL decides a criterion (``sql``):

``NODE``
  the row's ``rule`` over the node's own row.
``RESERVATION``
  whether the node has a live reservation.

The Python check of each is derived from its ``rule``.

What a request asks (its resource class, traits, capabilities ...) is
declared beside the matcher's checks, in ``matcher/filters.py``: only
the matcher reads a request spec. Each such criterion says what it asks
SQL to narrow by, its values as ``Param``; ``db/matching.py`` holds its
clause under the same name.
"""

import dataclasses
import operator
import typing

from reserveapi.common import states

NODE = 'node'
RESERVATION = 'reservation'

# How a NodeRule tests its field. Unset is None, or '' where the
# inventory gives an empty text (it stores it as NULL).
EQUALS = 'equals'
IS_SET = 'is set'
IS_UNSET = 'is unset'
FALSE = 'false'


class NodeRule(typing.NamedTuple):
    """A node-state rule: the node's ``field`` passes ``test`` (against
    ``value``, for EQUALS). ``miss`` says why a node fails it, ``%s``
    standing for the node's value; ``claim_miss``, where a refused
    claim has always worded it otherwise.
    """

    field: str
    test: str
    miss: str
    value: object = None
    claim_miss: str | None = None


class Criterion(typing.NamedTuple):
    """One criterion: ``phrase`` is how a refusal counts the nodes it
    eliminated; ``stored_flag``, that it is part of the stored
    ``schedulable`` flag, and so of the capacity counters;
    ``after_claim``, that Ironic's answer to a claim is checked against
    it again; ``universe``, that every count (a refusal's total, the
    capacity) is over the nodes passing it, a node failing it counted
    nowhere rather than as eliminated.
    """

    name: str
    description: str
    phrase: str
    sql: str
    rule: NodeRule
    stored_flag: bool = False
    after_claim: bool = False
    universe: bool = False


CRITERIA = (
    Criterion('vanished', 'still in the inventory',
              'vanished from the inventory', NODE,
              NodeRule('vanished', FALSE, 'vanished from the inventory'),
              stored_flag=True, universe=True),
    Criterion('provision_state', "provision_state is 'available'",
              'not available', NODE,
              NodeRule('provision_state', EQUALS, 'provision state is %s',
                       states.AVAILABLE),
              stored_flag=True, after_claim=True),
    Criterion('power_state', 'power_state is known',
              'in an unknown power state', NODE,
              NodeRule('power_state', IS_SET, 'power state is unknown',
                       claim_miss='power state unknown'),
              stored_flag=True, after_claim=True),
    Criterion('maintenance', 'not in maintenance', 'in maintenance', NODE,
              NodeRule('maintenance', FALSE, 'in maintenance'),
              stored_flag=True, after_claim=True),
    Criterion('retired', 'not retired', 'retired', NODE,
              NodeRule('retired', FALSE, 'retired'),
              stored_flag=True, after_claim=True),
    # After a claim the instance is ours: inventory/ironic.py compares it
    # with the claiming instance first.
    Criterion('instance_uuid', 'no instance_uuid', 'with an instance', NODE,
              NodeRule('instance_uuid', IS_UNSET, 'has instance %s'),
              stored_flag=True),
    Criterion('stale', 'read again by a sync since it was released or '
                       'refused by Ironic',
              'released or refused by Ironic, not read again yet', NODE,
              NodeRule('stale_since', IS_UNSET,
                       'released or refused by Ironic since %s; waiting '
                       'for a sync to read it again'),
              stored_flag=True),
    # Stored as a flag of its own, ``reserved``, which every reservation
    # change keeps; SQL that decides eligibility reads the reservation.
    Criterion('reserved', 'no live reservation', 'reserved', RESERVATION,
              NodeRule('reserved', FALSE, 'has a live reservation')),
)
BY_NAME = {criterion.name: criterion for criterion in CRITERIA}
STORED_FLAG = tuple(criterion.name for criterion in CRITERIA
                    if criterion.stored_flag)
"""The criteria the stored ``schedulable`` flag stands for."""
AFTER_CLAIM = tuple(criterion.rule for criterion in CRITERIA
                    if criterion.after_claim)
"""The rules Ironic's answer to a claim must pass, in this order."""
UNIVERSE = tuple(criterion for criterion in CRITERIA if criterion.universe)
"""The criteria of a node still in the inventory: what every count is
over."""


@dataclasses.dataclass(frozen=True)
class Param:
    """A value a request asks of SQL, which binds it as a parameter: two
    requests that ask alike but for their Params share one statement.
    What surrounds it in what a criterion asks (how many values, exact
    or at least) is the statement's shape."""

    value: object


def passes(rule):
    """``rule``'s test, as a function of a node's value of its field:
    True when the node passes. Built once per rule: the matcher runs it
    on every candidate."""
    if rule.test == EQUALS:
        expected = rule.value
        return lambda value: value == expected
    if rule.test == FALSE:
        return operator.not_
    if rule.test == IS_UNSET:
        return _unset
    return lambda value: not _unset(value)


def _unset(value):
    return value is None or value == ''


def worded(text, item):
    """``text`` with ``item`` for its ``%s``, if it has one."""
    return text % (item,) if '%s' in text else text
