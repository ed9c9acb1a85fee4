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

"""Pure predicates deciding whether one node can serve a request spec.

The criteria of the node's own state are declared in
``common/eligibility.py``, each check here generated from its rule. The
criteria of the request are declared here, one row each (REQUEST): its
check, the phrase of a refusal, what it asks SQL to narrow by and the
shape of that SQL (an eligibility.SQLShape, which ``db/matching.py``
builds). These checks decide every candidate.
"""

import dataclasses
import typing

from reserveapi.common import eligibility
from reserveapi.common import validators
from reserveapi.matcher import operators
from reserveapi.matcher import spec as spec_mod


@dataclasses.dataclass(frozen=True)
class MatchContext:
    """Per-request facts that are not part of the spec.

    ``candidate_nodes`` holds node UUIDs or names; None means every node,
    an empty collection means none. ``conductor_group`` and ``shard``
    (nova-compute's own ``[ironic]`` settings) limit matching to that
    Ironic partition; ``''`` is Ironic's default conductor group.  A
    None ``project_id`` (a caller with no project) skips the owner/lessee
    rule, as in Ironic's allocations.
    """

    project_id: str | None = None
    candidate_nodes: frozenset[str] | None = None
    exact_match: bool = False
    conductor_group: str | None = None
    shard: str | None = None

    def __post_init__(self):
        if self.candidate_nodes is not None:
            object.__setattr__(self, 'candidate_nodes',
                               frozenset(self.candidate_nodes))


class Criterion(typing.NamedTuple):
    """One matching rule: ``check(spec, node, context)`` returns a Miss,
    or None if it holds; ``phrase`` is how a refusal counts the nodes it
    eliminated (``%s`` the trait or capability). ``asks(spec, context)``
    is what a request asks SQL to narrow by, None when it asks nothing:
    its values are eligibility.Params, and what surrounds them (tuples,
    '', True or False) is part of the statement's shape; ``sql``, the
    eligibility.SQLShape that says what SQL does with it.
    """

    name: str
    description: str
    phrase: str
    check: typing.Callable
    asks: typing.Callable | None = None
    sql: eligibility.SQLShape | None = None


class Miss(typing.NamedTuple):
    """Why a node failed: ``item`` names the trait or capability, if any."""

    detail: str
    item: str | None = None


def node_capabilities(node):
    """The values capability requirements see: Nova's node ``stats``.

    As in Nova's Ironic driver, ``cpu_arch`` is there too, so the legacy
    unscoped ``cpu_arch`` extra spec works; a capability of the same name
    wins.
    """
    stats = {'cpu_arch': node.cpu_arch} if node.cpu_arch else {}
    stats.update(spec_mod.parse_capabilities(node.capabilities))
    return stats


def _param(value):
    """``value`` as SQL binds it; None asks nothing."""
    return None if value is None else eligibility.Param(value)


def _params(values):
    """``values`` in order, each as SQL binds it; none asks nothing."""
    return tuple(eligibility.Param(value) for value in sorted(values)) or None


def _candidate_nodes(spec, node, context):
    candidates = context.candidate_nodes
    if candidates is not None and not ({node.uuid, node.name} & candidates):
        return Miss('not in candidate_nodes')


def _candidate_nodes_asked(spec, context):
    # One value, a list: an empty one matches no node.
    candidates = context.candidate_nodes
    return (None if candidates is None
            else eligibility.Param(tuple(sorted(candidates))))


def _partition(spec, node, context):
    group, shard = context.conductor_group, context.shard
    if ((group is not None and (node.conductor_group or '') != group)
            or (shard is not None and node.shard != shard)):
        return Miss('in conductor group %r, shard %r'
                    % (node.conductor_group or '', node.shard))


def _partition_asked(spec, context):
    """``(conductor group, shard)``, each None when not asked; Ironic's
    default group, '', is a shape of its own (NULL), not a value."""
    group, shard = context.conductor_group, context.shard
    if group is None and shard is None:
        return None
    return (group if group == '' else _param(group)), _param(shard)


