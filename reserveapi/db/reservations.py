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

"""Reservations: one node held for one instance.

The unique live-node and live-instance columns are what makes a double
booking impossible, whatever the number of API processes.
"""

import functools

from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from reserveapi.common import exception
from reserveapi.common import states
from reserveapi.db import base
from reserveapi.db import holds
from reserveapi.db import inventory
from reserveapi.db import matching
from reserveapi.db import models
from reserveapi.db import nodes
from reserveapi.db import records

_RECORD_COLUMNS = ('uuid', 'instance_uuid', 'host', 'project_id', 'state',
                   'node_id', 'created_at', 'updated_at', 'expires_at',
                   'hold_id')


def _select_records(*criteria):
    """Reservations and their node's identity, in one Core query.

    The ORM would build objects and load each node's traits and
    capabilities too (two more queries) for three columns of the node.
    """
    reservation, node = models.Reservation, models.Node
    return sa.select(
        *[getattr(reservation, column) for column in _RECORD_COLUMNS],
        *_node_identity(),
    ).join_from(reservation, node, reservation.node_id == node.id).where(
        *criteria)


def _node_identity():
    """The node's columns of a reservation record."""
    node = models.Node
    return (node.uuid.label('node_uuid'), node.name.label('node_name'),
            node.resource_class)


def _record(row):
    return records.ReservationRecord(**row._asdict())


def _is_reservation_uuid():
    return models.Reservation.uuid == sa.bindparam('reservation_uuid')


# Reading and releasing one reservation is the hot path after reserving,
# and building a statement costs as much as running it: these are built
# once, with the uuid bound at execution, and run on the session's
# connection, past the ORM.

@functools.cache
def _select_by_uuid_statement():
    return _select_records(_is_reservation_uuid())


@functools.cache
def _delete_by_uuid_statement():
    return sa.delete(models.Reservation).where(_is_reservation_uuid())


def _select_by_uuid(connection, uuid):
    row = connection.execute(
        _select_by_uuid_statement(), {'reservation_uuid': uuid}).first()
    if row is None:
        raise exception.ReservationNotFound(reservation=uuid)
    return _record(row)


def get_reservation(uuid):
    """:raises: ReservationNotFound"""
    with base.reader() as session:
        with base.one_statement(session) as connection:
            return _select_by_uuid(connection, uuid)


def get_live_reservation_for_instance(instance_uuid):
    """The instance's live reservation, or None.

    :raises: DBError
    """
    with base.reader() as session:
        row = session.execute(_select_records(
            models.Reservation.active_instance_uuid == instance_uuid)).first()
    return _record(row) if row is not None else None


def list_reservations(filters=None, limit=None, marker=None,
                      sort_key='created_at', sort_dir='asc'):
    """Reservations matching equality ``filters`` (``node_uuid`` too);
    not the holds' pins, which no instance has.

    :raises: Invalid for an unknown marker.
    """
    filters = dict(filters or {})
    query = _select_records(models.Reservation.state != states.PINNED)
    node_uuid = filters.pop('node_uuid', None)
    if node_uuid is not None:
        query = query.where(models.Node.uuid == node_uuid)
    for column, value in filters.items():
        query = query.where(getattr(models.Reservation, column) == value)
    with base.reader() as session:
        query = base.paginate(session, query, models.Reservation, limit,
                              sort_key, sort_dir, marker)
        return [_record(row) for row in session.execute(query)]


# What a new reservation's INSERT writes: the caller's values and the
# node's.
_INSERTED_VALUES = ('uuid', 'instance_uuid', 'host', 'project_id', 'state',
                    'hold_id')
_INSERTED_COLUMNS = _INSERTED_VALUES + ('node_id', 'active_node_id',
                                        'active_instance_uuid', 'created_at')


