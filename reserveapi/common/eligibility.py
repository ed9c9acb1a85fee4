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

"""What makes a node eligible for, and a match of, a request: every
criterion declared once, in the order the matcher checks them.

Everything else follows from this table: the matcher's Python checks
(``matcher/filters.py``), the words of a refusal
(``matcher/selection.py``), the SQL that narrows and counts
(``db/matching.py``), the stored ``schedulable`` flag that leads the
best-fit index and that the capacity counters count from
(``db/nodes.py``), and the re-check of Ironic's answer to a claim
(``inventory/ironic.py``).

Where SQL decides a criterion (``sql``):

``NODE``
  a rule over the node's own row; its SQL clause and its Python check
  are both derived from the row's ``rule``.
``RESERVATION``
  whether the node has a live reservation.
``REQUEST``
  what the request asks, narrowed in SQL from its ``NodeFilter`` when
  it asks it; the Python check is the matcher's own.

No criterion is left to Python alone, and SQL decides every one exactly
but ``capabilities``, which it only narrows (``sql_exact`` false): there
the matcher's Python check decides.
"""

import operator
import typing

from reserveapi.common import states

NODE = 'node'
RESERVATION = 'reservation'
REQUEST = 'request'

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
    eliminated (``%s`` the trait or capability); ``stored_flag``, that
    it is part of the stored ``schedulable`` flag, and so of the
    capacity counters; ``after_claim``, that Ironic's answer to a claim
    is checked against it again.
    """

    name: str
    description: str
    phrase: str
    sql: str
    rule: NodeRule | None = None
    sql_exact: bool = True
    stored_flag: bool = False
    after_claim: bool = False


CRITERIA = (
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
    # change keeps.
    Criterion('reserved', 'no live reservation', 'reserved', RESERVATION),
    Criterion('candidate_nodes', 'uuid or name in candidate_nodes, when '
                                 'given',
              'not in candidate_nodes', REQUEST),
    Criterion('partition', 'in the conductor group and shard requested, '
                           'when given',
              'in another partition', REQUEST),
    Criterion('owner', "owner or lessee is the request's project, when "
                       "either is set",
              "not the project's", REQUEST),
    Criterion('resource_class', 'normalized resource class is the '
                                'requested custom class',
              'wrong resource class', REQUEST),
    Criterion('cpu_arch', "canonical cpu_arch is the image's",
              'wrong cpu_arch', REQUEST),
    Criterion('memory_mb', 'enough memory (exactly, with exact_match)',
              'wrong memory size', REQUEST),
    Criterion('cpus', 'enough cpus (exactly, with exact_match)',
              'wrong cpu count', REQUEST),
    Criterion('local_gb', 'local_gb >= root + ephemeral + swap',
              'too little disk', REQUEST),
    Criterion('required_traits', 'has every required trait',
              'lack trait %s', REQUEST),
    Criterion('forbidden_traits', 'has no forbidden trait',
              'have forbidden trait %s', REQUEST),
    # SQL narrows by exact values (plain, s==, <or>) and by the bare
    # names of the legacy list (true in any case); the other operators,
    # and the cpu_arch capability read from the node's column, only
    # Python decides.
    Criterion('capabilities', 'capabilities satisfy every capability '
                              'requirement',
              'fail capability %s', REQUEST, sql_exact=False),
)
BY_NAME = {criterion.name: criterion for criterion in CRITERIA}
STORED_FLAG = tuple(criterion.name for criterion in CRITERIA
                    if criterion.stored_flag)
"""The criteria the stored ``schedulable`` flag stands for, with the
node not vanished."""
AFTER_CLAIM = tuple(criterion.rule for criterion in CRITERIA
                    if criterion.after_claim)
"""The rules Ironic's answer to a claim must pass, in this order."""


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
