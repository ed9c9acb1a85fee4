"""The only module that talks SQL.

Every public function opens its own transaction through the oslo.db
enginefacade and returns plain records, never live ORM objects, and turns
database errors into ``reserveapi.common.exception`` types. Writers retry
deadlocks.
"""

import collections
import dataclasses
import threading

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
from oslo_utils import timeutils
import sqlalchemy as sa
from sqlalchemy import orm

from reserveapi.common import exception
from reserveapi.db import connection_errors  # noqa: F401 - registers
from reserveapi.db import models

main_context_manager = enginefacade.transaction_context()
main_context_manager.configure(sqlite_fk=True)
_CONTEXT = threading.local()

# Reservation states. Live reservations hold their node; expired ones are
# kept so that the host that held one can see why it is gone.
RESERVED = 'reserved'
ACTIVE = 'active'
EXPIRED = 'expired'
LIVE_STATES = (RESERVED, ACTIVE)

_retry_on_deadlock = oslo_db_api.wrap_db_retry(max_retries=5,
                                               retry_on_deadlock=True)


def _reader():
    return main_context_manager.reader.using(_CONTEXT)


def _writer():
    return main_context_manager.writer.using(_CONTEXT)


def get_engine():
    return main_context_manager.writer.get_engine()


# Nodes ---------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class NodeRecord:
    """A node as matching and the API see it."""

    id: int
    uuid: str
    name: str | None
    resource_class: str | None
    memory_mb: int
    cpus: int
    local_gb: int
    cpu_arch: str | None
    capabilities: dict
    traits: frozenset
    provision_state: str | None
    power_state: str | None
    maintenance: bool
    retired: bool
    instance_uuid: str | None
    conductor_group: str | None
    owner: str | None
    lessee: str | None
    vanished: bool
    synced_at: object
    created_at: object
    updated_at: object
    reservation: object = None

    @property
    def reserved(self):
        return self.reservation is not None


_NODE_COLUMNS = ('uuid', 'name', 'resource_class', 'memory_mb', 'cpus',
                 'local_gb', 'cpu_arch', 'provision_state', 'power_state',
                 'maintenance', 'retired', 'instance_uuid', 'conductor_group',
                 'owner', 'lessee')


def _node_record(node, reservation=None):
    return NodeRecord(
        id=node.id,
        capabilities={cap.key: cap.value for cap in node.capabilities},
        traits=frozenset(trait.trait for trait in node.traits),
        vanished=node.vanished, synced_at=node.synced_at,
        created_at=node.created_at, updated_at=node.updated_at,
        reservation=(_reservation_record(reservation, node)
                     if reservation is not None else None),
        **{column: getattr(node, column) for column in _NODE_COLUMNS})


def _live_reservation_join():
    return models.Reservation.active_node_id == models.Node.id


def _nodes_with_reservations(session):
    # Reservation.node is eagerly loaded with an INNER join, which after
    # this OUTER join would drop every node without a reservation; the
    # node is in the row anyway.
    return (session.query(models.Node, models.Reservation)
            .outerjoin(models.Reservation, _live_reservation_join())
            .options(orm.noload(models.Reservation.node)))


@_retry_on_deadlock
def sync_nodes(nodes, fingerprints, now=None):
    """Make the nodes table equal ``nodes`` (normalized inventory dicts).

    ``fingerprints`` maps each uuid to a digest of its dict, so unchanged
    nodes cost one comparison. A vanished node with a live reservation is
    flagged ``vanished`` instead of being dropped. Returns counts.
    """
    now = now or timeutils.utcnow()
    counts = dict.fromkeys(('added', 'updated', 'unchanged', 'removed',
                            'flagged'), 0)
    wanted = {node['uuid']: node for node in nodes}
    with _writer() as session:
        existing = {row.uuid: row for row in session.execute(
            sa.select(models.Node.id, models.Node.uuid,
                      models.Node.fingerprint, models.Node.vanished))}
        reserved_ids = set(session.scalars(
            sa.select(models.Reservation.active_node_id).where(
                models.Reservation.active_node_id.is_not(None))))

        changed = []
        for uuid, node in wanted.items():
            row = existing.get(uuid)
            if row is None:
                continue
            if row.fingerprint == fingerprints[uuid] and not row.vanished:
                counts['unchanged'] += 1
                continue
            changed.append((row.id, node))
            session.execute(
                sa.update(models.Node).where(models.Node.id == row.id).values(
                    fingerprint=fingerprints[uuid], vanished=False,
                    synced_at=now, updated_at=now,
                    **{column: node[column] for column in _NODE_COLUMNS}))
            counts['updated'] += 1
        _replace_children(session, [node_id for node_id, _n in changed],
                          changed)

        new = [node for uuid, node in wanted.items() if uuid not in existing]
        for chunk in _chunks(new, 1000):
            session.execute(sa.insert(models.Node), [
                dict({column: node[column] for column in _NODE_COLUMNS},
                     fingerprint=fingerprints[node['uuid']], vanished=False,
                     synced_at=now, created_at=now)
                for node in chunk])
            ids = dict(session.execute(
                sa.select(models.Node.uuid, models.Node.id).where(
                    models.Node.uuid.in_([node['uuid'] for node in chunk]))
            ).all())
            _replace_children(session, [],
                              [(ids[node['uuid']], node) for node in chunk])
        counts['added'] = len(new)

        gone = [row for uuid, row in existing.items() if uuid not in wanted]
        drop = [row.id for row in gone if row.id not in reserved_ids]
        flag = [row.id for row in gone
                if row.id in reserved_ids and not row.vanished]
        for chunk in _chunks(drop, 1000):
            session.execute(sa.delete(models.Node).where(
                models.Node.id.in_(chunk)))
        for chunk in _chunks(flag, 1000):
            session.execute(sa.update(models.Node).where(
                models.Node.id.in_(chunk)).values(vanished=True,
                                                  updated_at=now))
        counts['removed'] = len(drop)
        counts['flagged'] = len(flag)
        _refresh_flags(session)
    if counts['added'] or counts['updated'] or counts['removed']:
        _analyze_nodes()
    return counts


