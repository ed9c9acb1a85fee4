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

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from reserveapi.common import exception
from reserveapi.common import states
from reserveapi.db import base
from reserveapi.db import inventory
from reserveapi.db import matching
from reserveapi.db import models
from reserveapi.db import nodes
from reserveapi.db import records


def get_reservation(uuid):
    """:raises: ReservationNotFound"""
    with base.reader() as session:
        reservation = session.scalars(sa.select(models.Reservation).where(
            models.Reservation.uuid == uuid)).first()
        if reservation is None:
            raise exception.ReservationNotFound(reservation=uuid)
        return records.reservation_record(reservation)


def get_live_reservation_for_instance(instance_uuid):
    """The instance's live reservation, or None.

    :raises: DBError
    """
    with base.reader() as session:
        reservation = session.scalars(sa.select(models.Reservation).where(
            models.Reservation.active_instance_uuid == instance_uuid)).first()
        return (records.reservation_record(reservation)
                if reservation is not None else None)


def list_reservations(filters=None, limit=None, marker=None,
                      sort_key='created_at', sort_dir='asc'):
    """Reservations matching equality ``filters`` (``node_uuid`` too).

    :raises: Invalid for an unknown marker.
    """
    filters = dict(filters or {})
    query = sa.select(models.Reservation).join(models.Reservation.node)
    node_uuid = filters.pop('node_uuid', None)
    if node_uuid is not None:
        query = query.where(models.Node.uuid == node_uuid)
    for column, value in filters.items():
        query = query.where(getattr(models.Reservation, column) == value)
    with base.reader() as session:
        query = base.paginate(session, query, models.Reservation, limit,
                              sort_key, sort_dir, marker)
        return [records.reservation_record(reservation)
                for reservation in session.scalars(query)]


@base.retry_on_deadlock
def create_reservation(values, node):
    """Claim ``node`` (a NodeRecord) for a new reservation.

    One INSERT ... SELECT that only inserts while the node is still
    eligible. The unique live-node and live-instance columns make this
    safe against every concurrent writer.

    :raises: NodeAlreadyReserved when the node was taken meanwhile (try
        the next one); InstanceReserved when the instance got a
        reservation meanwhile.
    """
    now = timeutils.utcnow()
    row = dict(values, node_id=node.id, active_node_id=node.id,
               active_instance_uuid=values['instance_uuid'],
               state=states.RESERVED, created_at=now)
    columns = sorted(row)
    eligible = sa.select(*[sa.literal(row[column]) for column in columns]
                         ).where(models.Node.id == node.id,
                                 models.Node.vanished.is_(False),
                                 *matching.free_clauses())
    try:
        with base.writer() as session:
            inserted = session.execute(
                sa.insert(models.Reservation).from_select(columns, eligible)
            ).rowcount
            if inserted:
                session.execute(sa.update(models.Node).where(
                    models.Node.id == node.id).values(
                    reserved=True, updated_at=models.Node.updated_at))
    except db_exc.DBDuplicateEntry as exc:
        if 'active_node_id' in (exc.columns or ()):
            raise exception.NodeAlreadyReserved(node=node.uuid)
        raise exception.InstanceReserved(
            instance_uuid=values['instance_uuid'])
    if not inserted:
        raise exception.NodeAlreadyReserved(node=node.uuid)
    return records.ReservationRecord(
        uuid=row['uuid'], instance_uuid=row['instance_uuid'],
        host=row['host'], project_id=row['project_id'],
        state=states.RESERVED, node_id=node.id, node_uuid=node.uuid,
        node_name=node.name, resource_class=node.resource_class,
        created_at=now, updated_at=None, expires_at=None)


@base.retry_on_deadlock
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


