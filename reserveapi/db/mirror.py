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

"""The aggregate mirror's desired state and its retry queue.

One row per (aggregate, host): whether the host should be a member, a
version that grows with every change of mind, and the progress of
making Placement agree. Rows are leased in the database, so any number
of API processes and workers may apply them.
"""

import datetime

from oslo_utils import timeutils
import sqlalchemy as sa

from reserveapi.common import exception
from reserveapi.common import states
from reserveapi.db import base
from reserveapi.db import leases
from reserveapi.db import models
from reserveapi.db import records

_ERROR_LENGTH = 2000
_LEASE = leases.Lease(models.MirrorHost)


def _locked_aggregate(session, uuid, now):
    """The aggregate's row, created on first sight, locked until commit
    so that a purge and a host joining it never interleave.
    """
    aggregate = session.scalars(
        sa.select(models.MirrorAggregate)
        .where(models.MirrorAggregate.uuid == uuid)
        .with_for_update()).first()
    if aggregate is None:
        aggregate = models.MirrorAggregate(uuid=uuid, deleted=False,
                                           created_at=now)
        session.add(aggregate)
        session.flush()
    return aggregate


def _set_desired(row, member, now, holder, until):
    """Make ``row`` pending for ``member``; a flip is a new version whose
    attempts start over.
    """
    if row.member != member:
        row.member = member
        row.version += 1
        row.attempts = 0
        row.last_error = None
    if row.state != states.PENDING or row.pending_since is None:
        row.pending_since = now
    row.state = states.PENDING
    row.next_attempt_at = None
    _LEASE.hand(row, holder, until if holder else None)


@base.retrying(duplicates=True)
def set_membership(aggregate_uuid, host, member, holder=None,
                          until=None):
    """Record that ``host`` should (``member``) or should not be in the
    aggregate, pending until applied.

    The aggregate is recorded on first sight and revived when a host
    joins it after a delete. With ``holder`` the caller applies the
    row at once and takes it over from any worker, whose finish then
    finds the version or the lease changed; without, a worker takes it.

    :raises: DBError
    """
    now = timeutils.utcnow()
    with base.writer() as session:
        aggregate = _locked_aggregate(session, aggregate_uuid, now)
        if member:
            aggregate.deleted = False
        row = session.scalars(
            sa.select(models.MirrorHost)
            .where(models.MirrorHost.aggregate_id == aggregate.id,
                   models.MirrorHost.host == host)
            .with_for_update()).first()
        if row is None:
            row = models.MirrorHost(aggregate_id=aggregate.id, host=host,
                                    member=member, version=1, attempts=0,
                                    created_at=now)
            session.add(row)
        _set_desired(row, member, now, holder, until)
        session.flush()
        return records.mirror_host_record(row, aggregate_uuid)


@base.retrying(duplicates=True)
def delete_aggregate(aggregate_uuid, holder=None,
                            until=None):
    """Mark the aggregate deleted and every host as leaving it.

    The row stays, so that its UUID is still known as ours wherever it
    remains in Placement, until a reconcile finds it gone everywhere.
    Returns the hosts that still have to leave, leased as by
    ``set_membership``.

    :raises: DBError
    """
    now = timeutils.utcnow()
    host = models.MirrorHost
    with base.writer() as session:
        aggregate = _locked_aggregate(session, aggregate_uuid, now)
        aggregate.deleted = True
        rows = session.scalars(
            sa.select(host)
            .where(host.aggregate_id == aggregate.id,
                   sa.or_(host.member.is_(True),
                          host.state == states.PENDING))
            .order_by(host.host)
            .with_for_update()).all()
        for row in rows:
            _set_desired(row, False, now, holder, until)
        session.flush()
        return [records.mirror_host_record(row, aggregate_uuid)
                for row in rows]


def _host_rows(session, aggregate_id):
    return session.scalars(
        sa.select(models.MirrorHost)
        .where(models.MirrorHost.aggregate_id == aggregate_id)
        .order_by(models.MirrorHost.host)
        .with_for_update()).all()


