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

"""Admit holds over time, and keep every admitted hold while
reservations take nodes.

A hold takes its nodes over its *busy window*: its window padded by the
cleaning time at both ends. The nodes that can meet it are the ones a
reservation with its request spec could get now, plus those its own
project reserved since its start (the project's boots fill its hold).
Any other reserved node is gone for good: on-demand reservations have
no end. timeline.py decides whether the holds fit at every instant.

Every admission, and every reservation of a node some hold could use,
decides inside one transaction that first writes the hold guard row
(db/holds.py): they take turns on every backend, Galera included.
"""

import collections
import dataclasses
import datetime
import json
import uuid as uuid_mod

from oslo_log import log
from oslo_utils import timeutils
from oslo_utils import uuidutils

from reserveapi import notifications
from reserveapi.common import exception
from reserveapi.common import metrics
import reserveapi.conf
from reserveapi.db import holds as db_holds
from reserveapi.db import matching as db_matching
from reserveapi.holds import limits
from reserveapi.holds import timeline
from reserveapi.matcher import filters
from reserveapi.matcher import spec as spec_mod
from reserveapi.peers import limits as peer_limits

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF
_OWNER = filters.BY_NAME['owner']
_CAPABILITIES = filters.BY_NAME['capabilities']

PENDING = 'pending'
ACTIVE = 'active'
DEGRADED = 'degraded'
RECLAIMED = 'reclaimed'
ENDED = 'ended'
CANCELLED = 'cancelled'
STATES = (PENDING, ACTIVE, DEGRADED, RECLAIMED, ENDED, CANCELLED)
RUNNING = (ACTIVE, DEGRADED, RECLAIMED)
"""The states between a hold's start and its end."""
AT_END = ('keep', 'delete')
"""What happens to a hold's instances at its end: kept (as on-demand
reservations from then on), or deleted through Nova."""


def state(hold, now=None):
    """The hold's state at ``now``: cancelled, or where now falls in its
    (unpadded) window; within it, ``reclaimed`` once pins were given back
    unused, else ``degraded`` while fewer nodes than it keeps could be
    pinned."""
    if hold.cancelled_at is not None:
        return CANCELLED
    now = now or timeutils.utcnow()
    if now < hold.start_at:
        return PENDING
    if now >= hold.end_at:
        return ENDED
    if hold.reclaimed:
        return RECLAIMED
    return DEGRADED if hold.shortfall else ACTIVE


_BOOT_CLASS_PREFIX = 'CUSTOM_HOLD_'


def boot_resource_class(uuid):
    """The Placement resource class of hold ``uuid``'s own flavor:
    compute hosts report its pinned nodes under it, so that the
    scheduler sends its boots, and only its boots, to them."""
    return _BOOT_CLASS_PREFIX + uuid_mod.UUID(uuid).hex.upper()


def hold_of_resource_class(resource_class):
    """The uuid of the hold whose boots ask for ``resource_class``, or
    None for any other class."""
    if not (resource_class or '').startswith(_BOOT_CLASS_PREFIX):
        return None
    try:
        return str(uuid_mod.UUID(
            hex=resource_class[len(_BOOT_CLASS_PREFIX):]))
    except ValueError:
        return None


@dataclasses.dataclass(frozen=True)
class Usage:
    """A hold's nodes now: ``pinned`` wait for a boot, ``in_use`` its
    boots have, ``in_use_by_host`` those a host asked about made."""

    pinned: int = 0
    in_use: int = 0
    in_use_by_host: int = 0


def usage(holds, host=None):
    """``{uuid: Usage}`` for ``holds`` (HoldRecords), in one read.

    :raises: DBError
    """
    counted = db_holds.usage([hold.id for hold in holds], host)
    return {hold.uuid: Usage(*counted[hold.id]) for hold in holds}


