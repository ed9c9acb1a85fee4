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

"""A reservation and its claim in Ironic, from the claim to its clear.

Every transition between a reservation, its node's claim in Ironic and
that claim's clearing row (``ironic_releases``) is made here:

* the claim of a reservation just made (``claim_new``), and the claim
  made again for one others know: a retried request's (``claim_again``)
  or the worker's repair (``reclaim``);
* the end of a reservation: released by its host or as an orphan
  (``release``, ``release_record``), expired (``expire``), or
  contradicted by Ironic (``end_contradicted``, ``reclaim``).

What a failure of Ironic while claiming does to the reservation, to its
node and to the claim is declared once, in ``FAILURES``. A reservation
ends only with an ``Ending`` built here, from a row of that table or
from the source that released it: the database's ending functions take
nothing else to decide how its node and its claim are left.
``inventory.claims`` makes the claims and clears them; it decides
nothing.

Together they keep one invariant, in whatever order a request's claim,
the worker's repair, a release, an expiry and a takeover interleave: a
claim of ours in Ironic stands only while a live reservation holds its
node, or while a clearing row (``ironic_releases``) stands for it, and
that row is cleared by the process that wrote it or, once its lease
lapses, by a worker. Every end of a reservation writes such a row in the
transaction that ends it, and every claim made again is made under one
(``claims.guard``); a row is removed only by a clear, or by a guard
whose reservation was found live, and a request written meanwhile keeps
it (its generation).
"""

import dataclasses
import enum
import functools
import typing

from oslo_log import log

from reserveapi import notifications
from reserveapi.common import exception
from reserveapi.db import inventory as db_inventory
from reserveapi.db import reservations as db_reservations
from reserveapi.inventory import claims
from reserveapi.inventory import sources
from reserveapi.inventory import sync as inventory_sync

LOG = log.getLogger(__name__)


class Kind(enum.Enum):
    """How claiming a node in Ironic failed."""

    REFUSED = 'refused'
    """Ironic will not give the node (another instance on it, a state
    transition, gone); nothing of ours is on it."""
    REFUSED_BUT_OURS = 'refused, but ours'
    """Our claim landed, but Ironic's answer shows a node that cannot be
    used."""
    UNREACHABLE_BEFORE_SENDING = 'unreachable before sending'
    """Ironic could not be asked: no connection was ever made."""
    UNREACHABLE_AFTER_SENDING = 'unreachable after sending'
    """Ironic did not answer a request it may have received: the claim
    may land still."""
    DEPLOYED_ELSEWHERE = 'deployed elsewhere'
    """Ironic has the instance deployed on another node."""
    BEING_CLEARED = 'being cleared'
    """Another process is clearing the instance's claim on another node;
    nothing was asked of this one."""
    INTERRUPTED = 'interrupted'
    """Anything else (Ironic refusing to clear the instance's other
    claim, the database, a process stopping) once the claim may have
    been sent."""


class Reservation(enum.Enum):
    """What a failure does to the reservation whose node was claimed."""

    END = 'ended'
    KEEP_IF_KNOWN = 'kept if known'
    """One others know (a retried request's, the repair's) stays for its
    next attempt; a new one, which nobody knows yet, ends: no
    reservation is left behind that Ironic did not accept."""


class Clear(enum.Enum):
    """What a failure does to our claim in Ironic."""

    NOW = 'now'
    """It landed: cleared by this process right away (or by a worker,
    should Ironic not answer)."""
    LATER = 'later'
    """It may land still: cleared by a worker once it must have
    (``claims.UNCERTAIN_DELAY``), unless a live reservation holds it."""
    NEVER = 'never'
    """Nothing of ours is on the node."""


END, KEEP_IF_KNOWN = Reservation.END, Reservation.KEEP_IF_KNOWN
NOW, LATER, NEVER = Clear.NOW, Clear.LATER, Clear.NEVER


class Failure(typing.NamedTuple):
    """What a Kind of failure does to the reservation, to its node, to
    our claim in Ironic and to the request that was claiming."""

    reservation: Reservation
    stale: bool
    """The node, once no reservation holds it, is offered again only
    after a sync has read it again."""
    clear: Clear
    next_node: bool
    """A request tries another node; otherwise the failure is its
    answer."""