@base.retrying(duplicates=True)
def follow_membership(aggregate_uuid, host, member, seen):
    """``set_membership`` for a worker, unless the row was written since
    it was read: ``seen`` is the row's ``seen`` as read, None when there
    was no row. True if recorded.

    Nova's answer is older than anything recorded after it was read: a
    change nova-api's hook reported meanwhile is never overwritten with
    it.

    :raises: DBError
    """
    now = timeutils.utcnow()
    with base.writer() as session:
        aggregate = _locked_aggregate(session, aggregate_uuid, now)
        rows = {row.host: row for row in _host_rows(session, aggregate.id)}
        row = rows.get(host)
        if _seen(row) != seen:
            return False
        if row is None:
            row = models.MirrorHost(aggregate_id=aggregate.id, host=host,
                                    member=member, version=1, attempts=0,
                                    created_at=now)
            session.add(row)
        if member:
            aggregate.deleted = False
        _set_desired(row, member, now, None, None)
        return True


@base.retrying(duplicates=True)
def follow_deletion(aggregate_uuid, seen):
    """``delete_aggregate`` for a worker, unless its rows were written
    since they were read (``seen``: host → the row's ``seen``, for every
    row). True if recorded.

    :raises: DBError
    """
    now = timeutils.utcnow()
    with base.writer() as session:
        aggregate = _locked_aggregate(session, aggregate_uuid, now)
        rows = _host_rows(session, aggregate.id)
        if {row.host: _seen(row) for row in rows} != seen:
            return False
        aggregate.deleted = True
        for row in rows:
            if row.member or row.state == states.PENDING:
                _set_desired(row, False, now, None, None)
        return True


def _seen(row):
    return None if row is None else (row.version, row.updated_at)


@base.retrying(duplicates=True)
def record_aggregates(uuids):
    """Know these aggregates as ours and alive: a full desired state
    (Nova's list, an operator's file) names them.

    :raises: DBError
    """
    now = timeutils.utcnow()
    with base.writer() as session:
        for uuid in uuids:
            _locked_aggregate(session, uuid, now).deleted = False


def _leased_hosts(session, holder, ids):
    """Those of ``ids`` that ``holder`` holds."""
    rows = session.execute(
        sa.select(models.MirrorHost, models.MirrorAggregate.uuid)
        .join(models.MirrorAggregate)
        .where(models.MirrorHost.id.in_(ids), _LEASE.held_by(holder))
        .order_by(models.MirrorHost.id))
    return [records.mirror_host_record(row, uuid) for row, uuid in rows]


def lease_hosts(holder, until, limit, now=None):
    """Lease up to ``limit`` pending rows that are due and not leased.

    The UPDATE repeats the conditions of the SELECT, and the database
    serializes writes to a row: of several workers racing for a row,
    the first to commit gets it and the others' UPDATE skips it. A
    worker that lost every row it selected looks again, in a new
    transaction, so that it only comes back empty-handed when nothing
    is due.

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    while True:
        selected, leased = _lease_hosts(holder, until,
                                                limit, now)
        if leased or not selected:
            return leased


@base.retrying()
def _lease_hosts(holder, until, limit, now):
    host = models.MirrorHost
    due = sa.and_(host.state == states.PENDING,
                  sa.or_(host.next_attempt_at.is_(None),
                         host.next_attempt_at <= now))
    with base.writer() as session:
        ids = session.scalars(sa.select(host.id).where(due, _LEASE.free(now))
                              .order_by(host.id).limit(limit)).all()
        if not ids:
            return 0, []
        _LEASE.take(session, holder, until, now,
                    host.id.in_(ids), due)
        return len(ids), _leased_hosts(session, holder, ids)


@base.retrying()
def lease_host(host_id, version, holder, until,
                      now=None):
    """Make one row pending and lease it, because Placement was found to
    disagree with it; None if it changed since it was read (``version``)
    or someone else is applying it.

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    host = models.MirrorHost
    with base.writer() as session:
        leased = _LEASE.take(
            session, holder, until, now,
            host.id == host_id, host.version == version,
            state=states.PENDING,
            pending_since=sa.func.coalesce(host.pending_since, now))
        if not leased:
            return None
        (record,) = _leased_hosts(session, holder, [host_id])
        return record


