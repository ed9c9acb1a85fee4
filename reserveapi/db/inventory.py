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

"""What every process shares about the inventory source: its sync state
(one ``inventory_syncs`` row per source: last passes, watermark, outage,
the sync lease) and the claims in Ironic left for the worker to clear.

All of it lives in the database, never in a process, so any number of
API processes and workers agree on it.
"""

import dataclasses
import datetime

from oslo_utils import timeutils
import sqlalchemy as sa

from reserveapi.db import base
from reserveapi.db import leases
from reserveapi.db import models
from reserveapi.db import nodes
from reserveapi.db import records

_SYNC_COLUMNS = ('source', 'synced_at', 'nodes', 'full_synced_at',
                 'watermark', 'location', 'outage_since', 'last_error',
                 'document_digest', 'nodes_digest')
_SYNC_LEASE = leases.Lease(models.InventorySync)
_CLEARING_LEASE = leases.Lease(models.ClaimToClear)


def get_inventory_sync(source):
    """Everything known about syncing ``source``, or None.

    :raises: DBError
    """
    table = models.InventorySync
    with base.reader() as session:
        row = session.execute(
            sa.select(*[getattr(table, column) for column in _SYNC_COLUMNS])
            .where(table.source == source)).first()
    if row is None:
        return None
    return records.InventorySyncRecord(**row._asdict())


def _ensure_row(session, source):
    """The source's row exists (with nothing synced yet).

    Two processes inserting it at once: the loser's transaction fails
    with DBDuplicateEntry and its caller (``base.retrying(duplicates=
    True)``) starts over, finding it.
    """
    table = models.InventorySync
    if session.scalar(sa.select(table.id).where(table.source == source)
                      ) is None:
        session.execute(sa.insert(table).values(source=source, nodes=0))


@base.retrying(duplicates=True)
def record_inventory_sync(source, nodes, started_at=None, full=True,
                          watermark=None, location=None, digests=None):
    """Note a complete pass over ``source`` that started reading at
    ``started_at``, after which the inventory held ``nodes`` nodes; it
    ends any outage. ``digests``: the document's and the node table's
    after the pass (a file). Returns when that outage began, or None.

    :raises: DBError
    """
    started_at = started_at or timeutils.utcnow()
    table = models.InventorySync
    values = {'synced_at': started_at, 'nodes': nodes, 'outage_since': None,
              'last_error': None}
    if full:
        values['full_synced_at'] = started_at
    if watermark is not None:
        values['watermark'] = watermark
    if location is not None:
        values['location'] = location[:255]
    if digests is not None:
        values['document_digest'], values['nodes_digest'] = digests
    with base.writer() as session:
        _ensure_row(session, source)
        outage = session.scalar(sa.select(table.outage_since).where(
            table.source == source))
        session.execute(sa.update(table).where(table.source == source)
                        .values(**values))
    return outage


@base.retrying(duplicates=True)
def note_outage(source, error, now=None):
    """Note that ``source`` cannot be read; True if this began the outage
    (so that it is logged once, whichever process saw it first).

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    table = models.InventorySync
    with base.writer() as session:
        _ensure_row(session, source)
        began = session.execute(
            sa.update(table).where(table.source == source,
                                   table.outage_since.is_(None))
            .values(outage_since=now, last_error=error[:2000])).rowcount
    return bool(began)


@base.retrying(duplicates=True)
def take_sync_lease(source, holder, seconds, now=None):
    """Become the one process syncing ``source`` for ``seconds``, unless
    another holds an unexpired lease; True if taken (or renewed).

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    table = models.InventorySync
    with base.writer() as session:
        _ensure_row(session, source)
        taken = _SYNC_LEASE.take(
            session, holder, now + datetime.timedelta(seconds=seconds), now,
            table.source == source)
    return bool(taken)


@base.retrying(duplicates=True)
def drop_sync_lease(source, holder):
    """:raises: DBError"""
    with base.writer() as session:
        _SYNC_LEASE.drop(session, holder,
                         models.InventorySync.source == source)


