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

"""Admission over time: the max-flow check against a brute-force model
of the timeline (each node given to one unit of one hold, tried every
way at every minute), and the scenarios that motivate it.

The examples are derandomized, so every run checks the same ones and a
failure reproduces.
"""

import collections
import datetime

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from oslotest import base

from reserveapi.holds import timeline

SETTINGS = settings(max_examples=400, deadline=None, database=None,
                    derandomize=True)
BASE = datetime.datetime(2026, 3, 1, tzinfo=datetime.timezone.utc)
HORIZON = 22
"""Windows start in 0..20 and end by 22 (minutes after BASE)."""
KEYS = ('new', 'a', 'b', 10, 9)
"""Window keys, mixed so that sorting by str matters ('10' < '9')."""


def minute(value):
    return BASE + datetime.timedelta(minutes=value)


def window(key, amount, start, end):
    return timeline.Window(key=key, amount=amount, start=minute(start),
                           end=minute(end))


def most_units(active, nodes):
    """The most units of the active windows distinct nodes can meet:
    every node tried on every window it serves, or left unused."""
    need = [item.amount for item in active]
    wanted = sum(need)
    best = 0

    def assign(index, met):
        nonlocal best
        best = max(best, met)
        if best == wanted or met + len(nodes) - index <= best:
            return
        for position, item in enumerate(active):
            if need[position] and item.key in nodes[index]:
                need[position] -= 1
                assign(index + 1, met + 1)
                need[position] += 1
        assign(index + 1, met)

    assign(0, 0)
    return best


def brute_force(windows, nodes, now):
    """``(minute, wanted, fit, keys)`` at the first minute from ``now``
    at which the active windows do not fit the nodes, or None."""
    for at in range(now, HORIZON + 1):
        active = [item for item in windows
                  if minute(at) >= item.start and minute(at) < item.end]
        wanted = sum(item.amount for item in active)
        fit = most_units(active, nodes)
        if fit < wanted:
            return (at, wanted, fit,
                    tuple(sorted((item.key for item in active), key=str)))
    return None


@st.composite
def timelines(draw):
    """Windows on minutes 0..22, nodes each serving some of them (or a
    hold no window is), the groups the nodes make, and a now."""
    windows = []
    for key in KEYS[:draw(st.integers(0, len(KEYS)))]:
        start = draw(st.integers(0, 20))
        end = draw(st.integers(start, HORIZON))
        windows.append(window(key, draw(st.integers(0, 3)), start, end))
    nodes = draw(st.lists(
        st.frozensets(st.sampled_from(KEYS + ('gone',))), max_size=6))
    if draw(st.booleans()):
        groups = [timeline.Group(count=1, serves=serves) for serves in nodes]
    else:
        groups = [timeline.Group(count=count, serves=serves) for serves, count
                  in collections.Counter(nodes).items()]
    if draw(st.booleans()):
        groups.append(timeline.Group(count=0, serves=frozenset(KEYS)))
    now = draw(st.integers(0, HORIZON))
    return windows, nodes, groups, now


class TestAgainstBruteForce(base.BaseTestCase):

    @SETTINGS
    @given(timelines())
    def test_first_shortfall_is_the_brute_forces(self, case):
        windows, nodes, groups, now = case
        expected = brute_force(windows, nodes, now)
        found = timeline.first_shortfall(windows, groups, minute(now))
        if expected is None:
            self.assertIsNone(found)
            return
        at, wanted, fit, keys = expected
        self.assertEqual(
            timeline.Shortfall(at=minute(at), wanted=wanted, fit=fit,
                               keys=keys), found)

    @SETTINGS
    @given(timelines(), st.randoms(use_true_random=False))
    def test_the_order_of_windows_and_groups_does_not_matter(self, case,
                                                            random):
        windows, _, groups, now = case
        shuffled_windows, shuffled_groups = list(windows), list(groups)
        random.shuffle(shuffled_windows)
        random.shuffle(shuffled_groups)
        self.assertEqual(
            timeline.first_shortfall(windows, groups, minute(now)),
            timeline.first_shortfall(shuffled_windows, shuffled_groups,
                                     minute(now)))