def _analyze_nodes():
    """Refresh the planner's statistics after a bulk change.

    Without them, PostgreSQL plans the candidate query for an empty table
    and a reservation at 100,000 nodes takes 300 ms instead of 10 ms.
    """
    tables = ('nodes', 'node_traits', 'node_capabilities')
    engine = get_engine()
    statements = {
        'postgresql': ['ANALYZE %s' % ', '.join(tables)],
        'mysql': ['ANALYZE TABLE %s' % ', '.join(tables)],
        'sqlite': ['ANALYZE %s' % table for table in tables],
    }.get(engine.dialect.name, [])
    with engine.connect() as connection:
        for statement in statements:
            connection.exec_driver_sql(statement)
        connection.commit()


def _refresh_flags(session, node_ids=None):
    """Recompute the derived ``schedulable`` and ``reserved`` flags.

    Only rows whose flag is wrong are written. Computed from the same
    clauses the matcher's SQL uses, so the two cannot disagree.
    """
    if node_ids is not None and not node_ids:
        return
    node = models.Node
    eligible = [clause for name, clause in _eligible_clauses()
                if name != 'reserved']
    flags = {
        'schedulable': sa.case(
            (sa.and_(node.vanished.is_(False), *eligible), True),
            else_=False),
        'reserved': sa.case((_has_live_reservation(), True), else_=False),
    }
    for column, value in flags.items():
        query = sa.update(node).where(getattr(node, column) != value)
        if node_ids is not None:
            query = query.where(node.id.in_(node_ids))
        # Derived flags are not an inventory change: updated_at stays.
        session.execute(
            query.values({column: value, 'updated_at': node.updated_at}),
            execution_options={'synchronize_session': False})


def _chunks(items, size):
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _replace_children(session, stale_ids, nodes):
    """Rewrite traits and capabilities of ``(node_id, node)`` pairs."""
    for chunk in _chunks(stale_ids, 1000):
        session.execute(sa.delete(models.NodeTrait).where(
            models.NodeTrait.node_id.in_(chunk)))
        session.execute(sa.delete(models.NodeCapability).where(
            models.NodeCapability.node_id.in_(chunk)))
    traits = [{'node_id': node_id, 'trait': trait}
              for node_id, node in nodes for trait in node['traits']]
    capabilities = [{'node_id': node_id, 'key': key, 'value': value}
                    for node_id, node in nodes
                    for key, value in node['capabilities'].items()]
    for chunk in _chunks(traits, 5000):
        session.execute(sa.insert(models.NodeTrait), chunk)
    for chunk in _chunks(capabilities, 5000):
        session.execute(sa.insert(models.NodeCapability), chunk)


def get_node(ident):
    """A node by uuid or name, with its live reservation."""
    with _reader() as session:
        column = (models.Node.uuid if _looks_like_uuid(ident)
                  else models.Node.name)
        row = _nodes_with_reservations(session).filter(
            column == ident).first()
        if row is None:
            raise exception.NodeNotFound(node=ident)
        return _node_record(*row)


def _looks_like_uuid(value):
    return len(value) == 36 and value.count('-') == 4