@functools.cache
def _reserve_statements(dialect_name, guarded=False):
    """``(insert, mark)``, built once, values bound at execution.

    ``insert`` inserts the reservation only while the node is still
    eligible, and, ``guarded``, while the holds' guard is still at the
    version bound as ``guard_version`` (db/holds.at_version). On
    PostgreSQL it also sets the node's ``reserved`` flag, in the same
    statement (the INSERT is a data-modifying CTE whose RETURNING feeds
    the UPDATE), and ``mark`` is None; elsewhere ``mark`` sets the flag
    in a second statement.
    """
    reservation, node = models.Reservation, models.Node
    columns = {column: getattr(reservation, column)
               for column in _INSERTED_COLUMNS}
    # Parameters are named new_<column>: SQLAlchemy keeps the column
    # names of an INSERT's or UPDATE's table for itself.
    bound = [sa.bindparam('new_' + name, type_=columns[name].type)
             for name in _INSERTED_VALUES]
    node_id = sa.bindparam('new_node_id', type_=node.id.type)
    instance_uuid = bound[_INSERTED_VALUES.index('instance_uuid')]
    eligible = sa.select(
        *bound, node_id, node_id, instance_uuid,
        sa.bindparam('new_created_at', type_=columns['created_at'].type),
    ).where(node.id == node_id, *matching.free_clauses())
    if guarded:
        eligible = eligible.where(holds.at_version(
            sa.bindparam('guard_version', type_=sa.Integer)))
    insert = sa.insert(reservation).from_select(list(columns), eligible)
    mark = sa.update(node).where(node.id == node_id).values(
        reserved=True, updated_at=node.updated_at)
    if dialect_name != 'postgresql':
        return insert, mark
    inserted = insert.returning(reservation.node_id).cte('inserted')
    return (sa.update(node).where(node.id == inserted.c.node_id).values(
        reserved=True, updated_at=node.updated_at), None)


@base.retrying()
def create_reservation(values, node, guard_version=None, takes_turn=False):
    """Reserve ``node`` (a NodeRecord) for a new reservation: ``values``
    has its uuid, instance_uuid, host and project_id, and may have its
    ``state`` (``reserved`` unless ``pinned``) and ``hold_id``.

    One INSERT ... SELECT that only inserts while the node is still
    eligible, and the node's ``reserved`` flag set (in that same
    statement on PostgreSQL). The unique live-node and live-instance
    columns make this safe against every concurrent writer.

    Holds (db/holds.py): with ``guard_version``, the version the caller
    decided from, the INSERT goes ahead only while the guard is still
    there; ``takes_turn`` (a node some hold could use) moves the guard
    on from that version first, in the same transaction.

    :raises: NodeAlreadyReserved when the node was taken or removed
        meanwhile (try the next one); InstanceReserved when the instance got a
        reservation meanwhile; HoldsChanged when the guard is no longer at
        ``guard_version`` (nothing inserted).
    """
    now = timeutils.utcnow()
    row = dict({'state': states.RESERVED, 'hold_id': None}, **values,
               node_id=node.id, created_at=now)
    params = {'new_' + name: value for name, value in row.items()}
    try:
        with base.writer() as session:
            if takes_turn:
                # The statements below then run in this transaction:
                # one_statement leaves an open one alone.
                holds.bump_guard(session, guard_version)
            elif guard_version is not None:
                params['guard_version'] = guard_version
            # Core, not the ORM: with parameters, the ORM would take the
            # INSERT for a bulk insert of objects.
            insert, mark = _reserve_statements(
                session.get_bind().dialect.name, 'guard_version' in params)
            if mark is None:
                with base.one_statement(session) as connection:
                    inserted = connection.execute(insert, params).rowcount
            else:
                connection = session.connection()
                inserted = connection.execute(insert, params).rowcount
                if inserted:
                    connection.execute(mark, params)
            if not inserted and 'guard_version' in params and (
                    holds.current_version(session) != guard_version):
                raise exception.HoldsChanged()
    except db_exc.DBDuplicateEntry as exc:
        if 'active_node_id' in (exc.columns or ()):
            raise exception.NodeAlreadyReserved(node=node.uuid)
        raise exception.InstanceReserved(
            instance_uuid=values['instance_uuid'])
    except db_exc.DBReferenceError:
        # A sync removed the node after the candidates were read: lost,
        # like a race with another reservation.
        raise exception.NodeAlreadyReserved(node=node.uuid)
    if not inserted:
        raise exception.NodeAlreadyReserved(node=node.uuid)
    return records.ReservationRecord(
        uuid=row['uuid'], instance_uuid=row['instance_uuid'],
        host=row['host'], project_id=row['project_id'],
        state=row['state'], node_id=node.id, node_uuid=node.uuid,
        node_name=node.name, resource_class=node.resource_class,
        created_at=now, updated_at=None, expires_at=None,
        hold_id=row['hold_id'])


FULL = object()
"""take_pin's answer when the hold's boots have every node it keeps."""