def boot_capacity(host=None, now=None):
    """A capacity row per running hold, under its own resource class, as
    db.nodes.get_capacity shapes rows: ``total`` the nodes it keeps,
    ``available`` its pins no boot has taken, ``reserved`` its boots
    (``reserved_by_host`` those of ``host``). A compute host reports it
    as any class, so Placement admits the hold's flavor while a pin is
    free, on any host. A hold over whose instances were kept has a row
    too, its boots its total, until they are gone.

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    running = {hold.uuid: hold for hold in db_holds.unfinished_holds()
               if state(hold, now) in RUNNING}
    # Over, its instances kept: the class stays while they use it, else
    # Placement would refuse every report that drops it.
    over = [hold for hold in db_holds.holds_in_use()
            if hold.uuid not in running]
    rows = []
    shown = list(running.values()) + over
    counted = usage(shown, host)
    for hold in shown:
        used = counted[hold.uuid]
        kept = hold.kept if hold.uuid in running else 0
        row = {'resource_class': boot_resource_class(hold.uuid),
               'total': max(kept, used.pinned + used.in_use),
               'available': used.pinned,
               'reserved': used.in_use, 'memory_mb': 0, 'vcpus': 0,
               'local_gb': 0, 'promised': 0, 'hold_nodes': 0}
        if host is not None:
            row['reserved_by_host'] = used.in_use_by_host
            row['hold_nodes_by_host'] = 0
        rows.append(row)
    return rows


@dataclasses.dataclass(frozen=True)
class _Promise:
    """One hold as admission reads it: its window and its parsed spec."""

    window: timeline.Window
    project_id: str
    start_at: datetime.datetime
    spec: object
    context: filters.MatchContext
    scan: tuple
    """What reading its matching nodes depends on but the project:
    holds alike share one read (_pool)."""

    def matches(self, node):
        """Whether the node has what the hold's spec asks, whatever its
        state: a node the project already uses can still meet it."""
        return all(criterion.check(self.spec, node, self.context) is None
                   for criterion in filters.REQUEST)


def _promise(key, project_id, amount, request_spec, start_at, busy_from,
             busy_until, shard, conductor_group):
    return _Promise(
        window=timeline.Window(key=key, amount=amount, start=busy_from,
                               end=busy_until),
        project_id=project_id, start_at=start_at,
        spec=spec_mod.parse_request_spec(request_spec),
        context=filters.MatchContext(
            project_id=project_id, exact_match=CONF.matcher.exact_match,
            conductor_group=conductor_group, shard=shard),
        scan=(json.dumps(request_spec, sort_keys=True), shard,
              conductor_group))


def _promise_of(hold):
    return _promise(hold.uuid, hold.project_id, hold.kept,
                    hold.request_spec, hold.start_at, hold.busy_from,
                    hold.busy_until, hold.shard, hold.conductor_group)


def ordinary_fill(hold, most, taken):
    """How many of the running ``hold``'s nodes, up to ``most``, its
    project's ordinary reservations fill: made since its start, not
    through a hold, on nodes that meet its spec. Admission counts them
    as the hold's (_pool), so the worker pins that many fewer. A node
    fills one hold: ``taken`` (node ids) are those counted for another
    hold already, and this one's are added.

    :raises: DBError
    """
    if most <= 0:
        return 0
    promise = _promise_of(hold)
    filled = 0
    for node in db_holds.project_reservations_since(
            hold.project_id, hold.start_at, ordinary=True):
        if filled >= most:
            break
        if node.id not in taken and promise.matches(node):
            taken.add(node.id)
            filled += 1
    return filled


def _pool(promises, now):
    """``{node id: keys of the promises it can meet}`` at ``now``: the
    free nodes each one's spec matches, and the nodes its project
    reserved since its start."""
    serves = collections.defaultdict(set)
    alike = collections.defaultdict(list)
    for promise in promises:
        alike[promise.scan].append(promise)
    for members in alike.values():
        # Read once for every project: each then keeps the nodes it may
        # use (Ironic's owner and lessee).
        spec = members[0].spec
        anyone = dataclasses.replace(members[0].context, project_id=None)
        for batch in db_matching.candidate_batches(
                db_matching.NodeFilter(filters.asked(spec, anyone)),
                CONF.matcher.batch_size):
            matched, _misses = filters.partition(spec, batch, anyone)
            for node in matched:
                serves[node.id].update(
                    promise.window.key for promise in members
                    if _OWNER.check(spec, node, promise.context) is None)
    for promise in promises:
        if promise.start_at <= now:
            for node in db_holds.project_reservations_since(
                    promise.project_id, promise.start_at):
                if promise.matches(node):
                    serves[node.id].add(promise.window.key)
    return serves


def _free_matching(promise):
    """How many free nodes match the promise, counted as candidates
    counts them: SQL, then the capabilities once per distinct set. The
    cost grows with the distinct values, not with the nodes."""
    counted = db_matching.tally(
        db_matching.NodeFilter(filters.asked(promise.spec, promise.context)),
        capabilities=bool(promise.spec.capabilities), explain=False)
    return sum(group.count for group in counted.passing
               if _CAPABILITIES.check(promise.spec, group,
                                      promise.context) is None)


def _peak(windows, now):
    """The most nodes the windows ask at any one instant from now on."""
    return max((sum(window.amount for window in windows
                    if window.start <= instant < window.end)
                for instant in {now} | {window.start for window in windows
                                        if window.start > now}),
               default=0)


def _groups(serves):
    """timeline.Groups of a pool: its nodes counted by what they meet."""
    counted = collections.Counter(frozenset(keys) for keys in serves.values()
                                  if keys)
    return [timeline.Group(count=count, serves=keys)
            for keys, count in counted.items()]


def _overlapping(promises, window):
    return [promise for promise in promises
            if promise.window.start < window.end
            and window.start < promise.window.end]


def _admit(candidate, now, replacing=None):
    """Refuse ``candidate`` (a _Promise) unless, at every instant of its
    busy window from now on, it fits beside the live holds that overlap
    it. Runs inside the guarded transaction.

    :raises: HoldNotAdmitted naming the first instant that does not fit
    """
    _version, live = db_holds.live_holds(now)
    promises = _overlapping(
        [_promise_of(hold) for hold in live if hold.uuid != replacing],
        candidate.window) + [candidate]
    shortfall = timeline.first_shortfall(
        [promise.window for promise in promises],
        _groups(_pool(promises, now)), max(now, candidate.window.start))
    if shortfall is not None:
        raise exception.HoldNotAdmitted(
            at=_isoformat(shortfall.at), wanted=shortfall.wanted,
            fit=shortfall.fit)


def _isoformat(moment):
    return moment.replace(tzinfo=datetime.timezone.utc).isoformat()


def _naive_utc(moment):
    """A stored time: UTC without an offset, as the schema keeps times."""
    return moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)


def _busy(start_at, end_at, padding):
    """``(busy_from, busy_until)``: the window padded by ``padding``
    seconds at both ends.

    :raises: InvalidHold when the padding runs past the calendar
    """
    pad = datetime.timedelta(seconds=padding)
    try:
        return start_at - pad, end_at + pad
    except OverflowError:
        raise exception.InvalidHold(
            reason='the window padded by %d s of cleaning runs past the '
                   'calendar.' % padding)


def _max_amount(project_id):
    """The most nodes ``project_id`` may hold at once, None for no limit:
    its unified limit in Keystone with ``[holds] unified_limits``, else
    ``[holds] max_amount_per_project``. Read before the guarded
    transaction: every admission and reservation waits for that one, so
    it must not wait for Keystone.

    :raises: KeystoneUnavailable
    """
    if CONF.holds.unified_limits:
        return peer_limits.project_limit(project_id)
    return CONF.holds.max_amount_per_project or None


def _limits(max_amount):
    def seconds(value):
        return datetime.timedelta(seconds=value) if value else None
    return limits.Limits(
        max_length=seconds(CONF.holds.max_length),
        max_lead_time=seconds(CONF.holds.max_lead_time),
        max_amount=max_amount,
        stack_gap=datetime.timedelta(seconds=2 * CONF.holds.cleaning_padding))


def _check_limits(project_id, resource_class, amount, start_at, end_at, now,
                  max_amount, replacing=None):
    """:raises: InvalidHold; HoldQuotaExceeded"""
    _version, live = db_holds.live_holds(now)
    spans = [limits.Span(key=hold.uuid, resource_class=hold.resource_class,
                         amount=hold.kept, start=hold.start_at,
                         end=hold.end_at)
             for hold in live
             if hold.project_id == project_id and hold.uuid != replacing]
    limits.check(_limits(max_amount), spans,
                 limits.Span(key=replacing or 'new',
                             resource_class=resource_class, amount=amount,
                             start=start_at, end=end_at), now,
                 project_id=project_id, admitted=replacing is not None)


def create_hold(project_id, amount, request_spec, start, end,
                shard=None, conductor_group=None, at_end='keep'):
    """Admit and store a hold of ``amount`` nodes matching
    ``request_spec`` for ``project_id`` from ``start`` to ``end`` (times
    with an offset); at its end its instances are kept or deleted, as
    ``at_end`` says.

    :raises: InvalidRequestSpec; InvalidHold; HoldQuotaExceeded;
        HoldNotAdmitted; KeystoneUnavailable
    """
    with metrics.hold_admission('create'):
        spec = spec_mod.parse_request_spec(request_spec)
        max_amount = _max_amount(project_id)
        now = timeutils.utcnow()
        start_at, end_at = _naive_utc(start), _naive_utc(end)
        busy_from, busy_until = _busy(start_at, end_at,
                                      CONF.holds.cleaning_padding)
        values = {
            'uuid': uuidutils.generate_uuid(), 'project_id': project_id,
            'amount': amount, 'request_spec': request_spec,
            'resource_class': spec.resource_class, 'shard': shard,
            'conductor_group': conductor_group, 'start_at': start_at,
            'end_at': end_at, 'padding': CONF.holds.cleaning_padding,
            'busy_from': busy_from, 'busy_until': busy_until,
            'at_end': at_end}
        candidate = _promise(values['uuid'], project_id, amount,
                             request_spec, start_at, values['busy_from'],
                             values['busy_until'], shard, conductor_group)

        def admit():
            # In the turn: two holds of one project at once cannot both
            # pass its limits.
            _check_limits(project_id, spec.resource_class, amount,
                          start_at, end_at, now, max_amount)
            _admit(candidate, now)

        hold = db_holds.create_hold(values, admit)
    LOG.info('Admitted hold %s: %d nodes for project %s from %s to %s',
             hold.uuid, amount, project_id, start_at, end_at)
    notifications.hold_created(hold, state(hold))
    return hold


def update_hold(uuid, end=None, amount=None):
    """Move the end of a live hold or change its amount; a hold that
    grows is admitted again, one that shrinks always fits.

    :raises: HoldNotFound; Conflict for a cancelled or ended hold;
        InvalidHold; HoldQuotaExceeded; HoldNotAdmitted;
        KeystoneUnavailable
    """
    current = db_holds.get_hold(uuid)
    now = timeutils.utcnow()
    if state(current, now) in (CANCELLED, ENDED):
        raise exception.Conflict(reason='hold %s is %s and can no longer '
                                 'change.' % (uuid, state(current, now)))
    end_at = current.end_at if end is None else _naive_utc(end)
    amount = current.amount if amount is None else amount
    if (end_at, amount) == (current.end_at, current.amount):
        return current
    if end_at != current.end_at and end_at <= now:
        raise exception.InvalidHold(reason='the new end %s is not in the '
                                    'future.' % _isoformat(end_at))
    grows = amount > current.amount or end_at > current.end_at
    # Only a hold that grows is admitted again (and counted).
    with metrics.hold_admission('update', counted=grows):
        max_amount = _max_amount(current.project_id)
        _busy_from, busy_until = _busy(current.start_at, end_at,
                                       current.padding)
        values = {'end_at': end_at, 'amount': amount,
                  'busy_until': busy_until}
        candidate = _promise(uuid, current.project_id, amount,
                             current.request_spec, current.start_at,
                             current.busy_from, busy_until, current.shard,
                             current.conductor_group)

        def admit():
            _check_limits(current.project_id, current.resource_class,
                          amount, current.start_at, end_at, now, max_amount,
                          replacing=uuid)
            if grows:
                _admit(candidate, now, replacing=uuid)

        hold = db_holds.update_hold(uuid, values, admit)
    LOG.info('Changed hold %s: %d nodes until %s', uuid, amount, end_at)
    notifications.hold_updated(current, hold, state(hold))
    return hold


def cancel_hold(uuid):
    """End the hold now; its nodes are at once free for anyone.

    :raises: HoldNotFound
    """
    now = timeutils.utcnow()
    hold = db_holds.cancel_hold(uuid, now)
    if hold.cancelled_at == now:
        # Cancelled by this call, not before: one event per hold.
        LOG.info('Cancelled hold %s', uuid)
        notifications.hold_cancelled(hold, state(hold))
    return hold


def get_hold(uuid):
    """:raises: HoldNotFound"""
    return db_holds.get_hold(uuid)


def list_holds(filters=None, limit=None, marker=None, sort_key='created_at',
               sort_dir='asc'):
    """Holds by project and resource class, a page at a time.

    :raises: Invalid for an unknown marker
    """
    return db_holds.list_holds(filters or {}, limit, marker, sort_key,
                               sort_dir)


def promised(now=None):
    """``{resource class: nodes}`` that must stay free now for the holds
    that have not started: per class, the most their busy windows ask at
    any one instant from now on.

    What compute hosts report to Placement subtracts them, so that once
    they have reported the scheduler stops sending boots that would take
    them (a reservation refuses those nodes meanwhile). An active hold
    is not subtracted: its project's boots must still reach a host, and
    a reservation refuses the nodes it keeps to anyone else.
    (db_holds.promised: monitoring serves the same figure.)
    """
    return db_holds.promised(now or timeutils.utcnow())


ASK = 'on-demand'
"""The key of an on-demand ask among the holds' windows."""
ASKED = 'asked'
"""The key of the hold a question asks about (admissible)."""