def _owner(spec, node, context):
    """Ironic's allocation rule: with an owner or lessee set, the project
    must be one of them.
    """
    project_id = context.project_id
    if project_id is None or not (node.owner or node.lessee):
        return None
    if project_id not in (node.owner, node.lessee):
        return Miss('owned by or leased to another project')


def _resource_class(spec, node, context):
    if spec.resource_class is None:
        return None
    # Stored as Nova reports it (normalized when the inventory is read).
    if node.resource_class != spec.resource_class:
        return Miss('resource class is %s, needs %s'
                    % (node.resource_class, spec.resource_class))


def _cpu_arch(spec, node, context):
    if spec.cpu_arch is None:
        return None
    try:
        node_arch = spec_mod.canonicalize_arch(node.cpu_arch)
    except ValueError:
        node_arch = None
    if node_arch != spec.cpu_arch:
        return Miss('cpu_arch is %s, the image needs %s'
                    % (node.cpu_arch, spec.cpu_arch))


def _size(label, have, need, exact):
    """Nova's RAM/Core filters, or the old Exact* filters when ``exact``."""
    have = have or 0
    if have == need or (have > need and not exact):
        return None
    return Miss('has %d %s, needs %s%d'
                % (have, label, 'exactly ' if exact else '', need))


def _size_asked(checked, need, exact):
    """``(need, exact)``; a minimum of 0 asks nothing."""
    if not checked or not (need or exact):
        return None
    return eligibility.Param(need), exact


def _memory_mb(spec, node, context):
    if spec.check_memory:
        return _size('MiB memory', node.memory_mb, spec.memory_mb,
                     context.exact_match)


def _cpus(spec, node, context):
    if spec.check_vcpus:
        return _size('cpus', node.cpus, spec.vcpus, context.exact_match)


def _local_gb(spec, node, context):
    if spec.check_disk:
        return _size('GiB disk', node.local_gb, spec.disk_gb, False)


def _required_traits(spec, node, context):
    missing = sorted(spec.required_traits - frozenset(node.traits or ()))
    if missing:
        return Miss('lacks trait %s' % ', '.join(missing), missing[0])


def _forbidden_traits(spec, node, context):
    present = sorted(spec.forbidden_traits & frozenset(node.traits or ()))
    if present:
        return Miss('has forbidden trait %s' % ', '.join(present), present[0])


def _capabilities(spec, node, context):
    if not spec.capabilities:
        return None
    stats = node_capabilities(node)
    for requirement in spec.capabilities:
        value = stats.get(requirement.key)
        if not requirement.matches(value):
            shown = 'unset' if value is None else validators.describe(value)
            return Miss('capability %s is %s, needs %s'
                        % (requirement.key, shown,
                           validators.describe(requirement.text)),
                        requirement.key)


def _capabilities_asked(spec, context):
    """``(((key, values), ...), keys)``: the values a capability must
    equal (plain, s==, <or>), and the bare names of the legacy list
    (true in any case). Only the check decides the other operators, and
    cpu_arch, which it also reads from the node's column."""
    equal, true = [], []
    for requirement in spec.capabilities:
        if requirement.key == 'cpu_arch':
            continue
        if requirement.op is None:
            equal.append((requirement.key, (
                eligibility.Param(requirement.text),)))
        elif requirement.op in (operators.OR, 's=='):
            equal.append((requirement.key, tuple(
                eligibility.Param(value) for value in requirement.operands)))
        elif requirement.op == operators.ANY_CASE_TRUE:
            true.append(eligibility.Param(requirement.key))
    return (tuple(equal), tuple(true)) if equal or true else None


def _rule_check(rule):
    """The check of a node-state rule of the declaration."""
    field, passes = rule.field, eligibility.passes(rule)

    def check(spec, node, context):
        value = getattr(node, field)
        if not passes(value):
            return Miss(eligibility.worded(rule.miss, value))
    return check


