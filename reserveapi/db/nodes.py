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

"""Nodes: the inventory as last synced, each with its live reservation;
the derived flags that lead the best-fit index; capacity per class.
"""

import functools

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.sql import visitors

from reserveapi.common import eligibility
from reserveapi.common import exception
from reserveapi.common import validators
from reserveapi.db import base
from reserveapi.db import counters
from reserveapi.db import matching
from reserveapi.db import models
from reserveapi.db import records


def _nodes_with_reservations():
    # Reservation.node is eagerly loaded with an INNER join, which after
    # this OUTER join would drop every node without a reservation; the
    # node is in the row anyway.
    return (sa.select(models.Node, models.Reservation)
            .outerjoin(models.Reservation, matching.live_reservation_join())
            .options(orm.noload(models.Reservation.node)))


def get_node(ident, project_id=None):
    """A node by uuid (when ``ident`` is one) or name, with its live
    reservation; with ``project_id``, only one that project owns or
    leases.

    :raises: NodeNotFound
    """
    column = (models.Node.uuid if validators.is_uuid(ident)
              else models.Node.name)
    query = _nodes_with_reservations().where(column == ident)
    if project_id is not None:
        query = query.where(_of_project(project_id))
    with base.reader() as session:
        row = session.execute(query).first()
        if row is None:
            raise exception.NodeNotFound(node=ident)
        return records.node_record(*row)


def _of_project(project_id):
    """Owned or leased by the project: a node with neither is nobody's
    to see but admin's (as in Ironic)."""
    node = models.Node
    return sa.or_(node.owner == project_id, node.lessee == project_id)


def list_nodes(filters=None, limit=None, marker=None, sort_key='uuid',
               sort_dir='asc', project_id=None):
    """Nodes matching equality ``filters`` on node columns; ``reserved``
    filters on a live reservation. With ``project_id``, only the nodes
    that project owns or leases, the marker included.

    :raises: Invalid for an unknown marker.
    """
    filters = dict(filters or {})
    query = _nodes_with_reservations()
    if project_id is not None:
        query = query.where(_of_project(project_id))
    reserved = filters.pop('reserved', None)
    if reserved is not None:
        query = query.where(models.Reservation.id.is_not(None) if reserved
                            else models.Reservation.id.is_(None))
    for column, value in filters.items():
        query = query.where(getattr(models.Node, column) == value)
    with base.reader() as session:
        query = base.paginate(session, query, models.Node, limit, sort_key,
                              sort_dir, marker)
        return [records.node_record(*row) for row in session.execute(query)]


def refresh_flags(session, node_ids=None):
    """Recompute the derived ``schedulable`` and ``reserved`` flags of
    ``node_ids`` (None: every node), in the caller's transaction.

    The wrong ones are found first, then rewritten a chunk at a time:
    whatever their number, no statement's triggers add up more than a
    chunk of changed rows. They are counted by statement on MariaDB/MySQL,
    and on PostgreSQL too when there is more than one chunk, whose
    statement triggers would each join a chunk with the whole of
    ``node_traits`` (db/counters.py). Computed from the same clauses the
    matcher's SQL uses, so the two cannot disagree.
    """
    if node_ids is not None and not node_ids:
        return
    node = models.Node
    wrong = sorted(_wrong_flags(session, node_ids))
    with counters.counted_by_statement(
            session, wrong, many_statements=len(wrong) > base.CHUNK):
        for ids in base.chunks(wrong):
            for column, value in _flags().items():
                # Derived flags are not an inventory change: updated_at
                # stays.
                session.execute(
                    sa.update(node).where(node.id.in_(ids), getattr(
                        node, column) != value).values(
                            {column: value, 'updated_at': node.updated_at}),
                    execution_options={'synchronize_session': False})


def _flags():
    """Each derived flag's column name and its value, as SQL over the
    node row."""
    return {
        'schedulable': sa.case((sa.and_(*_schedulable_clauses()), True),
                               else_=False),
        'reserved': sa.case((matching.has_live_reservation(), True),
                            else_=False),
    }


def _wrong_flags(session, node_ids, *where):
    """The ids of ``node_ids`` (None: every node) whose derived flags
    disagree with what they are derived from."""
    node = models.Node
    query = sa.select(node.id).where(
        sa.or_(*[getattr(node, column) != value
                 for column, value in _flags().items()]), *where)
    if node_ids is None:
        return set(session.scalars(query))
    wrong = set()
    for ids in base.chunks(list(node_ids), counters.ID_CHUNK):
        wrong.update(session.scalars(query.where(node.id.in_(ids))))
    return wrong