@base.retrying()
def take_pin(hold_id, kept, instance_uuid, host):
    """Give one of hold ``hold_id``'s pins to ``instance_uuid`` on
    ``host`` while its boots have fewer than ``kept`` nodes: the same
    row, so its node is never free between the two, becomes a
    reservation made now (its ``reserved`` time to live starts over).

    Boots of one hold take turns: each first writes the hold's row, which
    every backend, Galera included, lets one transaction do at a time.
    Returns the reservation, None when the hold has no pin left, or FULL.

    :raises: InstanceReserved when the instance got a reservation
        meanwhile
    """
    reservation, hold = models.Reservation, models.Hold
    now = timeutils.utcnow()
    with base.writer() as session:
        session.execute(sa.update(hold).where(hold.id == hold_id)
                        .values(updated_at=now))
        booted = session.scalar(
            sa.select(sa.func.count()).select_from(reservation)
            .where(reservation.hold_id == hold_id,
                   reservation.state.in_(states.LIVE)))
        if booted >= kept:
            return FULL
        pin = session.scalar(
            sa.select(reservation.id)
            .where(reservation.hold_id == hold_id,
                   reservation.state == states.PINNED)
            .order_by(reservation.id).limit(1))
        if pin is None:
            return None
        try:
            session.execute(
                sa.update(reservation)
                .where(reservation.id == pin,
                       reservation.state == states.PINNED)
                .values(state=states.RESERVED, instance_uuid=instance_uuid,
                        active_instance_uuid=instance_uuid, host=host,
                        created_at=now, updated_at=now))
        except db_exc.DBDuplicateEntry:
            raise exception.InstanceReserved(instance_uuid=instance_uuid)
        return _record(session.execute(
            _select_records(reservation.id == pin)).one())


def list_pins(hold_id, created_before=None):
    """Hold ``hold_id``'s pins no boot has taken, oldest first; with
    ``created_before``, only those pinned before it.

    :raises: DBError
    """
    reservation = models.Reservation
    criteria = [reservation.hold_id == hold_id,
                reservation.state == states.PINNED]
    if created_before is not None:
        criteria.append(reservation.created_at < created_before)
    with base.reader() as session:
        return [_record(row) for row in session.execute(
            _select_records(*criteria).order_by(reservation.id))]


def list_hold_boots(hold_id):
    """The live reservations of hold ``hold_id``'s boots.

    :raises: DBError
    """
    reservation = models.Reservation
    with base.reader() as session:
        return [_record(row) for row in session.execute(
            _select_records(reservation.hold_id == hold_id,
                            reservation.state.in_(states.LIVE))
            .order_by(reservation.id))]


@base.retrying()
def update_reservation(uuid, expected_state, values):
    """Compare-and-set update: only if the state is still as read.

    :raises: Conflict when it changed meanwhile; ReservationNotFound.
    """
    values = dict(values, updated_at=timeutils.utcnow())
    with base.writer() as session:
        updated = session.execute(
            sa.update(models.Reservation).where(
                models.Reservation.uuid == uuid,
                models.Reservation.state == expected_state).values(**values)
        ).rowcount
    if not updated:
        current = get_reservation(uuid)
        raise exception.Conflict(
            reason='reservation %s changed meanwhile (now %s); read it '
                   'again.' % (uuid, current.state))
    return get_reservation(uuid)


# Ending a reservation: only inventory/lifecycle.py calls the functions
# below that end one (tests/unit/inventory/test_lifecycle.py insists).
# ``ending`` is its ``Ending``, which only it builds; that alone says
# whether the node waits for a sync to read it again (``stale``) and how
# the claim in Ironic is asked to be cleared (``clear_in_ironic``, an
# inventory.ClearRequest), in the transaction that ends the reservation.

def _delete(reservation, ending):
    """One indexed DELETE and one UPDATE of the node's derived flag,
    which a reservation's node never changes, so the record tells which.
    """
    with base.writer() as session:
        _delete_in(session, reservation, ending)


def _delete_in(session, reservation, ending):
    deleted = session.connection().execute(
        _delete_by_uuid_statement(),
        {'reservation_uuid': reservation.uuid}).rowcount
    if not deleted:
        raise exception.ReservationNotFound(reservation=reservation.uuid)
    nodes.clear_reserved_flag(session, reservation.node_id)
    _leave_node(session, reservation, ending)


def _leave_node(session, reservation, ending):
    """What a release does beyond the flag, as ``ending`` says."""
    now = timeutils.utcnow()
    if ending.stale:
        nodes.mark_stale(session, [reservation.node_id], now)
    if ending.clear_in_ironic is not None:
        inventory.add_claim_to_clear(session, reservation.node_uuid,
                                     reservation.instance_uuid, now,
                                     ending.clear_in_ironic)