def fits(windows, groups, now):
    return timeline.first_shortfall(windows, groups, now) is None


def brute_spare(windows, nodes, now, key):
    """The least, over the minutes from ``now`` on, of what an unbounded
    ask keyed ``key`` adds to the most units the active windows get."""
    others = [item for item in windows if item.key != key]
    least = None
    for at in range(now, HORIZON + 1):
        active = [item for item in others
                  if minute(at) >= item.start and minute(at) < item.end]
        ask = window(key, len(nodes), at, HORIZON + 1)
        extra = most_units(active + [ask], nodes) - most_units(active,
                                                                nodes)
        least = extra if least is None else min(least, extra)
    return least


class TestSpare(base.BaseTestCase):

    @SETTINGS
    @given(timelines())
    def test_spare_is_the_brute_forces(self, case):
        windows, nodes, groups, now = case
        self.assertEqual(brute_spare(windows, nodes, now, 'a'),
                         timeline.spare(windows, groups, minute(now), 'a'))

    @SETTINGS
    @given(timelines())
    def test_an_ask_of_the_spare_fits_and_one_more_does_not(self, case):
        """Where the windows fit, the spare is the largest on-demand ask
        that keeps every window whole."""
        windows, _, groups, now = case
        windows = [item for item in windows if item.key != 'a']
        if not fits(windows, groups, minute(now)):
            return
        spare = timeline.spare(windows, groups, minute(now), 'a')
        forever = minute(HORIZON + 1)

        def ask(amount):
            return windows + [timeline.Window('a', amount, minute(now),
                                              forever)]

        self.assertTrue(fits(ask(spare), groups, minute(now)))
        self.assertFalse(fits(ask(spare + 1), groups, minute(now)))

    def test_a_pending_hold_keeps_its_nodes_from_now(self):
        windows = [window('h', 2, 10, 20)]
        groups = [timeline.Group(count=3, serves=frozenset({'h', 'a'}))]
        self.assertEqual(1, timeline.spare(windows, groups, minute(0), 'a'))

    def test_nodes_the_ask_cannot_use_give_nothing(self):
        groups = [timeline.Group(count=3, serves=frozenset({'h'}))]
        self.assertEqual(0, timeline.spare([], groups, minute(0), 'a'))