def _delete(uuid, stale, release_in_ironic):
    """Delete a reservation and return it as it was; with ``stale`` its
    node waits for a sync to read it again; with ``release_in_ironic``
    its claim in Ironic is noted for clearing, in the same transaction.
    """
    now = timeutils.utcnow()
    with base.writer() as session:
        reservation = session.scalars(sa.select(models.Reservation).where(
            models.Reservation.uuid == uuid)).first()
        if reservation is None:
            raise exception.ReservationNotFound(reservation=uuid)
        record = records.reservation_record(reservation)
        session.execute(sa.delete(models.Reservation).where(
            models.Reservation.id == reservation.id))
        nodes.refresh_flags(session, [record.node_id])
        if stale:
            nodes.mark_stale(session, [record.node_id], now)
        if release_in_ironic:
            inventory.add_ironic_release(session, record.node_uuid,
                                         record.instance_uuid, now)
    return record


@base.retry_on_busy
def delete_reservation(uuid, stale=False, release_in_ironic=False):
    """Delete a reservation; its node is free as soon as this commits,
    unless ``stale`` keeps it until a sync reads it again. Returns the
    reservation as it was. ``release_in_ironic`` notes its claim in
    Ironic for clearing (``inventory.due_ironic_releases``).

    :raises: ReservationNotFound
    """
    return _delete(uuid, stale, release_in_ironic)


# A claim in Ironic failed after the reservation committed: it must go,
# or it would hold a node nobody claimed. Keep trying for a few seconds,
# whatever the database answers.
_retry_undo = oslo_db_api.wrap_db_retry(
    max_retries=10, retry_interval=0.05, inc_retry_interval=True,
    max_retry_interval=1, retry_on_deadlock=True, retry_on_disconnect=True,
    exception_checker=lambda exc: isinstance(
        exc, (db_exc.DBError, sa.exc.OperationalError)))


@_retry_undo
def undo_reservation(uuid, stale=False, release_in_ironic=False):
    """Take back a reservation whose claim in Ironic failed; as
    ``delete_reservation``, retried harder. Already gone is fine.

    :raises: DBError when the database stays unusable.
    """
    try:
        return _delete(uuid, stale, release_in_ironic)
    except exception.ReservationNotFound:
        return None


@base.retry_on_busy
def expire_reservations(older_than, stale=False, release_in_ironic=False):
    """End every ``reserved`` reservation created before ``older_than``;
    returns how many. ``stale`` and ``release_in_ironic`` as for
    ``delete_reservation``.

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
        expired = session.execute(
            sa.update(models.Reservation).where(
                models.Reservation.id.in_([row.id for row in rows]), *old)
            .values(state=states.EXPIRED, active_node_id=None,
                    active_instance_uuid=None, expires_at=now,
                    updated_at=now)
        ).rowcount if rows else 0
        node_ids = [row.node_id for row in rows]
        nodes.refresh_flags(session, node_ids)
        if stale:
            nodes.mark_stale(session, node_ids, now)
        if release_in_ironic:
            for row in rows:
                inventory.add_ironic_release(session, row.uuid,
                                             row.instance_uuid, now)
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
        sa.select(reservation, node.instance_uuid, node.vanished)
        .join(node, node.id == reservation.active_node_id)
        .where(reservation.created_at < created_before,
               sa.or_(node.vanished.is_(True), no_instance,
                      node.instance_uuid != reservation.instance_uuid))
        .order_by(reservation.created_at, reservation.id).limit(limit))
    with base.reader() as session:
        return [(records.reservation_record(row[0]), row[1], row[2])
                for row in session.execute(query)]


_LIVE = (states.RESERVED, states.ACTIVE)


def list_live_reservations(created_before):
    """Reserved and active reservations made before ``created_before``,
    by host.

    :raises: DBError
    """
    with base.reader() as session:
        query = (sa.select(models.Reservation)
                 .where(models.Reservation.state.in_(_LIVE),
                        models.Reservation.created_at < created_before)
                 .order_by(models.Reservation.host, models.Reservation.id))
        return [records.reservation_record(reservation)
                for reservation in session.scalars(query)]


@base.retry_on_deadlock
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
            .where(reservation.host == source, reservation.state.in_(_LIVE))
            .with_for_update()))
        if not ids:
            return []
        session.execute(sa.update(reservation)
                        .where(reservation.id.in_(ids))
                        .values(host=destination, updated_at=now))
        moved = session.scalars(sa.select(reservation)
                                .where(reservation.id.in_(ids))
                                .order_by(reservation.id))
        return [records.reservation_record(row) for row in moved]
