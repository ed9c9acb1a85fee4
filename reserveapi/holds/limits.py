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

"""The limits an operator sets on holds, checked before admission.

A hold's window must run forwards and not start in the past; it may not
start later than ``[holds] max_lead_time`` from now nor last longer than
``[holds] max_length``, counting the project's holds of its resource
class that touch or overlap it as one window (anti-stacking: otherwise
a long window could be booked as a chain of short ones); and a project
may not hold more than its maximum amount of nodes at any one instant.
"""

import dataclasses
import datetime

from reserveapi.common import exception

CLOCK_SKEW = datetime.timedelta(seconds=60)
"""How far in the past a new hold may start: the client's "now" is a
little behind ours."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """The operator's limits; None for no limit."""

    max_length: datetime.timedelta | None
    max_lead_time: datetime.timedelta | None
    max_amount: int | None
    stack_gap: datetime.timedelta = datetime.timedelta(0)
    """Holds this close count as touching: twice the cleaning padding,
    a gap nobody else could use anyway."""


@dataclasses.dataclass(frozen=True)
class Span:
    """A hold of the project as the limits see it: its window unpadded,
    the cleaning time being the operator's, not the project's."""

    key: object
    resource_class: str | None
    amount: int
    start: datetime.datetime
    end: datetime.datetime


def check(limits, project_spans, new, now, *, project_id, admitted=False):
    """Raise InvalidHold or HoldQuotaExceeded when ``new`` breaks a limit.

    ``project_spans``: the project's live holds; one keyed like ``new``
    is the hold being updated and is skipped. ``admitted``: ``new`` is an
    update of an admitted hold, whose start stays as it was admitted, so
    neither the past nor the lead time applies to it.
    """
    others = [span for span in project_spans if span.key != new.key]
    if new.end <= new.start:
        raise exception.InvalidHold(
            reason='the hold ends at %s, not after its start at %s'
            % (_isoformat(new.end), _isoformat(new.start)))
    if not admitted:
        _check_start(limits, new, now)
    if limits.max_length is not None:
        _check_length(limits.max_length, limits.stack_gap, others, new)
    if limits.max_amount is not None:
        excess = _first_excess(limits.max_amount, others, new, now)
        if excess is not None:
            at, wanted = excess
            raise exception.HoldQuotaExceeded(
                project=project_id, limit=limits.max_amount,
                at=_isoformat(at), wanted=wanted)


def _check_start(limits, new, now):
    if new.start < now - CLOCK_SKEW:
        raise exception.InvalidHold(
            reason='the hold starts %s before now, more than the %s a '
            'start may be in the past'
            % (_duration(now - new.start), _duration(CLOCK_SKEW)))
    lead = new.start - now
    if limits.max_lead_time is not None and lead > limits.max_lead_time:
        raise exception.InvalidHold(
            reason='the hold starts in %s, later than the %s [holds] '
            'max_lead_time allows'
            % (_duration(lead), _duration(limits.max_lead_time)))


def _check_length(max_length, stack_gap, others, new):
    start, end, stacked = _stacked(others, new, stack_gap)
    if end - start <= max_length:
        return
    if stacked:
        klass = ('of %s' % new.resource_class if new.resource_class
                 else 'without a resource class')
        how = ' (anti-stacked with %d adjacent hold%s %s)' % (
            stacked, '' if stacked == 1 else 's', klass)
    else:
        how = ''
    raise exception.InvalidHold(
        reason='the hold lasts %s%s, longer than the %s [holds] '
        'max_length allows'
        % (_duration(end - start), how, _duration(max_length)))


def _stacked(others, new, gap=datetime.timedelta(0)):
    """``(start, end, count)``: the window ``new`` makes with the
    project's holds of its class that touch or overlap it, one after
    another, and how many of them there are.

    Sorted by start, a span joins the windows before it when it starts
    at most ``gap`` after the latest end so far.
    """
    same = [span for span in others
            if span.resource_class == new.resource_class]
    start = end = None
    members = 0
    has_new = False
    for span in sorted([new] + same, key=lambda span: span.start):
        if members and span.start > end + gap:
            if has_new:
                break
            members = 0
        if not members:
            start, end = span.start, span.end
        end = max(end, span.end)
        members += 1
        has_new = has_new or span is new
    return start, end, members - 1


def _first_excess(max_amount, others, new, now):
    """``(instant, amount)``: the first instant from now on in ``new``'s
    window at which the project's holds overlapping there sum above
    ``max_amount``, or None."""
    first = max(new.start, now)
    if first >= new.end:
        return None
    overlapping = [span for span in others
                   if span.start < new.end and span.end > first]
    instants = sorted({first} | {span.start for span in overlapping
                                 if first < span.start})
    for at in instants:
        held = new.amount + sum(span.amount for span in overlapping
                                if span.start <= at < span.end)
        if held > max_amount:
            return at, held
    return None


def _isoformat(moment):
    """With an offset, as the API shows times; a naive time is UTC, as
    the database keeps them."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.isoformat()


def _duration(delta):
    """``9 days``, ``1 day 2 hours 30 minutes``, ``0.5 seconds``."""
    minutes, seconds = divmod(delta.seconds, 60)
    hours, minutes = divmod(minutes, 60)
    parts = ['%d %s' % (value, unit + ('' if value == 1 else 's'))
             for value, unit in ((delta.days, 'day'), (hours, 'hour'),
                                 (minutes, 'minute'))
             if value]
    if delta.microseconds:
        parts.append('%s seconds' % ('%d.%06d' % (
            seconds, delta.microseconds)).rstrip('0'))
    elif seconds or not parts:
        parts.append('%d second%s' % (seconds, '' if seconds == 1 else 's'))
    return ' '.join(parts)