class TestScenarios(base.BaseTestCase):

    def test_two_holds_sharing_one_class(self):
        pool = [timeline.Group(count=3, serves=frozenset({'a', 'b'}))]
        first = window('a', 2, 0, 10)

        self.assertEqual(
            timeline.Shortfall(at=minute(5), wanted=4, fit=3,
                               keys=('a', 'b')),
            timeline.first_shortfall([first, window('b', 2, 5, 15)], pool,
                                     minute(0)))
        # Once the first has ended, its nodes serve the second.
        self.assertIsNone(timeline.first_shortfall(
            [first, window('b', 2, 10, 15)], pool, minute(0)))

    def test_gpu_and_generic_holds_admitted_in_either_order(self):
        # The GPU node serves both; the plain node only the generic hold.
        # Counting the holds each new one's nodes could serve would admit
        # the GPU hold first and the generic one after, but refuse the
        # GPU hold after the generic one: its single node is "taken".
        pool = [timeline.Group(count=1, serves=frozenset({'gpu', 'any'})),
                timeline.Group(count=1, serves=frozenset({'any'}))]
        gpu, generic = window('gpu', 1, 0, 10), window('any', 1, 0, 10)

        for order in ([gpu, generic], [generic, gpu]):
            self.assertTrue(fits(order[:1], pool, minute(0)))
            self.assertTrue(fits(order, pool, minute(0)))
        # A second generic hold does not fit beside them.
        self.assertEqual(
            timeline.Shortfall(at=minute(3), wanted=3, fit=2,
                               keys=('any', 'gpu', 'new')),
            timeline.first_shortfall(
                [gpu, generic, window('new', 1, 3, 4)],
                [timeline.Group(count=1, serves=frozenset(
                    {'gpu', 'any', 'new'})),
                 timeline.Group(count=1, serves=frozenset({'any', 'new'}))],
                minute(0)))

    def test_padded_window_touching_another(self):
        # One node; 5 minutes of cleaning around each hold.
        pool = [timeline.Group(count=1, serves=frozenset({'a', 'b'}))]
        padding = 5
        first = window('a', 1, 10 - padding, 20 + padding)

        touching = window('b', 1, 30 - padding, 40 + padding)
        self.assertIsNone(
            timeline.first_shortfall([first, touching], pool, minute(0)))
        overlapping = window('b', 1, 29 - padding, 40 + padding)
        self.assertEqual(
            timeline.Shortfall(at=minute(24), wanted=2, fit=1,
                               keys=('a', 'b')),
            timeline.first_shortfall([first, overlapping], pool,
                                     minute(0)))

    def test_window_in_the_past_ignored(self):
        pool = [timeline.Group(count=1, serves=frozenset({'old', 'new'}))]
        new = window('new', 1, 10, 20)

        self.assertIsNone(timeline.first_shortfall(
            [window('old', 1, 0, 10), new], pool, minute(10)))
        # Still running now: the shortfall is now, not at its start.
        self.assertEqual(
            timeline.Shortfall(at=minute(10), wanted=2, fit=1,
                               keys=('new', 'old')),
            timeline.first_shortfall([window('old', 1, 0, 11), new], pool,
                                     minute(10)))
        # Started before now, one counts from now.
        self.assertEqual(
            timeline.Shortfall(at=minute(12), wanted=2, fit=1,
                               keys=('new', 'old')),
            timeline.first_shortfall([window('old', 1, 0, 15), new], pool,
                                     minute(12)))

    def test_zero_pool(self):
        holds = [window('a', 0, 0, 10), window('b', 2, 5, 10)]
        for pool in ([], [timeline.Group(count=0, serves=frozenset('ab'))],
                     [timeline.Group(count=4, serves=frozenset())]):
            self.assertEqual(
                timeline.Shortfall(at=minute(5), wanted=2, fit=0,
                                   keys=('a', 'b')),
                timeline.first_shortfall(holds, pool, minute(0)))
            self.assertIsNone(
                timeline.first_shortfall(holds[:1], pool, minute(0)))

    def test_the_first_instant_not_the_worst(self):
        pool = [timeline.Group(count=2, serves=frozenset('abcd'))]
        holds = [window('a', 1, 0, 10), window('b', 1, 5, 10),
                 window('c', 1, 6, 10), window('d', 3, 8, 10)]

        self.assertEqual(
            timeline.Shortfall(at=minute(6), wanted=3, fit=2,
                               keys=('a', 'b', 'c')),
            timeline.first_shortfall(holds, pool, minute(0)))

    def test_hundreds_of_windows(self):
        # Window i wants one node over [i, i + 10) from group i % 10;
        # 'extra' too wants one of group 0's, at minute 150 only, when
        # window 150 holds it.
        holds = [window(i, 1, i, i + 10) for i in range(300)]
        pool = [timeline.Group(count=1, serves=frozenset(
            range(residue, 300, 10))) for residue in range(10)]
        pool += [timeline.Group(count=0, serves=frozenset(range(300)))] * 290

        self.assertIsNone(timeline.first_shortfall(holds, pool, minute(0)))
        extra = timeline.Group(count=1, serves=frozenset(
            range(0, 300, 10)) | {'extra'})
        self.assertEqual(
            timeline.Shortfall(at=minute(150), wanted=11, fit=10,
                               keys=tuple(sorted(
                                   list(range(141, 151)) + ['extra'],
                                   key=str))),
            timeline.first_shortfall(
                holds + [window('extra', 1, 150, 151)],
                [extra] + pool[1:], minute(0)))
