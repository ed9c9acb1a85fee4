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

"""Order matching nodes, pick one, and explain an empty result."""

import collections
import random
import typing

from reserveapi.common import eligibility
from reserveapi.matcher import filters

UNSET = '<unset>'
# How many distinct values of a failed capability a refusal reports.
CAPABILITY_VALUES_SHOWN = 5

# Criteria in the order the matcher applies them: ties of a refusal's
# counts, and the order of candidates' exclusions.
_ORDER = {criterion.name: index
          for index, criterion in enumerate(filters.CRITERIA)}


def waste(spec, node):
    """What the node offers beyond the request, memory first, then cpus,
    then disk; only the checked dimensions count.  Lower is better.
    """
    dimensions = (
        (spec.check_memory, node.memory_mb, spec.memory_mb),
        (spec.check_vcpus, node.cpus, spec.vcpus),
        (spec.check_disk, node.local_gb, spec.disk_gb),
    )
    return tuple((have or 0) - need
                 for checked, have, need in dimensions if checked)


def rank(spec, nodes, subset_size, rng=random):
    """Matching nodes in the order to try them.

    The best ``subset_size`` nodes by waste come first, shuffled, so that
    concurrent requests rarely race for one node; the rest follow in waste
    order for when every attempt in the subset loses a race.  Nodes that
    waste the same are ordered at random (Nova's
    ``shuffle_best_same_weighed_hosts``): identical bare metal nodes are the
    norm, and input order would otherwise send every request to the first.
    As in Nova, a ``subset_size`` below 1 means 1.
    """
    keyed = sorted(((waste(spec, node), rng.random(), index, node)
                    for index, node in enumerate(nodes)),
                   key=lambda item: item[:3])
    ordered = [item[-1] for item in keyed]
    size = max(1, subset_size)
    best = ordered[:size]
    rng.shuffle(best)
    return best + ordered[size:]


def by_fit(spec, nodes):
    """Matching nodes best fit first, as ``rank`` orders them before it
    shuffles the best: nodes that waste the same keep their order."""
    return sorted(nodes, key=lambda node: waste(spec, node))


def eliminate(misses, counts=None):
    """Count, per criterion, the nodes it eliminated first.

    ``misses`` are ``(node, criterion name, Miss)`` triples from
    ``filters.partition``. Returns ``(eliminated, capability_values)``.
    Each non-matching node counts once, under its first failed criterion,
    so the counts add up to the number of nodes that do not match; where
    a "node" stands for a group of alike nodes, ``counts`` (a list
    parallel to ``misses``) says how many.
    Criteria failing on one trait or capability are keyed
    ``criterion:item`` (``required_traits:CUSTOM_RAID``).
    ``capability_values`` maps each failed capability to a Counter of all
    the values those nodes have (``<unset>`` when missing): the batches
    are summed first, and only :func:`explain` keeps the most common.
    """
    eliminated = collections.Counter()
    capability_values = collections.defaultdict(collections.Counter)
    for index, (node, name, miss) in enumerate(misses):
        count = 1 if counts is None else counts[index]
        eliminated[name if miss.item is None else
                   '%s:%s' % (name, miss.item)] += count
        if name == 'capabilities':
            value = filters.node_capabilities(node).get(miss.item, UNSET)
            capability_values[miss.item][value] += count
    return dict(eliminated), dict(capability_values)


def explain(total, eliminated, capability_values):
    """Human text for a refusal: what eliminated how many nodes.

    "120 nodes: 80 wrong resource class, 30 lack trait CUSTOM_RAID, 10
    reserved; capability boot_mode: closest nodes have bios (12), legacy
    (3)".  Larger counts come first, ties in criterion order; a failed
    capability shows its CAPABILITY_VALUES_SHOWN most common values.
    """
    text = '%d %s' % (total, 'node' if total == 1 else 'nodes')
    reasons = ', '.join(
        '%d %s' % (count, _phrase(key))
        for key, count in sorted(eliminated.items(), key=_reason_order)
        if count)
    if reasons:
        text += ': ' + reasons
    for key in sorted(capability_values):
        values = ', '.join('%s (%d)' % (value, count) for value, count
                           in _most_common(capability_values[key]))
        if values:
            text += '; capability %s: closest nodes have %s' % (key, values)
    return text


class Exclusion(typing.NamedTuple):
    """What one criterion eliminated: ``count`` nodes, ``reason`` as a
    refusal words it; ``item`` the trait or capability, if any; for a
    capability its most common ``values`` as ``(value, count)``."""

    criterion: str
    item: str | None
    count: int
    reason: str
    values: tuple = ()


def excluded(spec, eliminated, capability_values):
    """``eliminated`` and ``capability_values`` (what ``explain`` words)
    as Exclusions, in the order the matcher applies its criteria: traits
    by name, as they are checked, capabilities in the spec's order."""
    capability_order = {}
    for requirement in spec.capabilities:
        capability_order.setdefault(requirement.key, len(capability_order))

    def position(key):
        name, item = _split(key)
        return (_ORDER.get(name, len(_ORDER)),
                capability_order.get(item, 0) if name == 'capabilities'
                else 0, item)

    exclusions = []
    for key in sorted(eliminated, key=position):
        name, item = _split(key)
        if not eliminated[key]:
            continue
        values = (capability_values.get(item, {}) if name == 'capabilities'
                  else {})
        exclusions.append(Exclusion(name, item or None, eliminated[key],
                                    _phrase(key),
                                    tuple(_most_common(values))))
    return exclusions


def refusal_cause(eliminated):
    """Why a refusal refused, as a bounded name to count it by.

    ``eliminated`` is counted with the requested resource class first and
    ``reserved`` after every other clause SQL decides (db.matching.tally
    with ``class_first``): nodes of another class are no reason, unless
    the class has no node at all (``resource_class``). ``reserved`` when
    some node of the class was held that would otherwise have matched;
    else the criterion that excluded the most nodes of the class, ties
    in criterion order. ``none`` when there is no node at all.
    """
    of_class = {key: count for key, count in eliminated.items()
                if count and _split(key)[0] != 'resource_class'}
    if not of_class:
        return 'resource_class' if eliminated.get('resource_class') else (
            'none')
    if of_class.get('reserved'):
        return 'reserved'
    return _split(min(of_class.items(), key=_reason_order)[0])[0]


def _most_common(counter):
    """The values shown for a capability: most common first, ties by
    value (unset last), so that the text depends neither on the
    database's collation nor on batch order.
    """
    ordered = sorted(counter.items(), key=lambda item: (
        -item[1], item[0] == UNSET, item[0]))
    return ordered[:CAPABILITY_VALUES_SHOWN]


def _split(key):
    name, _colon, item = key.partition(':')
    return name, item


def _phrase(key):
    """How a criterion reads in "120 nodes: 80 wrong resource class, ...":
    its declared phrase, with the trait or capability; a name not
    declared as it is."""
    name, item = _split(key)
    criterion = filters.BY_NAME.get(name)
    return (eligibility.worded(criterion.phrase, item)
            if criterion is not None else name)


def _reason_order(entry):
    key, count = entry
    return -count, _ORDER.get(_split(key)[0], len(_ORDER)), key