def _paginate(session, query, model, limit, sort_key, sort_dir, marker):
    """Order by ``(sort_key, id)`` and start after the row whose uuid is
    ``marker``; an unknown marker is a 400.

    NULL sorts after every value (before, with desc: desc is asc
    reversed) on every backend. oslo.db's paginate_query leaves NULL order
    to the backend and skips rows when the marker's sort key is NULL.
    """
    column = getattr(model, sort_key)
    nullable = model.__table__.c[sort_key].nullable
    ascending = sort_dir == 'asc'
    direction = sa.asc if ascending else sa.desc
    order = [direction(column), direction(model.id)]
    if nullable:
        order.insert(0, direction(sa.case((column.is_(None), 1), else_=0)))
    query = query.order_by(*order)
    if marker is not None:
        marker_uuid = marker
        marker = session.scalars(sa.select(model).where(
            model.uuid == marker_uuid)).first()
        if marker is None:
            raise exception.Invalid(reason='marker %s does not exist.'
                                    % marker_uuid)
        value = getattr(marker, sort_key)

        def after(attribute, bound):
            return attribute > bound if ascending else attribute < bound

        if value is None:
            later = sa.and_(column.is_(None), after(model.id, marker.id))
            if not ascending:
                later = sa.or_(later, column.is_not(None))
        else:
            later = sa.or_(after(column, value), sa.and_(
                column == value, after(model.id, marker.id)))
            if nullable and ascending:
                later = sa.or_(later, column.is_(None))
        query = query.filter(later)
    return query.limit(limit) if limit is not None else query


NODE_SORT_KEYS = ('uuid', 'name', 'resource_class', 'provision_state',
                  'memory_mb', 'cpus', 'local_gb', 'created_at',
                  'updated_at', 'synced_at')


def list_nodes(filters=None, limit=None, marker=None, sort_key='uuid',
               sort_dir='asc'):
    """Nodes matching equality ``filters``; ``reserved`` filters on a
    live reservation.
    """
    filters = dict(filters or {})
    with _reader() as session:
        query = _nodes_with_reservations(session)
        reserved = filters.pop('reserved', None)
        if reserved is not None:
            query = query.filter(models.Reservation.id.is_not(None)
                                 if reserved else
                                 models.Reservation.id.is_(None))
        for column, value in filters.items():
            query = query.filter(getattr(models.Node, column) == value)
        query = _paginate(session, query, models.Node, limit, sort_key,
                          sort_dir, marker)
        return [_node_record(*row) for row in query]


# Matching ------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class NodeFilter:
    """What SQL can decide about a node before Python looks at it.

    Every field narrows; None or empty means "no constraint". Matching
    re-checks every rule in Python, so this must only ever drop nodes
    that Python would drop too.
    """

    resource_class: str | None = None
    cpu_arch: str | None = None
    min_memory_mb: int | None = None
    min_cpus: int | None = None
    min_local_gb: int | None = None
    exact_memory_mb: int | None = None
    exact_cpus: int | None = None
    required_traits: frozenset = frozenset()
    forbidden_traits: frozenset = frozenset()
    capability_in: tuple = ()        # ((key, (value, ...)), ...)
    capability_true: tuple = ()      # (key, ...): value is true, any case
    project_id: str | None = None
    candidates: frozenset | None = None


# The order candidates are read in: smallest first, which is best fit
# whichever dimensions a flavor sizes on, and exactly the best-fit
# index's order, so the database stops reading at the LIMIT.
FIT_ORDER = ('memory_mb', 'cpus', 'local_gb', 'id')


def _has_live_reservation():
    return sa.exists().where(_live_reservation_join())


def _eligible_clauses():
    """The eligibility rules, each a (criterion name, clause) pair."""
    node = models.Node
    return [
        ('provision_state', node.provision_state == 'available'),
        ('power_state', node.power_state.is_not(None)),
        ('maintenance', sa.not_(node.maintenance)),
        ('retired', sa.not_(node.retired)),
        ('instance_uuid', node.instance_uuid.is_(None)),
        ('reserved', sa.not_(_has_live_reservation())),
    ]


