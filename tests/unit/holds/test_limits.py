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

"""The operator's limits on holds: each one by example, anti-stacking
and the per-project amount against simple models (Hypothesis,
derandomized)."""

import dataclasses
import datetime

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from oslotest import base

from reserveapi.common import exception
from reserveapi.holds import limits

SETTINGS = settings(max_examples=300, deadline=None, database=None,
                    derandomize=True)
NOW = datetime.datetime(2026, 3, 1, tzinfo=datetime.timezone.utc)
NONE = limits.Limits(max_length=None, max_lead_time=None, max_amount=None)
DAY = datetime.timedelta(days=1)
HOUR = datetime.timedelta(hours=1)
CLASSES = (None, 'CUSTOM_GOLD', 'CUSTOM_GPU')


def span(key, start, end, resource_class='CUSTOM_GOLD', amount=1,
         unit=DAY):
    return limits.Span(key=key, resource_class=resource_class,
                       amount=amount, start=NOW + start * unit,
                       end=NOW + end * unit)


def check(spans, new, now=NOW, admitted=False, **limited):
    limits.check(dataclasses.replace(NONE, **limited), spans, new, now,
                 project_id='p1', admitted=admitted)


def refusal(error_class, spans, new, now=NOW, admitted=False, **limited):
    try:
        check(spans, new, now, admitted, **limited)
    except error_class as error:
        return error
    return None


class TestWindow(base.BaseTestCase):

    def test_end_not_after_start(self):
        for end in (1, 0):
            error = refusal(exception.InvalidHold, [], span('new', 1, end))
            self.assertEqual(
                'Invalid hold: the hold ends at %s, not after its start at '
                '%s' % ((NOW + end * DAY).isoformat(),
                        (NOW + DAY).isoformat()), error.detail)

    def test_start_in_the_past(self):
        ago = datetime.timedelta(seconds=-60)
        check([], span('new', ago, HOUR, unit=1))
        error = refusal(exception.InvalidHold, [],
                        span('new', ago * 1.5, HOUR, unit=1))
        self.assertEqual(
            'Invalid hold: the hold starts 1 minute 30 seconds before now, '
            'more than the 1 minute a start may be in the past',
            error.detail)
        # An update keeps the start it was admitted with.
        check([], span('new', -2, 1), admitted=True)

    def test_max_lead_time(self):
        lead = 90 * DAY
        check([], span('new', lead, lead + HOUR, unit=1),
              max_lead_time=lead)
        late = lead + datetime.timedelta(seconds=0.5)
        error = refusal(exception.InvalidHold, [],
                        span('new', late, late + HOUR, unit=1),
                        max_lead_time=lead)
        self.assertEqual(
            'Invalid hold: the hold starts in 90 days 0.5 seconds, later '
            'than the 90 days [holds] max_lead_time allows', error.detail)
        check([], span('new', late, late + HOUR, unit=1),
              max_lead_time=lead, admitted=True)

    def test_no_limits(self):
        check([span(1, 0, 1000, amount=10 ** 6)],
              span('new', 1000, 100000, amount=10 ** 6))


class TestMaxLength(base.BaseTestCase):

    def test_one_hold(self):
        check([], span('new', 1, 8), max_length=7 * DAY)
        error = refusal(exception.InvalidHold, [], span('new', 1, 10),
                        max_length=7 * DAY)
        self.assertEqual(
            'Invalid hold: the hold lasts 9 days, longer than the 7 days '
            '[holds] max_length allows', error.detail)

    def test_anti_stacked_with_adjacent_holds(self):
        # Touching on both sides, one of them through another hold.
        spans = [span(1, 0, 2), span(2, 1, 3), span(3, 6, 9)]
        error = refusal(exception.InvalidHold, spans, span('new', 3, 6),
                        max_length=7 * DAY)
        self.assertEqual(
            'Invalid hold: the hold lasts 9 days (anti-stacked with 3 '
            'adjacent holds of CUSTOM_GOLD), longer than the 7 days '
            '[holds] max_length allows', error.detail)

    def test_only_the_same_class_stacks(self):
        # A GPU hold between does not join the gold ones either.
        spans = [span(1, 0, 3, 'CUSTOM_GPU'), span(2, 3, 4, None),
                 span(3, -2, 0), span(4, 6, 9, 'CUSTOM_GPU'),
                 span(5, 9, 12)]
        check(spans, span('new', 3, 6), max_length=3 * DAY)
        error = refusal(exception.InvalidHold, spans,
                        span('new', 4, 6, None), max_length=DAY)
        self.assertEqual(
            'Invalid hold: the hold lasts 3 days (anti-stacked with 1 '
            'adjacent hold without a resource class), longer than the 1 '
            'day [holds] max_length allows', error.detail)

    def test_a_gap_does_not_stack(self):
        second = datetime.timedelta(seconds=1)
        check([span(1, 0, 3 * 86400 - 1, unit=second)],
              span('new', 3 * 86400, 6 * 86400, unit=second),
              max_length=3 * DAY)

    def test_a_gap_within_stack_gap_stacks(self):
        """Twice the cleaning padding apart, no other project could use
        the nodes between: the two holds are one window."""
        error = refusal(exception.InvalidHold, [span(1, 0, 3 * 24, unit=HOUR)],
                        span('new', 3 * 24 + 2, 6 * 24, unit=HOUR),
                        max_length=3 * DAY, stack_gap=2 * HOUR)
        self.assertIn('anti-stacked with 1 adjacent hold', error.detail)
        check([span(1, 0, 3 * 24, unit=HOUR)],
              span('new', 3 * 24 + 3, 6 * 24, unit=HOUR),
              max_length=3 * DAY, stack_gap=2 * HOUR)

    def test_the_hold_updated_is_not_its_own_neighbour(self):
        # Its end brought forward, its amount raised.
        check([span('new', 0, 8, amount=2)], span('new', 0, 5, amount=3),
              max_length=5 * DAY, max_amount=3, admitted=True)