def wrong_flags(session, first_id, last_id):
    """The ids from ``first_id`` to ``last_id`` whose derived flags
    disagree with what they are derived from."""
    return _wrong_flags(session, None,
                        models.Node.id.between(first_id, last_id))


def new_node_schedulable(values):
    """The ``schedulable`` flag of a node row being inserted, as SQL over
    ``values`` (the row's values by column name): refresh_flags' own
    clauses, for a row with no stale mark and no reservation yet, so that
    the insert writes the flag right and refresh_flags has nothing to
    rewrite.
    """
    table = models.Node.__table__

    def row_value(element):
        if isinstance(element, sa.Column) and element.table is table:
            return values[element.name]
        return None

    return sa.case(
        (sa.and_(*[visitors.replacement_traverse(clause, {}, row_value)
                   for clause in _schedulable_clauses(but=('stale',))]),
         True),
        else_=False)


def _schedulable_clauses(but=()):
    """What the ``schedulable`` flag stands for: the criteria
    common/eligibility.py stores in it (but those named in ``but``)."""
    clauses = dict(matching.eligible_clauses())
    return [clauses[name] for name in eligibility.STORED_FLAG
            if name not in but]


def mark_stale_by_uuid(session, node_uuid, now):
    """mark_stale for the node ``node_uuid``, if we have it."""
    node = models.Node
    session.execute(
        sa.update(node).where(node.uuid == node_uuid).values(
            stale_since=now, schedulable=False, updated_at=node.updated_at),
        execution_options={'synchronize_session': False})


def mark_stale(session, node_ids, now):
    """Keep nodes out of matching until a sync reads them again, in the
    caller's transaction: released ones may be cleaning in Ironic, and
    ones Ironic refused are not what we last read.
    """
    node = models.Node
    for ids in base.chunks(list(node_ids)):
        session.execute(
            sa.update(node).where(node.id.in_(ids)).values(
                stale_since=now, schedulable=False,
                updated_at=node.updated_at),
            execution_options={'synchronize_session': False})


def list_stale(limit):
    """UUIDs of the nodes waiting longest for a sync to read them again,
    but for those whose claim of ours in Ironic waits to be cleared
    (the clear reads them).

    :raises: DBError
    """
    node = models.Node
    with base.reader() as session:
        return list(session.scalars(
            sa.select(node.uuid).where(node.stale_since.is_not(None),
                                       ~awaiting_ironic_clear())
            .order_by(node.stale_since).limit(limit)))


def awaiting_ironic_clear():
    """Whether the node (``models.Node``) has a claim of ours in Ironic
    waiting to be cleared (``ironic_releases``): such a node stays stale,
    never offered, so that no new claim of it races with the clear."""
    clearing = models.ClaimToClear
    return sa.exists().where(clearing.node_uuid == models.Node.uuid)


def clear_reserved_flag(session, node_id):
    """Clear node ``node_id``'s ``reserved`` flag unless a live
    reservation holds it, in the caller's transaction: what
    refresh_flags does for one node once a reservation ended, in one
    statement. ``schedulable`` does not depend on reservations.
    """
    session.connection().execute(_clear_reserved_statement(),
                                 {'flag_node_id': node_id})


@functools.cache
def _clear_reserved_statement():
    """Built once: every release runs it (see db/reservations.py)."""
    node = models.Node
    return sa.update(node).where(
        node.id == sa.bindparam('flag_node_id'), node.reserved.is_(True),
        ~matching.has_live_reservation()).values(
        reserved=False, updated_at=node.updated_at)