FAILURES = {
    Kind.REFUSED:
        Failure(END, stale=True, clear=NEVER, next_node=True),
    Kind.REFUSED_BUT_OURS:
        Failure(END, stale=True, clear=NOW, next_node=True),
    Kind.UNREACHABLE_BEFORE_SENDING:
        Failure(KEEP_IF_KNOWN, stale=False, clear=NEVER, next_node=False),
    Kind.UNREACHABLE_AFTER_SENDING:
        Failure(KEEP_IF_KNOWN, stale=True, clear=LATER, next_node=False),
    Kind.DEPLOYED_ELSEWHERE:
        Failure(END, stale=False, clear=NEVER, next_node=False),
    Kind.BEING_CLEARED:
        Failure(KEEP_IF_KNOWN, stale=False, clear=NEVER, next_node=False),
    Kind.INTERRUPTED:
        Failure(KEEP_IF_KNOWN, stale=True, clear=LATER, next_node=False),
}
"""What each Kind of failure does, whoever meets it (a request, a retried
request, the worker's repair); the one place that says it."""

_BUILT_HERE = object()
"""What an Ending is built with; held by this module alone."""


@dataclasses.dataclass(frozen=True)
class Ending:
    """How a reservation's end leaves its node and its claim in Ironic:
    all the database's ending functions are told of it. Built only here
    (anywhere else it raises TypeError), so that no caller ends a
    reservation with settings of its own, such as a node freed while
    Ironic may still be cleaning it, or a claim left behind in Ironic.
    """

    stale: bool
    """The node is offered again only after a sync has read it again."""
    clear_in_ironic: db_inventory.ClearRequest | None
    """How our claim in Ironic is asked to be cleared, in the
    transaction that ends the reservation; None: nothing of ours is on
    the node."""
    built_by: dataclasses.InitVar[object]

    def __post_init__(self, built_by):
        if built_by is not _BUILT_HERE:
            raise TypeError('Only inventory.lifecycle builds an Ending: end '
                            'a reservation through its functions.')


def kind_of(error):
    """The Kind of ``error``, raised while claiming a node."""
    if isinstance(error, exception.NodeTaken):
        return Kind.REFUSED_BUT_OURS if error.ours else Kind.REFUSED
    if isinstance(error, exception.IronicUnavailable):
        return (Kind.UNREACHABLE_AFTER_SENDING if error.delivered
                else Kind.UNREACHABLE_BEFORE_SENDING)
    if isinstance(error, exception.InstanceDeployed):
        return Kind.DEPLOYED_ELSEWHERE
    if isinstance(error, exception.ClaimBeingCleared):
        return Kind.BEING_CLEARED
    return Kind.INTERRUPTED


def claiming_source():
    """The Ironic source when reservations claim their nodes there, or
    None."""
    if sources.configured().claims_in_ironic:
        return sources.ironic_source()
    return None


# Claims ---------------------------------------------------------------------

def _tries_next_node(failure):
    """A request is done with a failure that sends it to another node."""
    return failure.next_node


def _ended(failure):
    """The repair is done with a failure that ended the reservation."""
    return failure.reservation is END


def claim_new(source, reservation, info):
    """Claim in Ironic the node of ``reservation``, just made for a
    request (``info``: ``ironic.instance_info``); whether it is held.
    False: it is gone and the request tries another node (Ironic
    refused the node, or the reservation ended while being claimed).

    :raises: the failure, when FAILURES makes it the request's answer;
        the reservation is gone then too.
    """
    try:
        claims.claim(source, reservation.node_uuid,
                     reservation.instance_uuid, info)
    except BaseException as error:  # a stopping process too (INTERRUPTED)
        if not _after_failure(source, reservation, error,
                              settles=_tries_next_node,
                              announce=_refused(reservation)):
            raise
        return False
    return _still_live(source, reservation)


