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

import datetime

from oslo_utils import timeutils
import sqlalchemy as sa

from reserveapi.db import base
from reserveapi.db import models
from reserveapi.db import records

_SYNC_COLUMNS = ('source', 'synced_at', 'nodes', 'full_synced_at',
                 'watermark', 'location', 'outage_since', 'last_error',
                 'document_digest', 'nodes_digest')


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
    with DBDuplicateEntry and its caller (``retry_on_duplicate``) starts
    over, finding it.
    """
    table = models.InventorySync
    if session.scalar(sa.select(table.id).where(table.source == source)
                      ) is None:
        session.execute(sa.insert(table).values(source=source, nodes=0))


@base.retry_on_busy
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


@base.retry_on_busy
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


@base.retry_on_busy
def take_sync_lease(source, holder, seconds, now=None):
    """Become the one process syncing ``source`` for ``seconds``, unless
    another holds an unexpired lease; True if taken (or renewed).

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    table = models.InventorySync
    with base.writer() as session:
        _ensure_row(session, source)
        taken = session.execute(
            sa.update(table).where(
                table.source == source,
                sa.or_(table.claimed_by.is_(None), table.claimed_by == holder,
                       table.claimed_until < now))
            .values(claimed_by=holder,
                    claimed_until=now + datetime.timedelta(seconds=seconds))
        ).rowcount
    return bool(taken)


@base.retry_on_busy
def drop_sync_lease(source, holder):
    """:raises: DBError"""
    table = models.InventorySync
    with base.writer() as session:
        session.execute(
            sa.update(table).where(table.source == source,
                                   table.claimed_by == holder)
            .values(claimed_by=None, claimed_until=None))


# Claims in Ironic left to clear ---------------------------------------------

def add_ironic_release(session, node_uuid, instance_uuid, now):
    """Remember, in the caller's transaction, to clear ``instance_uuid``'s
    claim on ``node_uuid`` in Ironic (a duplicate is the caller's to
    retry: it finds the row and adds nothing).
    """
    table = models.IronicRelease
    if session.scalar(sa.select(table.id).where(
            table.node_uuid == node_uuid,
            table.instance_uuid == instance_uuid)) is None:
        session.execute(sa.insert(table).values(
            node_uuid=node_uuid, instance_uuid=instance_uuid, attempts=0,
            next_attempt_at=now, created_at=now))


def due_ironic_releases(limit, now=None):
    """The releases whose next attempt is due, oldest first.

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    table = models.IronicRelease
    with base.reader() as session:
        return [records.IronicReleaseRecord(
            id=row.id, node_uuid=row.node_uuid,
            instance_uuid=row.instance_uuid, attempts=row.attempts,
            next_attempt_at=row.next_attempt_at, last_error=row.last_error,
            created_at=row.created_at)
            for row in session.scalars(
                sa.select(table).where(table.next_attempt_at <= now)
                .order_by(table.next_attempt_at, table.id).limit(limit))]


@base.retry_on_busy
def finish_ironic_release(node_uuid, instance_uuid):
    """The claim is cleared, or no longer ours to clear.

    :raises: DBError
    """
    table = models.IronicRelease
    with base.writer() as session:
        session.execute(sa.delete(table).where(
            table.node_uuid == node_uuid,
            table.instance_uuid == instance_uuid))


@base.retry_on_busy
def postpone_ironic_release(release_id, error, next_attempt_at):
    """:raises: DBError"""
    table = models.IronicRelease
    with base.writer() as session:
        session.execute(
            sa.update(table).where(table.id == release_id).values(
                attempts=table.attempts + 1, last_error=error[:2000],
                next_attempt_at=next_attempt_at,
                updated_at=timeutils.utcnow()))


def count_ironic_releases():
    """:raises: DBError"""
    with base.reader() as session:
        return session.scalar(sa.select(sa.func.count()).select_from(
            models.IronicRelease))


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