def get_capacity(host=None, shard=None, conductor_group=None,
                 labels=False, holds=False):
    """Per resource class: total, available, reserved, and summed sizes;
    with ``host``, also how many of each class ``host`` holds; with
    ``labels``, also the sorted ``traits`` of the free nodes and the
    sorted ``architectures`` of the nodes; with ``holds``, also
    ``hold_nodes``, how many of each class's reserved nodes holds'
    pins and boots have (and of them ``hold_nodes_by_host``, with
    ``host``). Only of the nodes in the
    partition ``shard`` and ``conductor_group`` (each when given, as the
    matcher takes them: '' is the default group). Nodes without a
    resource class are left out of the capacity: Nova reports no
    inventory for them.

    Read from the counters the triggers keep (db/summary.py) and a
    host's live reservations: the cost does not grow with the nodes.

    :raises: DBError
    """
    counter = models.CapacityCounter
    values = ('total', 'available', 'reserved', 'memory_mb', 'vcpus',
              'local_gb')
    query = (sa.select(counter.resource_class,
                       *[sa.func.sum(getattr(counter, name)).label(name)
                         for name in values])
             .where(*_in_partition(counter, shard, conductor_group))
             .group_by(counter.resource_class)
             .having(sa.func.sum(counter.total) > 0)
             .order_by(counter.resource_class))
    with base.reader() as session:
        # SUM is a Decimal on some backends.
        capacity = [dict(row._mapping, **{name: int(row._mapping[name])
                                          for name in values})
                    for row in session.execute(query)]
        if host is not None:
            held = _held_by_host(session, host, shard, conductor_group)
            for row in capacity:
                row['reserved_by_host'] = held.get(row['resource_class'], 0)
        if holds:
            for_holds = _held_for_holds(session, host, shard,
                                        conductor_group)
            for row in capacity:
                total, by_host = for_holds.get(row['resource_class'], (0, 0))
                row['hold_nodes'] = total
                if host is not None:
                    row['hold_nodes_by_host'] = by_host
        if not labels:
            return {'capacity': capacity}
        return {'capacity': capacity,
                'traits': _labels(session, models.FreeTraitCounter.trait,
                                  shard, conductor_group),
                'architectures': _labels(
                    session, models.CpuArchCounter.cpu_arch, shard,
                    conductor_group)}


def get_capacity_by_partition():
    """``[{resource_class, shard, conductor_group, total, available,
    reserved}]``, one per class and partition that has nodes ('' for no
    shard or the default group): the whole summary, for monitoring.

    Read from the same counters as get_capacity: the cost grows with
    the classes and partitions, never with the nodes.

    :raises: DBError
    """
    counter = models.CapacityCounter
    values = ('total', 'available', 'reserved')
    keys = (counter.resource_class, counter.shard, counter.conductor_group)
    query = (sa.select(*keys, *[sa.func.sum(getattr(counter, name)).label(
        name) for name in values])
             .group_by(*keys)
             .having(sa.func.sum(counter.total) > 0)
             .order_by(*keys))
    with base.reader() as session:
        return [dict(row._mapping, **{name: int(row._mapping[name])
                                      for name in values})
                for row in session.execute(query)]


def _in_partition(counter, shard, conductor_group):
    """The counter rows of a partition: the node's NULL shard or group
    is '' there, so the default group ('') is the counters' ''."""
    clauses = []
    if conductor_group is not None:
        clauses.append(counter.conductor_group == conductor_group)
    if shard is not None:
        clauses.append(counter.shard == shard)
    return clauses


def _labels(session, column, shard, conductor_group):
    """The sorted names (traits, architectures) whose counter is not 0."""
    counter = column.class_
    return list(session.scalars(
        sa.select(column)
        .where(*_in_partition(counter, shard, conductor_group))
        .group_by(column).having(sa.func.sum(counter.node_count) > 0)
        .order_by(column)))


def _held_by_host(session, host, shard, conductor_group):
    """{resource class: nodes of the partition ``host``'s live
    reservations hold}: read through the (host, active_node_id) index,
    so it costs what the host holds, not what the inventory has."""
    node, reservation = models.Node, models.Reservation
    query = (sa.select(node.resource_class, sa.func.count())
             .select_from(reservation)
             .join(node, node.id == reservation.active_node_id)
             .where(reservation.host == host,
                    reservation.active_node_id.is_not(None),
                    *models.in_universe(node),
                    node.resource_class.is_not(None),
                    *matching.partition_clauses(conductor_group, shard))
             .group_by(node.resource_class))
    return dict(session.execute(query).all())


def _held_for_holds(session, host, shard, conductor_group):
    """{resource class: (nodes, of them ``host``'s)} of the partition
    that holds' pins and boots have: read through the (hold_id, state)
    index, so it costs what the holds have."""
    node, reservation = models.Node, models.Reservation
    query = (sa.select(node.resource_class, sa.func.count(),
                       sa.func.sum(sa.case((reservation.host == host, 1),
                                           else_=0)))
             .select_from(reservation)
             .join(node, node.id == reservation.active_node_id)
             .where(reservation.hold_id.is_not(None),
                    reservation.active_node_id.is_not(None),
                    *models.in_universe(node),
                    node.resource_class.is_not(None),
                    *matching.partition_clauses(conductor_group, shard))
             .group_by(node.resource_class))
    return {resource_class: (int(total), int(by_host or 0))
            for resource_class, total, by_host in session.execute(query)}


def count_nodes():
    """How many nodes the inventory holds, vanished ones included.

    :raises: DBError
    """
    with base.reader() as session:
        return session.scalar(sa.select(sa.func.count()).select_from(
            models.Node))