@functools.cache
def _release_statement():
    """PostgreSQL: the reservation ``:reservation_uuid`` deleted, its
    node's ``reserved`` flag cleared and the reservation returned as
    read, in one statement: one round trip instead of three.

    Every part of the statement sees the reservations as they were before
    it, the deleted one included, so the flag is cleared unless another
    reservation holds the node.
    """
    reservation, node = models.Reservation, models.Node
    # A DELETE of its own: a copy of _delete_by_uuid_statement's, once
    # that had run on MariaDB in the same process, made a CTE without
    # columns (SQLAlchemy memoizes on the statement it copies).
    deleted = sa.delete(reservation).where(_is_reservation_uuid()).returning(
        *[getattr(reservation, column) for column in _RECORD_COLUMNS]
    ).cte('deleted')
    cleared = sa.update(node).where(
        node.id == deleted.c.node_id, node.reserved.is_(True),
        ~sa.exists().where(matching.live_reservation_join(),
                           ~_is_reservation_uuid()),
    ).values(reserved=False, updated_at=node.updated_at).returning(
        node.id).cte('cleared')
    return sa.select(
        *[deleted.c[column] for column in _RECORD_COLUMNS],
        *_node_identity(),
    ).join_from(deleted, node, node.id == deleted.c.node_id).add_cte(cleared)


# A duplicate: the clearing row of ``ending.clear_in_ironic`` inserted by
# another process at once (inventory.add_claim_to_clear); the retry finds
# it.
@base.retrying(duplicates=True)
def delete_reservation(reservation, ending):
    """Delete ``reservation`` (a ReservationRecord), leaving its node and
    its claim in Ironic as ``ending`` says.

    :raises: ReservationNotFound when it is gone already.
    """
    _delete(reservation, ending)


@base.retrying(duplicates=True)
def delete_reservation_by_uuid(uuid, check, ending):
    """Delete the reservation ``uuid`` once ``check`` (called with it as
    read in the same transaction) has not raised, as delete_reservation
    does; returns it.

    :raises: ReservationNotFound; what ``check`` raises (nothing deleted).
    """
    with base.writer() as session:
        connection = session.connection()
        if connection.dialect.name != 'postgresql':
            reservation = _select_by_uuid(session.connection(), uuid)
            check(reservation)
            _delete_in(session, reservation, ending)
            return reservation
        row = connection.execute(_release_statement(),
                                 {'reservation_uuid': uuid}).first()
        if row is None:
            raise exception.ReservationNotFound(reservation=uuid)
        reservation = _record(row)
        check(reservation)  # what it raises rolls the delete back
        _leave_node(session, reservation, ending)
    return reservation


@base.retrying(duplicates=True)
def delete_pins(pins, reclaimed_from, ending):
    """Delete those of ``pins`` (ReservationRecords) no boot has taken
    meanwhile, leaving their nodes as ``ending`` says; unless
    ``reclaimed_from`` is None, a hold id, count them as that hold's reclaimed
    pins in the same transaction. Returns the pins deleted.

    :raises: DBError
    """
    reservation = models.Reservation
    deleted = []
    with base.writer() as session:
        for pin in pins:
            if session.execute(sa.delete(reservation).where(
                    reservation.uuid == pin.uuid,
                    reservation.state == states.PINNED)).rowcount:
                nodes.clear_reserved_flag(session, pin.node_id)
                _leave_node(session, pin, ending)
                deleted.append(pin)
        if deleted and reclaimed_from is not None:
            holds.add_reclaimed(session, reclaimed_from, len(deleted))
    return deleted


@base.retrying(persistent=True)
def undo_reservation(reservation, ending):
    """Take back ``reservation`` (a ReservationRecord), as
    ``delete_reservation`` does, after its claim in Ironic failed: it
    must go, or it would hold a node nobody claimed, so the database is
    given a few seconds whatever it answers. Whether it was still there
    to take back.

    :raises: DatabaseUnavailable, DatabaseBusy or DBError when the
        database stays unusable.
    """
    try:
        _delete(reservation, ending)
    except exception.ReservationNotFound:
        return False
    return True


