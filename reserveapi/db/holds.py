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

"""Holds, and the guard row that serializes the writers who decide by
them.

Every admission decides inside a transaction that first moves the one
``hold_guard`` row on (``create_hold``, ``update_hold``): admissions
take turns on the row, and what each decides inside it (the callable it
is given) reads what the one before committed. Galera certifies writes,
so they take turns across its nodes too.

A reservation decides before its transaction, from the holds it read
with the guard's version (``live_holds``). One that takes a node some
hold could use moves the guard on from that version in its transaction
(reservations.create_reservation), else HoldsChanged: it read again and
decides again. Any other reservation's INSERT goes ahead only while the
guard is still at its version, and locks the row for share meanwhile
(``at_version``): such reservations never wait for each other, only for
an admission or a reservation taking its turn. On Galera that lock is
its node's alone: a reservation on one node and an admission on another
at the same instant can both commit.

Times are naive UTC, as the schema stores them.
"""

import collections
import json

from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from reserveapi.common import exception
from reserveapi.common import states
from reserveapi.db import base
from reserveapi.db import matching
from reserveapi.db import models
from reserveapi.db import records

GUARD_ID = 1
"""The guard's one row. Until a writer inserts it, no row reads as
version 0."""


def _ensure_guard():
    """Insert the guard row unless it is there, in a transaction of its
    own: from its commit on, every reservation locks it (at_version)."""
    guard = models.HoldGuard
    with base.writer() as session:
        if session.scalar(sa.select(guard.id).where(guard.id == GUARD_ID)):
            return
        try:
            session.execute(sa.insert(guard).values(id=GUARD_ID, version=0))
        except db_exc.DBDuplicateEntry:
            pass  # a concurrent first writer's


def bump_guard(session, version=None):
    """Move the guard on by one in ``session``'s transaction; with
    ``version``, only from that version. From here to its commit, the
    others that bump it or lock it wait.

    :raises: HoldsChanged when the guard is not at ``version``, or not
        there at all (a writer that saw holds raced their removal)
    """
    guard = models.HoldGuard
    at = [guard.id == GUARD_ID]
    if version is not None:
        at.append(guard.version == version)
    if not session.execute(sa.update(guard).where(*at).values(
            version=guard.version + 1)).rowcount:
        raise exception.HoldsChanged()


def at_version(version):
    """A clause true while the guard is at ``version`` (a bound
    parameter; no row is version 0), which locks the row for share until
    the statement's transaction ends: a reservation that decided from
    ``version`` waits for an admission under way, then sees it moved on
    and inserts nothing. Shared, so reservations never wait for each
    other."""
    guard = models.HoldGuard
    return sa.func.coalesce(
        sa.select(guard.version).where(guard.id == GUARD_ID)
        .with_for_update(read=True).scalar_subquery(), 0) == version


def current_version(session):
    guard = models.HoldGuard
    return session.scalar(
        sa.select(guard.version).where(guard.id == GUARD_ID)) or 0


def _select(*criteria):
    hold = models.Hold
    return sa.select(*[getattr(hold, column)
                       for column in records.HOLD_COLUMNS]).where(*criteria)


def _select_one(session, uuid):
    row = session.execute(_select(models.Hold.uuid == uuid)).first()
    if row is None:
        raise exception.HoldNotFound(hold=uuid)
    return records.hold_record(row)


def _stored(values):
    """``values`` as the columns store them: the spec in JSON."""
    if 'request_spec' not in values:
        return dict(values)
    return dict(values, request_spec=json.dumps(values['request_spec']))


@base.retrying(patient=True)
def create_hold(values, admit):
    """Store the hold ``values`` (every column but the timestamps;
    ``request_spec`` a dict) once ``admit()``, called inside the
    transaction after the guard moved on, has not raised.

    :raises: what ``admit`` raises (nothing stored); DBError
    """
    row = dict(_stored(values), created_at=timeutils.utcnow())
    _ensure_guard()
    with base.writer() as session:
        bump_guard(session)
        admit()
        session.execute(sa.insert(models.Hold).values(**row))
        return _select_one(session, row['uuid'])


def _cancelled(uuid):
    return exception.Conflict(reason='hold %s is cancelled' % uuid)


@base.retrying(patient=True)
def update_hold(uuid, values, admit=None):
    """Change the hold ``uuid`` as ``values`` say (``end_at``,
    ``busy_until``, ``amount`` ...) once ``admit()``, if given, called
    inside the transaction after the guard moved on, has not raised.

    :raises: HoldNotFound; Conflict when it is cancelled; what ``admit``
        raises (nothing written)
    """
    hold = models.Hold
    row = dict(_stored(values), updated_at=timeutils.utcnow())
    _ensure_guard()
    with base.writer() as session:
        bump_guard(session)
        if _select_one(session, uuid).cancelled_at is not None:
            raise _cancelled(uuid)
        if admit is not None:
            admit()
        updated = session.execute(
            sa.update(hold).where(hold.uuid == uuid,
                                  hold.cancelled_at.is_(None))
            .values(**row)).rowcount
        if not updated:
            raise _cancelled(uuid)  # meanwhile
        return _select_one(session, uuid)