class TestMaxAmount(base.BaseTestCase):

    def test_first_instant_above(self):
        # With the first: 4 from day 1, 6 from day 5 (the first above 5),
        # 9 on day 8; the last only touches the new one's end.
        spans = [span(1, 0, 10, amount=2), span(2, 5, 15, 'CUSTOM_GPU', 2),
                 span(3, 8, 9, None, 3), span(4, 20, 30, amount=9)]
        new = span('new', 1, 20, amount=2)
        check(spans, new, max_amount=9)
        error = refusal(exception.HoldQuotaExceeded, spans, new,
                        max_amount=5)
        self.assertEqual(
            {'project': 'p1', 'limit': 5, 'wanted': 6,
             'at': (NOW + 5 * DAY).isoformat()}, error.kwargs)
        self.assertEqual(
            'Project p1 may hold at most 5 nodes at once; at %s it would '
            'hold 6.' % (NOW + 5 * DAY).isoformat(), error.detail)

    def test_alone_above(self):
        error = refusal(exception.HoldQuotaExceeded, [],
                        span('new', 1, 2, amount=4), max_amount=3)
        self.assertEqual((NOW + DAY).isoformat(), error.kwargs['at'])
        self.assertEqual(4, error.kwargs['wanted'])

    def test_naive_times_are_utc(self):
        # As the database keeps them; shown with their offset.
        naive = NOW.replace(tzinfo=None)
        new = limits.Span(key='new', resource_class=None, amount=2,
                          start=naive + DAY, end=naive + 2 * DAY)
        error = refusal(exception.HoldQuotaExceeded, [], new, now=naive,
                        max_amount=1)
        self.assertEqual('2026-03-02T00:00:00+00:00', error.kwargs['at'])

    def test_from_now_on(self):
        # Updating a running hold: what it held before now is past.
        spans = [span(1, -3, -1, amount=5), span(2, -1, 1, amount=1)]
        new = span('new', -5, 5, amount=2)
        error = refusal(exception.HoldQuotaExceeded, spans, new,
                        admitted=True, max_amount=2)
        self.assertEqual(
            {'project': 'p1', 'limit': 2, 'wanted': 3,
             'at': NOW.isoformat()}, error.kwargs)
        check(spans, new, admitted=True, max_amount=3)


spans_lists = st.lists(
    st.tuples(st.sampled_from(CLASSES), st.integers(0, 30),
              st.integers(1, 8), st.integers(0, 3)),
    max_size=8)


def _spans(drawn):
    return [span(key, start, start + length, resource_class, amount, HOUR)
            for key, (resource_class, start, length, amount)
            in enumerate(drawn)]


def stacked_model(spans, new):
    """Join holds of the new one's class that touch or overlap the
    joined ones until none does: ``(hours, count)``."""
    joined = [new]
    joining = True
    while joining:
        joining = False
        for other in spans:
            if (other.resource_class == new.resource_class
                    and all(other is not one for one in joined)
                    and any(other.start <= one.end and one.start <= other.end
                            for one in joined)):
                joined.append(other)
                joining = True
    length = (max(one.end for one in joined)
              - min(one.start for one in joined))
    return length // HOUR, len(joined) - 1


class TestProperties(base.BaseTestCase):

    @SETTINGS
    @given(spans_lists, st.sampled_from(CLASSES), st.integers(0, 30),
           st.integers(1, 8), st.integers(1, 40),
           st.randoms(use_true_random=False))
    def test_anti_stacking_does_not_depend_on_order(
            self, drawn, resource_class, start, length, max_hours, random):
        spans = _spans(drawn)
        new = span('new', start, start + length, resource_class, unit=HOUR)
        shuffled = list(spans)
        random.shuffle(shuffled)
        errors = [refusal(exception.InvalidHold, listed, new,
                          max_length=max_hours * HOUR)
                  for listed in (spans, shuffled)]

        details = [error and error.detail for error in errors]
        self.assertEqual(details[0], details[1])
        hours, count = stacked_model(spans, new)
        self.assertEqual(hours > max_hours, errors[0] is not None)
        if errors[0] is not None and count:
            self.assertIn('anti-stacked with %d adjacent' % count,
                          details[0])
        elif errors[0] is not None:
            self.assertNotIn('anti-stacked', details[0])

    @SETTINGS
    @given(spans_lists, st.integers(-5, 30), st.integers(1, 8),
           st.integers(0, 3), st.integers(0, 8))
    def test_max_amount_is_the_first_hour_above(
            self, drawn, start, length, amount, max_amount):
        spans = _spans(drawn)
        new = span('new', start, start + length, amount=amount, unit=HOUR)
        expected = None
        for hour in range(max(start, 0), start + length):
            held = amount + sum(
                one.amount for one in spans
                if one.start <= NOW + hour * HOUR < one.end)
            if held > max_amount:
                expected = {'project': 'p1', 'limit': max_amount,
                            'wanted': held,
                            'at': (NOW + hour * HOUR).isoformat()}
                break
        error = refusal(exception.HoldQuotaExceeded, spans, new,
                        admitted=True, max_amount=max_amount)
        self.assertEqual(expected, error and error.kwargs)