def count_leases(now=None):
    """``{'inventory_sync': (alive, dead), 'ironic_release': (alive,
    dead)}``: the sync's lease and the leases on claims being cleared,
    as ``leases.Lease.count`` counts them (the keys are the metric's
    label values, kept from when clearing was called a release).

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    with base.reader() as session:
        return {'inventory_sync': _SYNC_LEASE.count(session, now),
                'ironic_release': _CLEARING_LEASE.count(session, now)}


# Claims of ours in Ironic to clear ------------------------------------------

def _pair_to_clear(node_uuid, instance_uuid):
    table = models.ClaimToClear
    return (table.node_uuid == node_uuid,
            table.instance_uuid == instance_uuid)


@dataclasses.dataclass(frozen=True)
class ClearRequest:
    """How ending a reservation asks for its claim in Ironic to be
    cleared: by the caller itself right after committing (``holder``,
    with a lease of ``lease_seconds``), or by a worker ``delay`` seconds
    from now."""

    holder: str | None = None
    lease_seconds: float | None = None
    delay: float = 0


def add_claim_to_clear(session, node_uuid, instance_uuid, now, request):
    """Ask, in the caller's transaction, for ``instance_uuid``'s claim on
    ``node_uuid`` in Ironic to be cleared, as ``request`` (a
    ClearRequest) says; the node is not offered until it is.

    A request for a pair already waiting counts as a new one
    (``generation``), so that a clear under way, which may have read
    Ironic before this request's reason arose, does not end it. The row
    is updated, or inserted when the update finds none: never read
    first, since a row read may be gone by the update (the guard of a
    claim made again, finished meanwhile by a process that found the
    reservation still standing), and this request would then leave no
    row, and the claim in Ironic, behind. Two processes inserting the
    same pair at once: the loser's transaction fails with
    DBDuplicateEntry, for its caller to retry.
    """
    table = models.ClaimToClear
    due = now + datetime.timedelta(seconds=request.delay)
    until = None
    if request.holder is not None:
        until = now + datetime.timedelta(seconds=request.lease_seconds)
    pair = _pair_to_clear(node_uuid, instance_uuid)
    nodes.mark_stale_by_uuid(session, node_uuid, now)
    if not session.execute(sa.update(table).where(*pair).values(
            generation=table.generation + 1, next_attempt_at=due,
            updated_at=now)).rowcount:
        _insert_claim_to_clear(
            session, node_uuid, instance_uuid, now, next_attempt_at=due,
            **_CLEARING_LEASE.values(request.holder, until))
        return
    if request.holder is not None:
        _CLEARING_LEASE.take(session, request.holder, until, now, *pair)


@base.retrying(duplicates=True)
def request_claim_to_clear(node_uuid, instance_uuid, request):
    """add_claim_to_clear in a transaction of its own.

    :raises: DBError
    """
    with base.writer() as session:
        add_claim_to_clear(session, node_uuid, instance_uuid,
                           timeutils.utcnow(), request)


@base.retrying(duplicates=True)
def take_claim_to_clear(node_uuid, instance_uuid, holder, lease_seconds,
                        now=None):
    """Become (or stay) the one process clearing the pair's claim for
    ``lease_seconds``; the row's generation, or None when there is no
    such row or another process holds its lease.

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    with base.writer() as session:
        return _take_claim_to_clear(
            session, _pair_to_clear(node_uuid, instance_uuid), holder,
            now + datetime.timedelta(seconds=lease_seconds), now)


def _insert_claim_to_clear(session, node_uuid, instance_uuid, now, **values):
    session.execute(sa.insert(models.ClaimToClear).values(
        node_uuid=node_uuid, instance_uuid=instance_uuid, attempts=0,
        created_at=now, generation=0, **values))


def _take_claim_to_clear(session, pair, holder, until, now, **values):
    """Lease the pair's row to ``holder`` (``values`` with it) unless a
    live process holds it; its generation, or None."""
    if not _CLEARING_LEASE.take(session, holder, until, now, *pair,
                                **values):
        return None
    return session.scalar(sa.select(models.ClaimToClear.generation)
                          .where(*pair))