def _filter_clauses(node_filter):
    """(criterion name, clause) pairs, in the matcher's criteria order."""
    node = models.Node
    f = node_filter
    clauses = _eligible_clauses()
    if f.candidates is not None:
        names = sorted(f.candidates)
        clauses.append(('candidate_nodes',
                        sa.or_(node.uuid.in_(names), node.name.in_(names))))
    if f.project_id is not None:
        clauses.append(('owner', sa.or_(
            sa.and_(node.owner.is_(None), node.lessee.is_(None)),
            node.owner == f.project_id, node.lessee == f.project_id)))
    if f.resource_class is not None:
        clauses.append(('resource_class',
                        node.resource_class == f.resource_class))
    if f.cpu_arch is not None:
        clauses.append(('cpu_arch', node.cpu_arch == f.cpu_arch))
    for name, column, minimum, exact in (
            ('memory_mb', node.memory_mb, f.min_memory_mb, f.exact_memory_mb),
            ('cpus', node.cpus, f.min_cpus, f.exact_cpus),
            ('local_gb', node.local_gb, f.min_local_gb, None)):
        if exact is not None:
            clauses.append((name, column == exact))
        elif minimum:
            clauses.append((name, column >= minimum))
    for trait in sorted(f.required_traits):
        clauses.append(('required_traits:' + trait, sa.exists().where(
            models.NodeTrait.node_id == node.id,
            models.NodeTrait.trait == trait)))
    for trait in sorted(f.forbidden_traits):
        clauses.append(('forbidden_traits:' + trait, ~sa.exists().where(
            models.NodeTrait.node_id == node.id,
            models.NodeTrait.trait == trait)))
    for key, values in f.capability_in:
        clauses.append(('capabilities:' + key, sa.exists().where(
            models.NodeCapability.node_id == node.id,
            models.NodeCapability.key == key,
            models.NodeCapability.value.in_(values))))
    for key in f.capability_true:
        clauses.append(('capabilities:' + key, sa.exists().where(
            models.NodeCapability.node_id == node.id,
            models.NodeCapability.key == key,
            sa.func.lower(models.NodeCapability.value) == 'true')))
    return clauses


def candidate_batches(node_filter, batch_size, first_batch=None):
    """Yield lists of NodeRecords passing ``node_filter``, best fit first.

    Keyset pagination over FIT_ORDER keeps every batch one short
    indexed query, however many nodes there are. Batches start at
    ``first_batch`` and double up to ``batch_size``: usually the first few
    rows already match, and loading more would only cost time. Rows are
    read with Core, not the ORM: this is the hot path.
    """
    node = models.Node
    clauses = [node.schedulable == sa.true(), node.reserved == sa.false()] + [
        clause for _name, clause in _filter_clauses(node_filter)]
    order = [getattr(node, column) for column in FIT_ORDER]
    columns = [node.id, node.vanished, node.synced_at, node.created_at,
               node.updated_at] + [getattr(node, c) for c in _NODE_COLUMNS]
    size = min(first_batch or batch_size, batch_size)
    last = None
    while True:
        query = sa.select(*columns).where(*clauses).order_by(*order).limit(
            size)
        if last is not None:
            query = query.where(sa.tuple_(*order) > last)
        with _reader() as session:
            rows = session.execute(query).all()
            ids = [row.id for row in rows]
            traits, capabilities = _children_of(session, ids)
        if not rows:
            return
        yield [NodeRecord(capabilities=capabilities.get(row.id, {}),
                          traits=frozenset(traits.get(row.id, ())),
                          **row._asdict())
               for row in rows]
        if len(rows) < size:
            return
        last = tuple(getattr(rows[-1], column) for column in FIT_ORDER)
        size = min(size * 2, batch_size)


def _children_of(session, node_ids):
    """Traits and capabilities of some nodes, as two dicts by node id.

    One round trip: traits come back as rows with a NULL value.
    """
    traits = collections.defaultdict(list)
    capabilities = collections.defaultdict(dict)
    if node_ids:
        trait, capability = models.NodeTrait, models.NodeCapability
        rows = sa.union_all(
            sa.select(trait.node_id, trait.trait.label('key'),
                      sa.cast(sa.null(), sa.String(255)).label('value'))
            .where(trait.node_id.in_(node_ids)),
            sa.select(capability.node_id, capability.key, capability.value)
            .where(capability.node_id.in_(node_ids)))
        for node_id, key, value in session.execute(rows):
            if value is None:
                traits[node_id].append(key)
            else:
                capabilities[node_id][key] = value
    return traits, capabilities


def count_eliminated(node_filter):
    """Explain an empty match: ``(total, eliminated, capability_values)``.

    ``eliminated`` counts, per SQL criterion, the nodes it was the first
    to reject; ``capability_values`` holds, for a rejecting capability,
    the most common values (None when unset) among the nodes it rejected.
    """
    clauses = _filter_clauses(node_filter)
    node = models.Node
    with _reader() as session:
        def passing(count):
            return [node.vanished.is_(False)] + [
                clause for _name, clause in clauses[:count]]

        counts = [session.scalar(sa.select(sa.func.count()).select_from(
            node).where(*passing(index)))
            for index in range(len(clauses) + 1)]
        eliminated, capability_values = {}, {}
        for index, (name, _clause) in enumerate(clauses):
            rejected = counts[index] - counts[index + 1]
            if not rejected:
                continue
            eliminated[name] = rejected
            if name.startswith('capabilities:'):
                key = name.partition(':')[2]
                capability = orm.aliased(models.NodeCapability)
                rows = session.execute(
                    sa.select(capability.value, sa.func.count())
                    .select_from(node)
                    .outerjoin(capability, sa.and_(
                        capability.node_id == node.id, capability.key == key))
                    .where(*passing(index), sa.not_(clauses[index][1]))
                    .group_by(capability.value)
                    .order_by(sa.func.count().desc(),
                              capability.value.is_(None), capability.value)
                    .limit(5))
                capability_values[key] = collections.Counter(
                    {value if value is not None else '<unset>': count
                     for value, count in rows})
    return counts[0], eliminated, capability_values