REQUEST = (
    Criterion('candidate_nodes',
              'uuid or name in candidate_nodes, when given',
              'not in candidate_nodes', _candidate_nodes,
              _candidate_nodes_asked,
              sql=eligibility.AnyColumnIn(('uuid', 'name'))),
    Criterion('partition',
              'in the conductor group and shard requested, when given',
              'in another partition', _partition, _partition_asked,
              sql=eligibility.PARTITION),
    Criterion('owner',
              "owner or lessee is the request's project, when either is "
              "set",
              "not the project's", _owner,
              lambda spec, context: _param(context.project_id),
              sql=eligibility.USABLE_BY),
    Criterion('resource_class',
              'normalized resource class is the requested custom class',
              'wrong resource class', _resource_class,
              lambda spec, context: _param(spec.resource_class),
              sql=eligibility.Equals('resource_class')),
    # The inventory stores the canonical name: SQL compares it as it is.
    Criterion('cpu_arch', "canonical cpu_arch is the image's",
              'wrong cpu_arch', _cpu_arch,
              lambda spec, context: _param(spec.cpu_arch),
              sql=eligibility.Equals('cpu_arch')),
    Criterion('memory_mb', 'enough memory (exactly, with exact_match)',
              'wrong memory size', _memory_mb,
              lambda spec, context: _size_asked(
                  spec.check_memory, spec.memory_mb, context.exact_match),
              sql=eligibility.AtLeastOrExactly('memory_mb')),
    Criterion('cpus', 'enough cpus (exactly, with exact_match)',
              'wrong cpu count', _cpus,
              lambda spec, context: _size_asked(
                  spec.check_vcpus, spec.vcpus, context.exact_match),
              sql=eligibility.AtLeastOrExactly('cpus')),
    Criterion('local_gb', 'local_gb >= root + ephemeral + swap',
              'too little disk', _local_gb,
              lambda spec, context: _size_asked(
                  spec.check_disk, spec.disk_gb, False),
              sql=eligibility.AtLeastOrExactly('local_gb')),
    Criterion('required_traits', 'has every required trait',
              'lack trait %s', _required_traits,
              lambda spec, context: _params(spec.required_traits),
              sql=eligibility.ItemsInText('traits_text', present=True)),
    Criterion('forbidden_traits', 'has no forbidden trait',
              'have forbidden trait %s', _forbidden_traits,
              lambda spec, context: _params(spec.forbidden_traits),
              sql=eligibility.ItemsInText('traits_text', present=False)),
    # SQL only narrows: Python decides the other operators, and cpu_arch.
    Criterion('capabilities',
              'capabilities satisfy every capability requirement',
              'fail capability %s', _capabilities, _capabilities_asked,
              sql=eligibility.KeyValuesInText('capabilities_text')),
)
"""What a request asks, in the order the matcher checks it, after the
node's state."""
CRITERIA = tuple(
    Criterion(criterion.name, criterion.description, criterion.phrase,
              _rule_check(criterion.rule))
    for criterion in eligibility.CRITERIA) + REQUEST
"""Every criterion, in the order the matcher checks them."""
BY_NAME = {criterion.name: criterion for criterion in CRITERIA}


def asked(spec, context):
    """What the request asks SQL to narrow by: ``(criterion name, its
    SQL shape, what it asks)`` for each criterion that asks something,
    in order."""
    found = []
    for criterion in REQUEST:
        asking = criterion.asks(spec, context)
        if asking is not None:
            found.append((criterion.name, criterion.sql, asking))
    return tuple(found)


def first_miss(spec, node, context):
    """``(criterion_name, Miss)`` for the first failed criterion, or None."""
    for criterion in CRITERIA:
        miss = criterion.check(spec, node, context)
        if miss is not None:
            return criterion.name, miss
    return None


def partition(spec, nodes, context):
    """``(matching nodes, misses)``, checking each node once.

    ``misses`` holds ``(node, criterion name, Miss)`` for every node that
    does not match, for explaining a refusal without matching again.
    """
    matched, misses = [], []
    for node in nodes:
        failure = first_miss(spec, node, context)
        if failure is None:
            matched.append(node)
        else:
            misses.append((node, *failure))
    return matched, misses