def admissible(project_id, request_spec, start, end, shard=None,
               conductor_group=None):
    """How many nodes a hold of ``request_spec`` for ``project_id`` from
    ``start`` to ``end`` (times with an offset) would be admitted for
    now: the most that fits beside the live holds at every instant of
    its padded window from now on. The operator's limits aside.

    :raises: InvalidRequestSpec; InvalidHold for an end not after the
        start, or a window past the calendar; DBError
    """
    now = timeutils.utcnow()
    start_at, end_at = _naive_utc(start), _naive_utc(end)
    if end_at <= start_at:
        raise exception.InvalidHold(
            reason='the window ends at %s, not after its start at %s.'
            % (_isoformat(end_at), _isoformat(start_at)))
    asked = _promise(ASKED, project_id, 0, request_spec, start_at,
                     *_busy(start_at, end_at, CONF.holds.cleaning_padding),
                     shard, conductor_group)
    _version, live = db_holds.live_holds(now)
    promises = _overlapping([_promise_of(hold) for hold in live],
                            asked.window) + [asked]
    serves = _pool(promises, now)
    groups = _groups(serves)
    others = [promise.window for promise in promises[:-1]]
    since = max(now, asked.window.start)

    def fits(amount):
        window = dataclasses.replace(asked.window, amount=amount)
        return timeline.first_shortfall(others + [window], groups,
                                        since) is None

    if not fits(0):
        return 0
    # The most that fits: at least 0, at most every node it could use.
    low, high = 0, sum(1 for keys in serves.values() if ASKED in keys)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def kept_from(project_id, spec, context):
    """How many of the free nodes matching ``spec`` (as a reservation of
    ``project_id`` in ``context`` reads it) the live holds keep from
    that project now: what candidates subtract. The project's own
    active holds are left out: its boots fill them.

    :raises: DBError
    """
    now = timeutils.utcnow()
    _version, live = db_holds.live_holds(now)
    promises = [_promise_of(hold) for hold in live
                if hold.project_id != project_id or now < hold.start_at]
    if not promises:
        return 0
    serves = _pool(promises, now)
    asked = 0
    for batch in db_matching.candidate_batches(
            db_matching.NodeFilter(filters.asked(spec, context)),
            CONF.matcher.batch_size):
        matched, _misses = filters.partition(spec, batch, context)
        for node in matched:
            serves[node.id].add(ASK)
        asked += len(matched)
    return asked - timeline.spare([promise.window for promise in promises],
                                  _groups(serves), now, ASK)