# Reservations --------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ReservationRecord:
    uuid: str
    instance_uuid: str
    host: str
    project_id: str | None
    state: str
    node_id: int
    node_uuid: str
    node_name: str | None
    resource_class: str | None
    created_at: object
    updated_at: object
    expires_at: object


def _reservation_record(reservation, node=None):
    node = node or reservation.node
    return ReservationRecord(
        uuid=reservation.uuid,
        instance_uuid=reservation.instance_uuid, host=reservation.host,
        project_id=reservation.project_id, state=reservation.state,
        node_id=node.id, node_uuid=node.uuid, node_name=node.name,
        resource_class=node.resource_class,
        created_at=reservation.created_at,
        updated_at=reservation.updated_at,
        expires_at=reservation.expires_at)


def get_live_reservation_for_instance(instance_uuid):
    with _reader() as session:
        reservation = session.query(models.Reservation).filter_by(
            active_instance_uuid=instance_uuid).first()
        return (_reservation_record(reservation)
                if reservation is not None else None)


@_retry_on_deadlock
def create_reservation(values, node):
    """Claim ``node`` (a NodeRecord) for a new reservation, or raise.

    One INSERT ... SELECT that only inserts while the node is still
    eligible. The unique live-node and live-instance columns make this
    safe against every concurrent writer: the loser gets
    NodeAlreadyReserved (try the next node) or InstanceReserved (the
    instance got one meanwhile).
    """
    now = timeutils.utcnow()
    row = dict(values, node_id=node.id, active_node_id=node.id,
               active_instance_uuid=values['instance_uuid'],
               state=RESERVED, created_at=now)
    columns = sorted(row)
    eligible = sa.select(*[sa.literal(row[column]) for column in columns]
                         ).where(
        models.Node.id == node.id, models.Node.vanished.is_(False),
        *[clause for name, clause in _eligible_clauses()
          if name != 'reserved'])
    try:
        with _writer() as session:
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
            instance_uuid=values['instance_uuid'], reservation='?',
            host='?')
    if not inserted:
        raise exception.NodeAlreadyReserved(node=node.uuid)
    return ReservationRecord(
        uuid=row['uuid'], instance_uuid=row['instance_uuid'],
        host=row['host'], project_id=row['project_id'], state=RESERVED,
        node_id=node.id, node_uuid=node.uuid, node_name=node.name,
        resource_class=node.resource_class, created_at=now, updated_at=None,
        expires_at=None)


def get_reservation(uuid):
    with _reader() as session:
        reservation = session.query(models.Reservation).filter_by(
            uuid=uuid).first()
        if reservation is None:
            raise exception.ReservationNotFound(reservation=uuid)
        return _reservation_record(reservation)


RESERVATION_SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'host',
                         'instance_uuid', 'state', 'expires_at')


def list_reservations(filters=None, limit=None, marker=None,
                      sort_key='created_at', sort_dir='asc'):
    """Reservations matching equality ``filters`` (``node_uuid`` too)."""
    filters = dict(filters or {})
    with _reader() as session:
        query = session.query(models.Reservation).join(models.Reservation.node)
        node_uuid = filters.pop('node_uuid', None)
        if node_uuid is not None:
            query = query.filter(models.Node.uuid == node_uuid)
        for column, value in filters.items():
            query = query.filter(getattr(models.Reservation, column) == value)
        query = _paginate(session, query, models.Reservation, limit,
                          sort_key, sort_dir, marker)
        return [_reservation_record(reservation) for reservation in query]


@_retry_on_deadlock
def update_reservation(uuid, expected_state, values):
    """Compare-and-set update: only if the state is still as read."""
    values = dict(values, updated_at=timeutils.utcnow())
    with _writer() as session:
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