@base.retrying()
def cancel_hold(uuid, now):
    """Cancel the hold ``uuid`` at ``now``; one cancelled already stays
    as it is. Returns it. The guard stays: a hold gone leaves every
    other one better off.

    :raises: HoldNotFound
    """
    hold = models.Hold
    with base.writer() as session:
        session.execute(
            sa.update(hold).where(hold.uuid == uuid,
                                  hold.cancelled_at.is_(None))
            .values(cancelled_at=now, updated_at=now))
        return _select_one(session, uuid)


def get_hold(uuid):
    """:raises: HoldNotFound"""
    with base.reader() as session:
        return _select_one(session, uuid)


def list_holds(filters=None, limit=None, marker=None, sort_key='created_at',
               sort_dir='asc'):
    """Holds matching equality ``filters`` (``project_id``,
    ``resource_class``), cancelled ones included.

    :raises: Invalid for an unknown marker.
    """
    hold = models.Hold
    query = _select(*[getattr(hold, column) == value
                      for column, value in (filters or {}).items()])
    with base.reader() as session:
        query = base.paginate(session, query, hold, limit, sort_key,
                              sort_dir, marker)
        return [records.hold_record(row) for row in session.execute(query)]


def live_holds(now):
    """``(version, holds)``: the guard's version and the holds still to
    keep at ``now`` (not cancelled, their busy window not over), by the
    start of that window.

    One statement, so both come from one snapshot; every reservation
    reads it, and on PostgreSQL it runs as its own transaction
    (base.one_statement): one round trip.

    :raises: DBError
    """
    guard, hold = models.HoldGuard, models.Hold
    version = sa.select(sa.func.coalesce(sa.func.max(guard.version), 0)
                        .label('guard_version')).subquery()
    query = (sa.select(version.c.guard_version,
                       *[getattr(hold, column)
                         for column in records.HOLD_COLUMNS])
             .select_from(version.outerjoin(hold, sa.and_(
                 hold.cancelled_at.is_(None), hold.busy_until > now)))
             .order_by(hold.busy_from, hold.id))
    with base.reader() as session:
        with base.one_statement(session) as connection:
            rows = connection.execute(query).all()
    return rows[0].guard_version, [
        records.hold_record(row) for row in rows if row.uuid is not None]

def add_reclaimed(session, hold_id, count):
    """Count ``count`` more pins of hold ``hold_id`` as given back, in
    ``session``'s transaction (the one that deleted them). A hold that
    shrinks leaves every other better off: the guard stays."""
    hold = models.Hold
    session.execute(sa.update(hold).where(hold.id == hold_id).values(
        reclaimed=hold.reclaimed + count, updated_at=timeutils.utcnow()))


@base.retrying()
def set_hold_fields(uuid, values):
    """Write what tending a hold found (``shortfall``, ``flavor_id``):
    none of it changes what the hold asks of the others, so the guard
    stays.

    :raises: DBError
    """
    hold = models.Hold
    with base.writer() as session:
        session.execute(sa.update(hold).where(hold.uuid == uuid).values(
            dict(values, updated_at=timeutils.utcnow())))


@base.retrying()
def mark(uuid, column, now):
    """Set the hold's ``column`` (``warned_at``, ``finished_at``) to
    ``now`` unless it is set already; whether this call set it. Workers
    may tend the same hold at once: only the one that marks it sends
    the event.

    :raises: DBError
    """
    hold = models.Hold
    with base.writer() as session:
        return bool(session.execute(
            sa.update(hold).where(hold.uuid == uuid,
                                  getattr(hold, column).is_(None))
            .values({column: now, 'updated_at': now})).rowcount)


def unfinished_holds():
    """Every hold whose end has not been carried out yet, cancelled
    ones included, oldest first: what the worker tends.

    :raises: DBError
    """
    hold = models.Hold
    with base.reader() as session:
        return [records.hold_record(row) for row in session.execute(
            _select(hold.finished_at.is_(None)).order_by(hold.id))]


def holds_in_use():
    """The holds whose boots still have nodes, ended ones included
    (their instances kept): their class stays in Placement while an
    allocation uses it.

    :raises: DBError
    """
    hold, reservation = models.Hold, models.Reservation
    booted = (sa.select(reservation.hold_id)
              .where(reservation.hold_id.is_not(None),
                     reservation.state.in_(states.LIVE)).distinct())
    with base.reader() as session:
        return [records.hold_record(row) for row in session.execute(
            _select(hold.id.in_(booted)).order_by(hold.id))]