def claim_again(source, reservation, info):
    """Claim again the node of ``reservation``, found again for a retried
    request (its first answer may have been lost before the claim was
    made); whether it is held. False: it is gone and the request
    reserves another node.

    :raises: the failure, when FAILURES makes it the request's answer;
        the reservation stays unless FAILURES ends it (a failure of
        Ironic loses nothing: the next retry claims it).
        ClaimBeingCleared also when another process is clearing (or
        claiming) this very claim: nothing was sent.
    """
    return _claim_known(source, reservation, info,
                        settles=_tries_next_node,
                        announce=_refused(reservation))


def reclaim(source, reservation):
    """The worker's repair of a ``reserved`` reservation whose node
    Ironic shows free: claimed again; if Ironic will not have it, the
    reservation is ended as FAILURES says (its host gets 404 and
    reserves again). Another process on the same instance (its host's
    own request, most likely) leaves it for the next pass.

    :raises: the failures FAILURES keeps the reservation for: it stays,
        for the next pass.
    """
    try:
        held = _claim_known(
            source, reservation, {}, settles=_ended,
            announce=lambda error: _log_ended(
                reservation, 'Ironic refused to claim it again: %s' % error))
    except exception.ClaimBeingCleared as error:
        LOG.info('Reservation %s: %s', reservation.uuid, error.detail)
        return
    if held:
        LOG.warning('Reservation %s: node %s had lost its claim for '
                    'instance %s in Ironic; claimed it again.',
                    reservation.uuid, reservation.node_uuid,
                    reservation.instance_uuid)


def _claim_known(source, reservation, info, settles, announce):
    """Claim again, under a clearing row of its own (``claims.guard``),
    the node of ``reservation``, which others know and may end
    meanwhile; as ``_after_failure`` for ``settles`` and ``announce``.
    Whether it is held; False when it is gone.
    """
    guard = claims.guard(reservation.node_uuid, reservation.instance_uuid)
    try:
        with guard.leased():
            claims.claim(source, reservation.node_uuid,
                         reservation.instance_uuid, info)
    except BaseException as error:  # a stopping process too (INTERRUPTED)
        if not _after_failure(source, reservation, error, guard=guard,
                              settles=settles, announce=announce):
            raise
        return False
    if not _still_live(source, reservation):
        return False
    guard.finish()
    return True


def _after_failure(source, reservation, error, settles, announce,
                   guard=None):
    """Do what FAILURES says of ``error``, raised while claiming the node
    of ``reservation``: a new reservation, or, under ``guard``, one
    others know. The row alone decides how the reservation ends.

    Whether the caller is done with the failure (``settles(failure)``),
    rather than raising it; if so and the reservation was ended here,
    ``announce(error)`` says so before its claim is cleared.
    """
    failure = FAILURES[kind_of(error)]
    if guard is not None and failure.clear is NEVER:
        guard.finish()
    elif guard is not None and failure.clear is LATER:
        guard.postpone(error)
    ends = guard is None or failure.reservation is END
    settled = settles(failure)
    if ends and _end(reservation, failure) and settled:
        announce(error)
    if failure.clear is NOW:
        claims.clear_quietly(source, reservation.node_uuid,
                             reservation.instance_uuid)
    if isinstance(error, exception.IronicUnavailable):
        inventory_sync.note_outage(error)
    return settled


def _end(reservation, failure):
    """Take back ``reservation`` as ``failure`` (a row of FAILURES) says;
    whether it was still there to take back."""
    return db_reservations.undo_reservation(reservation,
                                            _ending_after(failure))


def _ending_after(failure):
    """The Ending of a reservation that ``failure`` (a row of FAILURES)
    ends: the row's, and nothing else."""
    return Ending(failure.stale, _CLEAR_REQUESTS[failure.clear](),
                  _BUILT_HERE)


_CLEAR_REQUESTS = {
    NOW: claims.clear_now,
    LATER: functools.partial(claims.clear_later, claims.UNCERTAIN_DELAY),
    NEVER: lambda: None,
}
"""How ending a reservation asks for each Clear, in its transaction."""


def _refused(reservation):
    """What a request says of a node Ironic would not give it."""

    def announce(error):
        reason = error.kwargs['reason']
        LOG.info('Ironic refused node %s for instance %s: %s; trying the '
                 'next.', reservation.node_uuid, reservation.instance_uuid,
                 reason)
        notifications.ironic_claim_conflict(reservation, reason)
    return announce