@_retry_on_deadlock
def delete_reservation(uuid):
    """Delete a reservation; its node is free as soon as this commits."""
    with _writer() as session:
        node_id = session.scalar(sa.select(models.Reservation.node_id).where(
            models.Reservation.uuid == uuid))
        deleted = session.execute(sa.delete(models.Reservation).where(
            models.Reservation.uuid == uuid)).rowcount
        if deleted:
            _refresh_flags(session, [node_id])
    if not deleted:
        raise exception.ReservationNotFound(reservation=uuid)


@_retry_on_deadlock
def expire_reservations(older_than):
    """End every ``reserved`` reservation created before ``older_than``.

    The UPDATE re-checks the state, so concurrent workers never expire one
    twice and a reservation confirmed meanwhile (now ``active``) is left
    alone.
    """
    now = timeutils.utcnow()
    stale = (models.Reservation.state == RESERVED,
             models.Reservation.created_at < older_than)
    with _writer() as session:
        node_ids = list(session.scalars(
            sa.select(models.Reservation.node_id).where(*stale)))
        expired = session.execute(
            sa.update(models.Reservation).where(*stale).values(
                state=EXPIRED, active_node_id=None,
                active_instance_uuid=None, expires_at=now, updated_at=now)
        ).rowcount
        _refresh_flags(session, node_ids)
    return expired


# Capacity ------------------------------------------------------------------

def capacity(host=None):
    """Per resource class: total, available, reserved, and summed sizes,
    as ints (SUM gives NULL or a Decimal on some backends)."""
    node = models.Node
    reservation = models.Reservation
    eligible = sa.and_(reservation.id.is_(None), *[
        clause for name, clause in _eligible_clauses() if name != 'reserved'])
    columns = [
        node.resource_class,
        sa.func.count(node.id).label('total'),
        sa.func.sum(sa.case((eligible, 1), else_=0)).label('available'),
        sa.func.sum(sa.case((reservation.id.is_not(None), 1),
                            else_=0)).label('reserved'),
        sa.func.sum(node.memory_mb).label('memory_mb'),
        sa.func.sum(node.cpus).label('vcpus'),
        sa.func.sum(node.local_gb).label('local_gb'),
    ]
    if host is not None:
        columns.append(sa.func.sum(sa.case(
            (reservation.host == host, 1), else_=0)).label('reserved_by_host'))
    query = (sa.select(*columns)
             .select_from(node)
             .outerjoin(reservation, _live_reservation_join())
             .where(node.vanished.is_(False))
             .group_by(node.resource_class)
             # Nodes without a resource class last, on every backend.
             .order_by(node.resource_class.is_(None), node.resource_class))
    with _reader() as session:
        return [{key: value if key == 'resource_class' else int(value or 0)
                 for key, value in row._mapping.items()}
                for row in session.execute(query)]


# Aggregate mirror ----------------------------------------------------------

MIRROR_PENDING = 'pending'
MIRROR_SYNCED = 'synced'
MIRROR_AGGREGATE_SORT_KEYS = ('uuid', 'created_at', 'updated_at')
_MIRROR_ERROR_LENGTH = 2000

# Two requests for an aggregate we have never seen both insert it; the
# loser starts over and finds it.
_retry_on_duplicate = oslo_db_api.wrap_db_retry(
    max_retries=5, retry_on_deadlock=True,
    exception_checker=lambda exc: isinstance(exc, db_exc.DBDuplicateEntry))


@dataclasses.dataclass(frozen=True)
class MirrorHostRecord:
    """Desired membership of one host in one aggregate, and its progress."""

    id: int
    aggregate_uuid: str
    host: str
    member: bool
    version: int
    state: str
    attempts: int
    last_error: str | None
    next_attempt_at: object
    pending_since: object
    synced_at: object

    @property
    def synced(self):
        return self.state == MIRROR_SYNCED


@dataclasses.dataclass(frozen=True)
class MirrorAggregateRecord:
    uuid: str
    deleted: bool
    created_at: object
    updated_at: object
    hosts: tuple
    """Every host row, member or not, sorted by host name."""


def _mirror_host_record(row, aggregate_uuid):
    return MirrorHostRecord(
        id=row.id, aggregate_uuid=aggregate_uuid, host=row.host,
        member=row.member, version=row.version, state=row.state,
        attempts=row.attempts, last_error=row.last_error,
        next_attempt_at=row.next_attempt_at,
        pending_since=row.pending_since, synced_at=row.synced_at)


def _mirror_aggregate_record(aggregate):
    return MirrorAggregateRecord(
        uuid=aggregate.uuid, deleted=aggregate.deleted,
        created_at=aggregate.created_at, updated_at=aggregate.updated_at,
        hosts=tuple(sorted((_mirror_host_record(row, aggregate.uuid)
                            for row in aggregate.hosts),
                           key=lambda record: record.host)))