@base.retrying(duplicates=True)
def expire_reservations(older_than, ending):
    """End every ``reserved`` reservation created before ``older_than``,
    leaving their nodes and claims as ``ending`` says; returns them, as
    they now are (``expired``).

    The UPDATE re-checks the state, so concurrent workers never expire one
    twice and a reservation confirmed meanwhile (now ``active``) is left
    alone.

    :raises: DBError
    """
    now = timeutils.utcnow()
    old = (models.Reservation.state == states.RESERVED,
           models.Reservation.created_at < older_than)
    with base.writer() as session:
        rows = session.execute(
            sa.select(models.Reservation.id, models.Reservation.node_id,
                      models.Reservation.instance_uuid, models.Node.uuid)
            .join(models.Node, models.Node.id == models.Reservation.node_id)
            .where(*old).with_for_update(of=models.Reservation)).all()
        if not rows:
            return []
        # The rows are locked: the UPDATE takes every one.
        session.execute(
            sa.update(models.Reservation).where(
                models.Reservation.id.in_([row.id for row in rows]), *old)
            .values(state=states.EXPIRED, active_node_id=None,
                    active_instance_uuid=None, expires_at=now,
                    updated_at=now))
        expired = [_record(row) for row in session.execute(_select_records(
            models.Reservation.id.in_([row.id for row in rows])))]
        node_ids = [row.node_id for row in rows]
        nodes.refresh_flags(session, node_ids)
        if ending.stale:
            nodes.mark_stale(session, node_ids, now)
        if ending.clear_in_ironic is not None:
            for row in rows:
                inventory.add_claim_to_clear(session, row.uuid,
                                             row.instance_uuid, now,
                                             ending.clear_in_ironic)
    return expired


def list_disagreements(created_before, claims, limit):
    """Live reservations, created before ``created_before``, whose node
    as last synced disagrees: vanished, or another instance on it in
    Ironic, or none when ``claims`` (we set it there) or the reservation
    is ``active`` (Nova deployed it). Returns ``(reservation, node
    instance_uuid, vanished)`` tuples, oldest first.

    :raises: DBError
    """
    reservation, node = models.Reservation, models.Node
    no_instance = node.instance_uuid.is_(None)
    if not claims:
        no_instance = sa.and_(no_instance,
                              reservation.state == states.ACTIVE)
    query = (
        sa.select(reservation, node)
        .join(node, node.id == reservation.active_node_id)
        .where(reservation.created_at < created_before,
               reservation.state.in_(states.LIVE),
               sa.or_(node.vanished.is_(True), no_instance,
                      node.instance_uuid != reservation.instance_uuid))
        .order_by(reservation.created_at, reservation.id).limit(limit))
    with base.reader() as session:
        return [(records.reservation_record(row_reservation, row_node),
                 row_node.instance_uuid, row_node.vanished)
                for row_reservation, row_node in session.execute(query)]


def list_live_reservations(created_before):
    """Reserved and active reservations made before ``created_before``,
    by host.

    :raises: DBError
    """
    with base.reader() as session:
        query = _select_records(
            models.Reservation.state.in_(states.LIVE),
            models.Reservation.created_at < created_before).order_by(
            models.Reservation.host, models.Reservation.id)
        return [_record(row) for row in session.execute(query)]


def count_live_by_host(limit):
    """``(hosts, others)``: the ``limit`` hosts that hold the most live
    reservations, as ``[(host, count)]`` (most first, then by name), and
    how many the other hosts hold together.

    One grouped read of the (host, active_node_id) index: it costs what
    the live reservations number, not the nodes or the ended ones.

    :raises: DBError
    """
    reservation = models.Reservation
    with base.reader() as session:
        counts = session.execute(
            sa.select(reservation.host, sa.func.count())
            .where(reservation.active_node_id.is_not(None),
                   reservation.state != states.PINNED)
            .group_by(reservation.host)).all()
    counts = sorted(((host, count) for host, count in counts),
                    key=lambda item: (-item[1], item[0]))
    return counts[:limit], sum(count for _host, count in counts[limit:])


@base.retrying()
def take_over_host(source, destination):
    """Give every live reservation of host ``source`` to ``destination``
    in one transaction; the reservations moved, as they now are.

    :raises: DBError
    """
    now = timeutils.utcnow()
    reservation = models.Reservation
    with base.writer() as session:
        ids = list(session.scalars(
            sa.select(reservation.id)
            .where(reservation.host == source,
                   reservation.state.in_(states.LIVE))
            .with_for_update()))
        if not ids:
            return []
        session.execute(sa.update(reservation)
                        .where(reservation.id.in_(ids))
                        .values(host=destination, updated_at=now))
        moved = session.execute(_select_records(reservation.id.in_(ids))
                                .order_by(reservation.id))
        return [_record(row) for row in moved]