class _Quiet:
    """The guard version at which this process last read no live hold,
    or None. No hold can be admitted without moving the version on, so
    while it stays there, there is still none: a reservation need not
    read the holds, and its INSERT, which goes ahead only at that
    version, finds out when one was admitted (HoldsChanged)."""

    version = None


def forget_quiet():
    """Read the holds at the next reservation (a database replaced
    under this process: its tests)."""
    _Quiet.version = None


class Promises:
    """The live holds as one reservation reads them once, to ask of each
    candidate node whether taking it keeps every hold."""

    def __init__(self, project_id):
        self.project_id = project_id
        if _Quiet.version is None:
            self.read_again()
        else:
            self.now = timeutils.utcnow()
            self.version, self._promises = _Quiet.version, []
            self._pool = self._before = self._ample = None

    def read_again(self):
        """Read the live holds and the guard version now."""
        self.now = timeutils.utcnow()
        self.version, live = db_holds.live_holds(self.now)
        _Quiet.version = None if live else self.version
        self._promises = [_promise_of(hold) for hold in live]
        self._pool = self._before = self._ample = None

    def keep(self, node):
        """Whether reserving ``node`` must take the holds' turn: False
        when no live hold can use it.

        :raises: NodeHeld when reserving it for this project from now on
            would leave the holds worse off than they are: an earlier
            first instant that does not fit, or fewer nodes met there.
            (Nodes that went into maintenance can leave a hold short
            already; what is left is still kept for it.)
        """
        if not any(promise.matches(node) for promise in self._promises):
            return False
        windows = [promise.window for promise in self._promises]
        if self._ample is None:
            # Each hold matching more free nodes than all of them ask at
            # once, plus one: without any one node they still fit (Hall's
            # condition holds for every set of holds), so the nodes need
            # not be read. Counting costs no more with more nodes.
            alike = {(promise.scan, promise.project_id): promise
                     for promise in self._promises}
            self._ample = min(_free_matching(promise)
                              for promise in alike.values()) > _peak(
                windows, self.now)
        if self._ample:
            return True
        if self._pool is None:
            # Read once per version: a reservation of a node some hold
            # could use moves the version on, and any other took a node
            # no hold can use.
            self._pool = _pool(self._promises, self.now)
            self._before = timeline.first_shortfall(
                windows, _groups(self._pool), self.now)
        serves = dict(self._pool)
        serves[node.id] = {
            promise.window.key for promise in self._promises
            if promise.project_id == self.project_id
            and promise.start_at <= self.now and promise.matches(node)}
        after = timeline.first_shortfall(windows, _groups(serves), self.now)
        if after is not None and after != self._before:
            raise exception.NodeHeld(node=node.uuid, holds=', '.join(
                str(key) for key in after.keys))
        return True