def _unclaimed(now):
    claimed_until = models.MirrorHost.claimed_until
    return sa.or_(claimed_until.is_(None), claimed_until < now)


def _locked_mirror_aggregate(session, uuid, now):
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


def _set_desired(row, member, now, claimed_by, claimed_until):
    """Make ``row`` pending for ``member``; a flip is a new version whose
    attempts start over.
    """
    if row.member != member:
        row.member = member
        row.version += 1
        row.attempts = 0
        row.last_error = None
    if row.state != MIRROR_PENDING or row.pending_since is None:
        row.pending_since = now
    row.state = MIRROR_PENDING
    row.next_attempt_at = None
    row.claimed_by = claimed_by
    row.claimed_until = claimed_until if claimed_by else None


@_retry_on_duplicate
def set_mirror_membership(aggregate_uuid, host, member, claimed_by=None,
                          claimed_until=None):
    """Record that ``host`` should (``member``) or should not be in the
    aggregate, pending until applied.

    The aggregate is recorded on first sight and revived when a host
    joins it after a delete. With ``claimed_by`` the caller applies the
    row at once and takes it over from any worker, whose finish then
    finds the version or the claim changed; without, a worker takes it.
    """
    now = timeutils.utcnow()
    with _writer() as session:
        aggregate = _locked_mirror_aggregate(session, aggregate_uuid, now)
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
        _set_desired(row, member, now, claimed_by, claimed_until)
        session.flush()
        return _mirror_host_record(row, aggregate_uuid)


@_retry_on_duplicate
def delete_mirror_aggregate(aggregate_uuid, claimed_by=None,
                            claimed_until=None):
    """Mark the aggregate deleted and every host as leaving it.

    The row stays, so that its UUID is still known as ours wherever it
    remains in Placement, until a reconcile finds it gone everywhere.
    Returns the hosts that still have to leave, claimed as by
    ``set_mirror_membership``.
    """
    now = timeutils.utcnow()
    host = models.MirrorHost
    with _writer() as session:
        aggregate = _locked_mirror_aggregate(session, aggregate_uuid, now)
        aggregate.deleted = True
        rows = session.scalars(
            sa.select(host)
            .where(host.aggregate_id == aggregate.id,
                   sa.or_(host.member.is_(True),
                          host.state == MIRROR_PENDING))
            .order_by(host.host)
            .with_for_update()).all()
        for row in rows:
            _set_desired(row, False, now, claimed_by, claimed_until)
        session.flush()
        return [_mirror_host_record(row, aggregate_uuid) for row in rows]


@_retry_on_duplicate
def record_mirror_aggregates(uuids):
    """Know these aggregates as ours and alive: a full desired state
    (Nova's list, an operator's file) names them.
    """
    now = timeutils.utcnow()
    with _writer() as session:
        for uuid in uuids:
            _locked_mirror_aggregate(session, uuid, now).deleted = False


def _claimed_mirror_hosts(session, claimed_by, ids):
    """Those of ``ids`` that ``claimed_by`` holds."""
    rows = session.execute(
        sa.select(models.MirrorHost, models.MirrorAggregate.uuid)
        .join(models.MirrorAggregate)
        .where(models.MirrorHost.id.in_(ids),
               models.MirrorHost.claimed_by == claimed_by)
        .order_by(models.MirrorHost.id))
    return [_mirror_host_record(row, uuid) for row, uuid in rows]


def claim_mirror_hosts(claimed_by, claimed_until, limit, now=None):
    """Claim up to ``limit`` pending rows that are due and unclaimed.

    The UPDATE repeats the conditions of the SELECT, and the database
    serializes writes to a row: of several workers racing for a row,
    the first to commit gets it and the others' UPDATE skips it. A
    worker that lost every row it selected looks again, in a new
    transaction, so that it only comes back empty-handed when nothing
    is due.
    """
    now = now or timeutils.utcnow()
    while True:
        selected, claimed = _claim_mirror_hosts(claimed_by, claimed_until,
                                                limit, now)
        if claimed or not selected:
            return claimed


@_retry_on_deadlock
def _claim_mirror_hosts(claimed_by, claimed_until, limit, now):
    host = models.MirrorHost
    due = sa.and_(host.state == MIRROR_PENDING,
                  sa.or_(host.next_attempt_at.is_(None),
                         host.next_attempt_at <= now),
                  _unclaimed(now))
    with _writer() as session:
        ids = session.scalars(sa.select(host.id).where(due)
                              .order_by(host.id).limit(limit)).all()
        if not ids:
            return 0, []
        session.execute(sa.update(host).where(host.id.in_(ids), due).values(
            claimed_by=claimed_by, claimed_until=claimed_until))
        return len(ids), _claimed_mirror_hosts(session, claimed_by, ids)