def usage(hold_ids, host=None):
    """``{hold id: (pinned, in use, in use on host)}`` for
    ``hold_ids``: its pins no boot has taken, its boots' live
    reservations, and those of them ``host`` made (0 without a host).
    One grouped read of the (hold_id, state) index.

    :raises: DBError
    """
    reservation = models.Reservation
    found = {hold_id: [0, 0, 0] for hold_id in hold_ids}
    if not found:
        return {}
    with base.reader() as session:
        rows = session.execute(
            sa.select(reservation.hold_id, reservation.state,
                      reservation.host == host, sa.func.count())
            .where(reservation.hold_id.in_(list(found)),
                   reservation.active_node_id.is_not(None))
            .group_by(reservation.hold_id, reservation.state,
                      reservation.host == host))
        for hold_id, state, on_host, count in rows:
            counts = found[hold_id]
            if state == states.PINNED:
                counts[0] += count
            else:
                counts[1] += count
                counts[2] += count if on_host and host else 0
    return {hold_id: tuple(counts) for hold_id, counts in found.items()}


def project_reservations_since(project_id, since, ordinary=False):
    """The nodes held by live reservations of ``project_id`` made at or
    after ``since``: the project's boots during its hold, which fill it.
    ``ordinary``: only those not made through a hold (no pins, no boots
    of a hold's class).

    Each a NodeRecord without its reservation, as a candidate is, for
    the matcher to check against the hold's spec; by id.

    :raises: DBError
    """
    node, reservation = models.Node, models.Reservation
    query = (sa.select(node)
             .join(reservation, matching.live_reservation_join())
             .where(reservation.project_id == project_id,
                    reservation.created_at >= since)
             .order_by(node.id))
    if ordinary:
        query = query.where(reservation.hold_id.is_(None))
    with base.reader() as session:
        return [records.node_record(row) for row in session.scalars(query)]


def count_live_by_state(now):
    """``{'pending': n, 'active': n, 'ended': n}``: the holds still to
    keep at ``now`` (as live_holds) by where ``now`` falls in their
    unpadded window: before it, in it, or in the cleaning padding after
    it. One read of the live holds' index, for monitoring.

    :raises: DBError
    """
    hold = models.Hold
    states = {
        'pending': hold.start_at > now,
        'active': sa.and_(hold.start_at <= now, hold.end_at > now),
        'ended': hold.end_at <= now,
    }
    query = sa.select(*[
        sa.func.sum(sa.case((clause, 1), else_=0)).label(state)
        for state, clause in states.items()]).where(
        hold.cancelled_at.is_(None), hold.busy_until > now)
    with base.reader() as session:
        row = session.execute(query).one()._mapping
        # SUM is NULL without rows, and a Decimal on some backends.
        return {state: int(row[state] or 0) for state in states}


def count_hold_nodes(now):
    """``({'pinned': n, 'in_use': n}, shortfall)``: the nodes pinned for
    holds and waiting for a boot, those their boots have, and how many
    nodes the running holds' last pinning could not find. For
    monitoring: a read of the (hold_id, state) index and of the holds
    still to keep.

    :raises: DBError
    """
    reservation, hold = models.Reservation, models.Hold
    with base.reader() as session:
        counts = dict(session.execute(
            sa.select(reservation.state == states.PINNED, sa.func.count())
            .where(reservation.hold_id.is_not(None),
                   reservation.active_node_id.is_not(None))
            .group_by(reservation.state == states.PINNED)).all())
        shortfall = session.scalar(
            sa.select(sa.func.sum(hold.shortfall)).where(
                hold.cancelled_at.is_(None), hold.start_at <= now,
                hold.end_at > now))
    return ({'pinned': int(counts.get(True, 0)),
             'in_use': int(counts.get(False, 0))}, int(shortfall or 0))


def promised(now):
    """``{resource class: nodes}`` that must stay free at ``now`` for the
    holds that have not started: per class, the most their busy windows
    ask at any one instant from now on. Read by admission.promised and
    by monitoring alike.

    :raises: DBError
    """
    _version, live = live_holds(now)
    by_class = collections.defaultdict(list)
    for hold in live:
        if hold.resource_class and now < hold.start_at:
            by_class[hold.resource_class].append(hold)
    return {resource_class: max(
        sum(hold.amount for hold in holds
            if hold.busy_from <= instant < hold.busy_until)
        for instant in {max(now, hold.busy_from) for hold in holds})
        for resource_class, holds in by_class.items()}
