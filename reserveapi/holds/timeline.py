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

"""Do the holds fit the nodes at every instant from now on?

The admission rule: a hold is admitted only if, at every instant of its
window padded by the cleaning time at both ends, the holds overlapping it
plus this one fit in the matching free nodes. Which holds are active
changes only where a window starts or ends, and an end only frees nodes,
so checking now and every start after now checks every instant.

"Fit" is exact: the nodes are in groups by the holds they can serve, and
the holds fit when a maximum flow from the holds through the groups
meets every amount. Comparing a new hold with the sum of the holds its
nodes could serve would depend on the order of admission: a GPU hold
admitted after a generic one would be refused though the generic one
could take a plain node.
"""

import collections
import dataclasses
import datetime


@dataclasses.dataclass(frozen=True)
class Window:
    """One hold's demand: ``amount`` nodes over its busy window
    ``[start, end)``, already padded by its cleaning time."""

    key: object
    amount: int
    start: datetime.datetime
    end: datetime.datetime


@dataclasses.dataclass(frozen=True)
class Group:
    """``count`` nodes, each able to serve any window keyed in
    ``serves``."""

    count: int
    serves: frozenset


@dataclasses.dataclass(frozen=True)
class Shortfall:
    """The first instant the active windows do not fit: they want
    ``wanted`` nodes and the pool can meet only ``fit`` of them."""

    at: datetime.datetime
    wanted: int
    fit: int
    keys: tuple


def first_shortfall(windows, groups, now):
    """The first instant from ``now`` on at which the active windows do
    not fit in the groups, or None when they fit throughout.

    Windows that ended by ``now`` are ignored; one that started before
    ``now`` counts from ``now``.
    """
    live = [window for window in windows if window.end > now]
    counts, reaches = _pool(groups)
    instants = sorted({now} | {window.start for window in live
                               if window.start > now})
    fitted = frozenset()
    for at in instants:
        active = frozenset(index for index, window in enumerate(live)
                           if window.start <= at < window.end)
        if active <= fitted:
            # Fewer windows than at an instant that fit: they fit.
            continue
        chosen = [live[index] for index in active]
        wanted = sum(window.amount for window in chosen)
        # Windows the same groups serve are one window to the flow.
        demand = collections.Counter()
        for window in chosen:
            if window.amount > 0 and window.key in reaches:
                demand[reaches[window.key]] += window.amount
        fit = _max_flow(list(demand.items()), counts)
        if fit < wanted:
            return Shortfall(
                at=at, wanted=wanted, fit=fit,
                keys=tuple(sorted((window.key for window in chosen),
                                  key=str)))
        fitted = active
    return None


def spare(windows, groups, now, key):
    """The most nodes an ask keyed ``key`` that starts at ``now`` and
    never ends (on-demand reservations) can take, at every instant from
    now on, while the windows still get all they can: how many more
    now, with the holds subtracted.

    At an instant it is the maximum flow with the ask unbounded less
    the maximum flow without it: augmenting paths never take back what
    the source gave, so the windows keep all they had. Windows keyed
    ``key`` are left out.
    """
    live = [window for window in windows
            if window.end > now and window.key != key]
    counts, reaches = _pool(groups)
    if key not in reaches:
        return 0
    bound = sum(counts[index] for index in reaches[key])
    least = bound
    for at in sorted({now} | {window.start for window in live
                              if window.start > now}):
        demand = collections.Counter()
        for window in live:
            if (window.start <= at < window.end and window.amount > 0
                    and window.key in reaches):
                demand[reaches[window.key]] += window.amount
        without = _max_flow(list(demand.items()), counts)
        demand[reaches[key]] += bound
        least = min(least, _max_flow(list(demand.items()), counts) - without)
    return least


def _pool(groups):
    """The groups' counts, groups serving the same windows summed, and
    for each window key the indexes of the groups that serve it."""
    supply = collections.Counter()
    for group in groups:
        if group.count > 0 and group.serves:
            supply[frozenset(group.serves)] += group.count
    reaches = collections.defaultdict(list)
    for index, serves in enumerate(supply):
        for key in serves:
            reaches[key].append(index)
    return (list(supply.values()),
            {key: tuple(indexes) for key, indexes in reaches.items()})


def _max_flow(demands, supply):
    """Edmonds-Karp on the bipartite graph: the source gives each window
    its amount, a window sends any number of units to each group in its
    reach, a group takes at most its count.

    ``demands``: ``[(reach, amount)]``, reach a tuple of group indexes;
    ``supply``: each group's count. A greedy pass first takes the direct
    paths, then shortest augmenting paths move units between groups.
    """
    left = [amount for _, amount in demands]
    room = list(supply)
    flow = [collections.Counter() for _ in demands]
    # users[group]: the windows sending it units, for the reverse edges.
    users = [set() for _ in supply]
    for window, (reach, _) in enumerate(demands):
        for group in reach:
            if not left[window]:
                break
            units = min(left[window], room[group])
            if units:
                flow[window][group] += units
                users[group].add(window)
                left[window] -= units
                room[group] -= units
    while True:
        path = _augmenting_path(demands, left, room, users)
        if path is None:
            break
        first, last, forward, backward = path
        units = min([left[first], room[last]]
                    + [flow[window][group] for window, group in backward])
        for window, group in forward:
            flow[window][group] += units
            users[group].add(window)
        for window, group in backward:
            flow[window][group] -= units
            if not flow[window][group]:
                users[group].discard(window)
        left[first] -= units
        room[last] -= units
    return sum(amount for _, amount in demands) - sum(left)


def _augmenting_path(demands, left, room, users):
    """A shortest path from a window with units left to a group with
    room, through groups whose units can move to another group:
    ``(first window, last group, forward edges, backward edges)`` with
    edges as ``(window, group)``, or None when the flow is maximal."""
    reached_from = {window: None for window, units in enumerate(left)
                    if units}
    group_from = {}
    queue = collections.deque(reached_from)
    last = None
    while queue and last is None:
        window = queue.popleft()
        for group in demands[window][0]:
            if group in group_from:
                continue
            group_from[group] = window
            if room[group]:
                last = group
                break
            for other in users[group]:
                if other not in reached_from:
                    reached_from[other] = group
                    queue.append(other)
    if last is None:
        return None
    forward, backward = [], []
    group = last
    while True:
        window = group_from[group]
        forward.append((window, group))
        group = reached_from[window]
        if group is None:
            return window, last, forward, backward
        backward.append((window, group))