def _still_live(source, reservation):
    """After claiming the node of ``reservation`` (as read before the
    claim): whether it is still live. If it ended meanwhile (released,
    expired, ended by the worker's repair while the claim was on its
    way), the claim just made is cleared again: it never outlives its
    reservation, and no answer hands out a reservation that ended.
    """
    live = db_reservations.get_live_reservation_for_instance(
        reservation.instance_uuid)
    if live is not None and live.uuid == reservation.uuid:
        return True
    LOG.info('Reservation %s ended while node %s was being claimed for '
             'it; clearing that claim.', reservation.uuid,
             reservation.node_uuid)
    db_inventory.request_claim_to_clear(
        reservation.node_uuid, reservation.instance_uuid, claims.clear_now())
    claims.clear_quietly(source, reservation.node_uuid,
                         reservation.instance_uuid)
    return False


# Ends -----------------------------------------------------------------------

def release(uuid, check, announce):
    """End the reservation ``uuid`` once ``check`` accepts it (called with
    the reservation as read in the transaction that deletes it; what it
    raises deletes nothing); ``announce(reservation)`` once that is
    committed. See ``_ending_of_release`` for its node and its claim.

    :raises: ReservationNotFound; what ``check`` raises.
    """
    source = claiming_source()
    reservation = db_reservations.delete_reservation_by_uuid(
        uuid, check, _ending_of_release(source, claims.clear_now()))
    announce(reservation)
    _clear_released(source, reservation)


def release_record(reservation, announce):
    """``release`` for ``reservation`` as read (a ReservationRecord),
    without a check.

    :raises: ReservationNotFound when it is gone already.
    """
    source = claiming_source()
    db_reservations.delete_reservation(
        reservation, _ending_of_release(source, claims.clear_now()))
    announce(reservation)
    _clear_released(source, reservation)


def expire(older_than):
    """End every ``reserved`` reservation made before ``older_than``;
    them, as they now are. Their claims are left for a worker.

    :raises: DBError
    """
    ending = _ending_of_release(claiming_source(), claims.clear_later())
    return db_reservations.expire_reservations(older_than, ending)


def unpin(pins, reclaimed_from=None):
    """Free ``pins`` (a hold's, which no boot has taken meanwhile) at
    once: nothing was deployed on their nodes or claimed in Ironic.
    With ``reclaimed_from`` (a hold id), count them as given back by
    that hold, in the same transaction. Returns those freed.

    :raises: DBError
    """
    return db_reservations.delete_pins(
        pins, reclaimed_from, Ending(False, None, _BUILT_HERE))


def end_contradicted(reservation, reason):
    """End ``reservation``, which Ironic contradicts (``reason``, in
    words: its node gone, or another instance on it) as a node Ironic
    refuses (FAILURES): its node left for a sync, nothing of ours to
    clear."""
    if _end(reservation, FAILURES[Kind.REFUSED]):
        _log_ended(reservation, reason)


def _ending_of_release(source, clear_request):
    """The Ending of a release or an expiry: its node free at once, or,
    with a source whose released nodes are stale, once a sync reads it
    again (it may be cleaning); and with ``source`` (claims in Ironic)
    its claim asked to be cleared, as ``clear_request`` says, in the
    same transaction: Ironic unreachable changes nothing here."""
    return Ending(sources.configured().released_nodes_stale,
                  clear_request if source is not None else None,
                  _BUILT_HERE)


def _clear_released(source, reservation):
    """Clear an ended reservation's claim in Ironic now if Ironic
    answers, and if still ours and nothing was deployed (a teardown
    clears it itself); otherwise a worker does once it does."""
    if source is not None:
        claims.clear_quietly(source, reservation.node_uuid,
                             reservation.instance_uuid)


def _log_ended(reservation, reason):
    LOG.error('Ended reservation %s of instance %s on host %s: it held '
              'node %s, but %s.', reservation.uuid,
              reservation.instance_uuid, reservation.host,
              reservation.node_uuid, reason)
