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

The criteria, their order and the node-state rules are declared in
``common/eligibility.py``, from which the SQL layer derives its clauses
too; here each gets its check, and these checks decide every candidate.
"""

import dataclasses
import typing

from reserveapi.common import eligibility
from reserveapi.common import validators
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
    """One matching rule: ``check`` returns a Miss, or None if it holds."""

    name: str
    check: typing.Callable
    description: str


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


def _reserved(spec, node, context):
    if node.reserved:
        return Miss('has a live reservation')


def _candidate_nodes(spec, node, context):
    candidates = context.candidate_nodes
    if candidates is not None and not ({node.uuid, node.name} & candidates):
        return Miss('not in candidate_nodes')


def _partition(spec, node, context):
    group, shard = context.conductor_group, context.shard
    if ((group is not None and (node.conductor_group or '') != group)
            or (shard is not None and node.shard != shard)):
        return Miss('in conductor group %r, shard %r'
                    % (node.conductor_group or '', node.shard))


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


def _rule_check(rule):
    """The check of a node-state rule of the declaration."""
    field, passes = rule.field, eligibility.passes(rule)

    def check(spec, node, context):
        value = getattr(node, field)
        if not passes(value):
            return Miss(eligibility.worded(rule.miss, value))
    return check


# The checks of the criteria that are not node-state rules, by name.
_CHECKS = {
    'reserved': _reserved,
    'candidate_nodes': _candidate_nodes,
    'partition': _partition,
    'owner': _owner,
    'resource_class': _resource_class,
    'cpu_arch': _cpu_arch,
    'memory_mb': _memory_mb,
    'cpus': _cpus,
    'local_gb': _local_gb,
    'required_traits': _required_traits,
    'forbidden_traits': _forbidden_traits,
    'capabilities': _capabilities,
}


def criteria(declared, checks):
    """The ``declared`` criteria, in their order, each with its check: a
    node-state rule's generated, the others' from ``checks`` by name.

    :raises: ValueError naming each criterion without a check, check of
        no criterion and rule with a check of its own.
    """
    names = {criterion.name for criterion in declared}
    ruled = {criterion.name for criterion in declared if criterion.rule}
    problems = [
        '%s: %s' % (problem, ', '.join(sorted(found)))
        for problem, found in (
            ('no check', names - ruled - set(checks)),
            ('no criterion declared', set(checks) - names),
            ('a rule and a check', ruled & set(checks)))
        if found]
    if problems:
        raise ValueError('The matcher disagrees with common/eligibility.py: '
                         + '; '.join(problems))
    return tuple(
        Criterion(criterion.name, _rule_check(criterion.rule)
                  if criterion.rule else checks[criterion.name],
                  criterion.description)
        for criterion in declared)


CRITERIA = criteria(eligibility.CRITERIA, _CHECKS)


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