@_retry_on_deadlock
def claim_mirror_host(host_id, version, claimed_by, claimed_until,
                      now=None):
    """Make one row pending and claim it, because Placement was found to
    disagree with it; None if it changed since it was read (``version``)
    or someone else is applying it.
    """
    now = now or timeutils.utcnow()
    host = models.MirrorHost
    with _writer() as session:
        claimed = session.execute(
            sa.update(host)
            .where(host.id == host_id, host.version == version,
                   _unclaimed(now))
            .values(state=MIRROR_PENDING,
                    pending_since=sa.func.coalesce(host.pending_since, now),
                    claimed_by=claimed_by, claimed_until=claimed_until)
        ).rowcount
        if not claimed:
            return None
        (record,) = _claimed_mirror_hosts(session, claimed_by, [host_id])
        return record


@_retry_on_deadlock
def finish_mirror_host(host_id, version, claimed_by, error=None,
                       retry_at=None):
    """Record the outcome of applying ``version`` of a row; True if it is
    now synced.

    If the desired state changed meanwhile, what the caller wrote may
    have landed after the newer change: the row goes back to pending,
    unclaimed and due at once, so that the newest state is written last
    (whoever is applying it now loses the claim and does not mark it
    synced). Otherwise the outcome counts only while the caller still
    holds the claim: ``error`` schedules a retry at ``retry_at``.
    """
    now = timeutils.utcnow()
    host = models.MirrorHost
    released = {'claimed_by': None, 'claimed_until': None}
    with _writer() as session:
        overtaken = session.execute(
            sa.update(host)
            .where(host.id == host_id, host.version != version)
            .values(state=MIRROR_PENDING, next_attempt_at=None,
                    pending_since=sa.func.coalesce(host.pending_since, now),
                    **released)).rowcount
        if overtaken:
            return False
        if error is None:
            outcome = {'state': MIRROR_SYNCED, 'attempts': 0,
                       'last_error': None, 'next_attempt_at': None,
                       'pending_since': None, 'synced_at': now}
        else:
            outcome = {'attempts': host.attempts + 1,
                       'last_error': error[:_MIRROR_ERROR_LENGTH],
                       'next_attempt_at': retry_at}
        recorded = session.execute(
            sa.update(host)
            .where(host.id == host_id, host.version == version,
                   host.claimed_by == claimed_by)
            .values(**outcome, **released)).rowcount
    return bool(recorded) and error is None


def get_mirror_aggregate(uuid):
    with _reader() as session:
        aggregate = session.scalars(
            sa.select(models.MirrorAggregate)
            .where(models.MirrorAggregate.uuid == uuid)).first()
        if aggregate is None:
            raise exception.AggregateNotFound(aggregate=uuid)
        return _mirror_aggregate_record(aggregate)


def list_mirror_aggregates(limit=None, marker=None, sort_key='uuid',
                           sort_dir='asc'):
    """Aggregates with all their host rows, deleted ones included."""
    with _reader() as session:
        query = _paginate(session, session.query(models.MirrorAggregate),
                          models.MirrorAggregate, limit, sort_key, sort_dir,
                          marker)
        return [_mirror_aggregate_record(aggregate) for aggregate in query]


@_retry_on_deadlock
def purge_mirror_aggregate(uuid, now=None):
    """Forget a deleted aggregate nobody is still leaving; True if done.

    Callers purge only after finding no provider in the aggregate, so
    ownership ends when nothing of it is left in Placement.
    """
    now = now or timeutils.utcnow()
    host = models.MirrorHost
    with _writer() as session:
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
                          host.state == MIRROR_PENDING,
                          sa.not_(_unclaimed(now))))
            .limit(1))
        if busy is not None:
            return False
        session.execute(sa.delete(host).where(
            host.aggregate_id == aggregate_id))
        session.execute(sa.delete(models.MirrorAggregate).where(
            models.MirrorAggregate.id == aggregate_id))
        return True


def mirror_status():
    """Row counts per state, and the row pending the longest (or None)."""
    host = models.MirrorHost
    with _reader() as session:
        counts = dict(session.execute(
            sa.select(host.state, sa.func.count(host.id))
            .group_by(host.state)).all())
        oldest = session.execute(
            sa.select(host, models.MirrorAggregate.uuid)
            .join(models.MirrorAggregate)
            .where(host.state == MIRROR_PENDING)
            .order_by(host.pending_since, host.id)
            .limit(1)).first()
        return {'pending': counts.get(MIRROR_PENDING, 0),
                'synced': counts.get(MIRROR_SYNCED, 0),
                'oldest_pending': (_mirror_host_record(*oldest)
                                   if oldest is not None else None)}