@base.retrying(duplicates=True)
def guard_ironic_claim(node_uuid, instance_uuid, holder, lease_seconds,
                       delay, now=None):
    """Before the pair is claimed again for a reservation other processes
    may end meanwhile: a clearing row leased to ``holder`` for
    ``lease_seconds``, due ``delay`` seconds from now, which stands for
    the claim should ``holder`` die before it knows whether the
    reservation still stands. The row's generation, or None (nothing
    written) when another process holds its lease, clearing that claim
    or claiming it.

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    pair = _pair_to_clear(node_uuid, instance_uuid)
    until = now + datetime.timedelta(seconds=lease_seconds)
    due = now + datetime.timedelta(seconds=delay)
    with base.writer() as session:
        generation = _take_claim_to_clear(
            session, pair, holder, until, now, next_attempt_at=due,
            updated_at=now)
        if generation is None:
            if session.scalar(sa.select(models.ClaimToClear.id).where(
                    *pair)) is not None:
                return None
            _insert_claim_to_clear(
                session, node_uuid, instance_uuid, now, next_attempt_at=due,
                **_CLEARING_LEASE.values(holder, until))
            generation = 0
        # As for every clearing row: the node is not offered while it
        # stands (it is reserved anyway).
        nodes.mark_stale_by_uuid(session, node_uuid, now)
        return generation


@base.retrying(duplicates=True)
def renew_claim_to_clear(node_uuid, instance_uuid, holder, lease_seconds,
                         now=None):
    """Extend ``holder``'s lease; False if it no longer holds it.

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    with base.writer() as session:
        return bool(_CLEARING_LEASE.renew(
            session, holder, now + datetime.timedelta(seconds=lease_seconds),
            *_pair_to_clear(node_uuid, instance_uuid)))


def due_claims_to_clear(limit, now=None):
    """The claims to clear that are due and not being cleared, oldest
    first.

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    table = models.ClaimToClear
    with base.reader() as session:
        return [records.ClaimToClearRecord(
            id=row.id, node_uuid=row.node_uuid,
            instance_uuid=row.instance_uuid, attempts=row.attempts,
            next_attempt_at=row.next_attempt_at, last_error=row.last_error,
            created_at=row.created_at)
            for row in session.scalars(
                sa.select(table).where(table.next_attempt_at <= now,
                                       _CLEARING_LEASE.free(now))
                .order_by(table.next_attempt_at, table.id).limit(limit))]


@base.retrying(duplicates=True)
def finish_claim_to_clear(node_uuid, instance_uuid, holder, generation,
                          now=None):
    """``holder`` cleared the claim (or found it no longer ours to
    clear) while the row was at ``generation``: the row goes, and the
    node may be offered again. A request that came meanwhile keeps the
    row, due at once, for another pass. True if the row went.

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    table = models.ClaimToClear
    pair = _pair_to_clear(node_uuid, instance_uuid)
    with base.writer() as session:
        finished = session.execute(sa.delete(table).where(
            *pair, _CLEARING_LEASE.held_by(holder),
            table.generation == generation)).rowcount
        if not finished:
            _CLEARING_LEASE.drop(session, holder, *pair,
                                 next_attempt_at=now, updated_at=now)
    return bool(finished)


@base.retrying(duplicates=True)
def postpone_claim_to_clear(node_uuid, instance_uuid, holder, error,
                            next_attempt_at, now=None):
    """``holder`` could not clear the claim: its lease ends and the row is
    due again at ``next_attempt_at``.

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    table = models.ClaimToClear
    with base.writer() as session:
        _CLEARING_LEASE.drop(
            session, holder, *_pair_to_clear(node_uuid, instance_uuid),
            attempts=table.attempts + 1, last_error=error[:2000],
            next_attempt_at=next_attempt_at, updated_at=now)


def count_claims_to_clear():
    """:raises: DBError"""
    with base.reader() as session:
        return session.scalar(sa.select(sa.func.count()).select_from(
            models.ClaimToClear))


def claim_is_orphaned(node_uuid, instance_uuid):
    """Whether nothing of ours stands for the pair's claim in Ironic: no
    live reservation of the instance (on any node), and no clearing row
    for the pair (a clear under way, or a claim made again).

    :raises: DBError
    """
    clearing = models.ClaimToClear
    with base.reader() as session:
        return session.scalar(
            sa.select(models.Reservation.id).where(
                models.Reservation.active_instance_uuid == instance_uuid)
        ) is None and session.scalar(
            sa.select(clearing.id).where(
                *_pair_to_clear(node_uuid, instance_uuid))) is None


def holds_live(node_uuid, instance_uuid):
    """Whether a live reservation holds ``node_uuid`` for ``instance_uuid``.

    :raises: DBError
    """
    reservation, node = models.Reservation, models.Node
    with base.reader() as session:
        return session.scalar(
            sa.select(reservation.id).join(
                node, node.id == reservation.active_node_id)
            .where(node.uuid == node_uuid,
                   reservation.active_instance_uuid == instance_uuid)
        ) is not None