@base.retrying(duplicates=True)
def renew_leases(holder, seconds, now=None):
    """Extend every lease ``holder`` still holds by ``seconds``
    (a heartbeat: a worker that dies stops renewing, and its rows are
    taken over soon after).

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    with base.writer() as session:
        _LEASE.renew(session, holder,
                     now + datetime.timedelta(seconds=seconds))


@base.retrying()
def finish_host(host_id, version, holder, error=None, retry_at=None):
    """Record the outcome of applying ``version`` of a row; returns the
    row as it now is (None if it was purged meanwhile).

    If the desired state changed meanwhile, what the caller wrote may
    have landed after the newer change: the row goes back to pending,
    not leased and due at once, so that the newest state is written last
    (whoever is applying it now loses the lease and does not mark it
    synced). Otherwise the outcome counts only while the caller still
    holds the lease: ``error`` schedules a retry at ``retry_at``.

    :raises: DBError
    """
    now = timeutils.utcnow()
    host = models.MirrorHost
    with base.writer() as session:
        overtaken = session.execute(
            sa.update(host)
            .where(host.id == host_id, host.version != version)
            .values(state=states.PENDING, next_attempt_at=None,
                    pending_since=sa.func.coalesce(host.pending_since, now),
                    **_LEASE.values())).rowcount
        if not overtaken:
            _record_outcome(session, host_id, version, holder, error,
                            retry_at, now)
        return _host(session, host_id)


def _record_outcome(session, host_id, version, holder, error, retry_at,
                    now):
    """Synced, or one more failed attempt; only for the lease's holder."""
    host = models.MirrorHost
    if error is None:
        outcome = {'state': states.SYNCED, 'attempts': 0,
                   'last_error': None, 'next_attempt_at': None,
                   'pending_since': None, 'synced_at': now}
    else:
        outcome = {'attempts': host.attempts + 1,
                   'last_error': error[:_ERROR_LENGTH],
                   'next_attempt_at': retry_at}
    _LEASE.drop(session, holder, host.id == host_id,
                host.version == version, **outcome)


def _host(session, host_id):
    row = session.execute(
        sa.select(models.MirrorHost, models.MirrorAggregate.uuid)
        .join(models.MirrorAggregate)
        .where(models.MirrorHost.id == host_id)).first()
    return records.mirror_host_record(*row) if row is not None else None


def get_aggregate(uuid):
    """The aggregate with every host row.

    :raises: AggregateNotFound
    """
    with base.reader() as session:
        aggregate = session.scalars(
            sa.select(models.MirrorAggregate)
            .where(models.MirrorAggregate.uuid == uuid)).first()
        if aggregate is None:
            raise exception.AggregateNotFound(aggregate=uuid)
        return records.mirror_aggregate_record(aggregate)


def list_aggregates(limit=None, marker=None, sort_key='uuid',
                           sort_dir='asc'):
    """Aggregates with all their host rows, deleted ones included.

    :raises: Invalid for an unknown marker.
    """
    with base.reader() as session:
        query = base.paginate(session, sa.select(models.MirrorAggregate),
                              models.MirrorAggregate, limit, sort_key,
                              sort_dir, marker)
        return [records.mirror_aggregate_record(aggregate)
                for aggregate in session.scalars(query)]


@base.retrying()
def purge_aggregate(uuid, now=None):
    """Forget a deleted aggregate nobody is still leaving; True if done.

    Callers purge only after finding no provider in the aggregate, so
    ownership ends when nothing of it is left in Placement.

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    host = models.MirrorHost
    with base.writer() as session:
        aggregate_id = session.scalar(
            sa.select(models.MirrorAggregate.id)
            .where(models.MirrorAggregate.uuid == uuid,
                   models.MirrorAggregate.deleted.is_(True))
            .with_for_update())
        if aggregate_id is None:
            return False
        busy = session.scalar(
            sa.select(host.id)
            .where(host.aggregate_id == aggregate_id,
                   sa.or_(host.member.is_(True),
                          host.state == states.PENDING,
                          sa.not_(_LEASE.free(now))))
            .limit(1))
        if busy is not None:
            return False
        session.execute(sa.delete(host).where(
            host.aggregate_id == aggregate_id))
        session.execute(sa.delete(models.MirrorAggregate).where(
            models.MirrorAggregate.id == aggregate_id))
        return True


def count_leases(now=None):
    """``(alive, dead)`` leases on rows, as ``leases.Lease.count``
    counts them.

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    with base.reader() as session:
        return _LEASE.count(session, now)


def get_status():
    """Row counts per state, and the row pending the longest (or None).

    :raises: DBError
    """
    host = models.MirrorHost
    with base.reader() as session:
        counts = dict(session.execute(
            sa.select(host.state, sa.func.count(host.id))
            .group_by(host.state)).all())
        oldest = session.execute(
            sa.select(host, models.MirrorAggregate.uuid)
            .join(models.MirrorAggregate)
            .where(host.state == states.PENDING)
            .order_by(host.pending_since, host.id)
            .limit(1)).first()
        return {'pending': counts.get(states.PENDING, 0),
                'synced': counts.get(states.SYNCED, 0),
                'oldest_pending': (records.mirror_host_record(*oldest)
                                   if oldest is not None else None)}
