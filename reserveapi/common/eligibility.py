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
SQL to narrow by, its values as ``Param``, and the shape of its SQL as
data, one of the shapes below (over the node's columns), which
``db/matching.py`` turns into clauses as ``db/models.passing`` does a
NodeRule.
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


class SQLShape:
    """How SQL narrows by a request criterion, over the node's columns:
    each shape is frozen data, and db/matching.py has one builder per
    shape type. ``exact``: its clauses decide the criterion; otherwise
    they only narrow by it, and the Python check decides."""

    exact = True


@dataclasses.dataclass(frozen=True)
class AnyColumnIn(SQLShape):
    """One of ``columns`` is among the values asked: one Param holding
    them all (none matches no node)."""

    columns: tuple


@dataclasses.dataclass(frozen=True)
class InPartition(SQLShape):
    """Asked ``(conductor group, shard)``, each None when not asked:
    the node's ``group`` and ``shard`` columns equal them. Ironic's
    default group, '', is stored as NULL: asked as '' itself, not as a
    Param."""

    group: str
    shard: str


@dataclasses.dataclass(frozen=True)
class UsableBy(SQLShape):
    """Ironic's allocation rule: the node has neither ``owner`` nor
    ``lessee`` set, or the project asked is one of them."""

    owner: str
    lessee: str


@dataclasses.dataclass(frozen=True)
class Equals(SQLShape):
    """The node's ``column`` equals the value asked."""

    column: str


@dataclasses.dataclass(frozen=True)
class AtLeastOrExactly(SQLShape):
    """Asked ``(need, exact)``: the node's ``column`` is at least the
    need, or exactly it when ``exact`` is True."""

    column: str


@dataclasses.dataclass(frozen=True)
class ItemsInText(SQLShape):
    """Every value asked is an item of the node's text ``column`` (see
    db/node_texts.py) or, unless ``present``, none is."""

    column: str
    present: bool


@dataclasses.dataclass(frozen=True)
class KeyValuesInText(SQLShape):
    """Asked ``(((key, values), ...), keys)``: each key has one of its
    values in the node's key:value text ``column`` (see
    db/node_texts.py), and each of the bare keys is true in any case in
    the node's capabilities table, which a pattern cannot express."""

    column: str
    # What else a capability can ask (ranges, sub-strings ...) is left
    # to the Python check.
    exact = False


PARTITION = InPartition('conductor_group', 'shard')
"""Ironic's partitions: what the matcher asks, and what db/ counts
capacity in."""
USABLE_BY = UsableBy('owner', 'lessee')
"""What a project may use: what the matcher asks, and what db/ counts
a project's capacity over."""


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
