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

"""SQLAlchemy models: the schema the alembic migrations create.

String columns that are indexed stay at 255 characters or fewer so that
their indexes fit utf8mb4 on MariaDB/MySQL.
"""

from oslo_db.sqlalchemy import models
from oslo_utils import timeutils
import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import mysql

from reserveapi.common import eligibility
from reserveapi.common import node_fields

TABLE_ARGS = {'mysql_charset': 'utf8mb4', 'mysql_engine': 'InnoDB'}
# Microseconds on MariaDB/MySQL too, whose DATETIME keeps whole seconds
# unless told otherwise: ordering, expiry and leases need them.
DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')
# Unbounded text; MEDIUMTEXT on MariaDB/MySQL, whose TEXT stops at 64 KB.
NodeText = sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql')


class Base(models.ModelBase, orm.DeclarativeBase):
    """Declarative base; timestamps are naive UTC."""


class TimestampMixin:
    created_at = sa.Column(DateTime, nullable=False,
                           default=timeutils.utcnow)
    updated_at = sa.Column(DateTime, nullable=True,
                           onupdate=timeutils.utcnow)


def _copied(name):
    """The type of a node's string column copied from the inventory: as
    wide as common/node_fields.py declares it."""
    return sa.String(node_fields.max_length(name))


class Node(TimestampMixin, Base):
    """A bare metal node as last read from the inventory source.

    Sizing, state and ownership are columns so the matcher can filter in
    SQL; capabilities and traits live in their own tables for the same
    reason.
    """

    __tablename__ = 'nodes'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_nodes0uuid'),
        sa.Index('nodes_fit_idx', 'resource_class', 'schedulable',
                 'reserved', 'memory_mb', 'cpus', 'local_gb', 'id'),
        sa.Index('nodes_stale_since_idx', 'stale_since'),
        TABLE_ARGS,
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    uuid = sa.Column(_copied('uuid'), nullable=False)
    name = sa.Column(_copied('name'), nullable=True, index=True)
    resource_class = sa.Column(_copied('resource_class'), nullable=True)
    memory_mb = sa.Column(sa.Integer, nullable=False, default=0)
    cpus = sa.Column(sa.Integer, nullable=False, default=0)
    local_gb = sa.Column(sa.Integer, nullable=False, default=0)
    cpu_arch = sa.Column(_copied('cpu_arch'), nullable=True)
    provision_state = sa.Column(_copied('provision_state'), nullable=True)
    power_state = sa.Column(_copied('power_state'), nullable=True)
    maintenance = sa.Column(sa.Boolean, nullable=False, default=False)
    retired = sa.Column(sa.Boolean, nullable=False, default=False)
    instance_uuid = sa.Column(_copied('instance_uuid'), nullable=True)
    conductor_group = sa.Column(_copied('conductor_group'), nullable=True)
    shard = sa.Column(_copied('shard'), nullable=True)
    owner = sa.Column(_copied('owner'), nullable=True)
    lessee = sa.Column(_copied('lessee'), nullable=True)
    vanished = sa.Column(sa.Boolean, nullable=False, default=False)
    synced_at = sa.Column(DateTime, nullable=True)
    # Derived flags that lead the best-fit index, so that finding a node
    # never walks past nodes that are busy or taken. ``schedulable`` is
    # refreshed by the inventory sync, ``reserved`` with every reservation
    # change; the eligibility rules are still checked in full.
    schedulable = sa.Column(sa.Boolean, nullable=False, default=False)
    reserved = sa.Column(sa.Boolean, nullable=False, default=False)
    fingerprint = sa.Column(sa.String(64), nullable=True)
    # Set when the node was released, or Ironic refused to let us claim
    # it: it stays out of matching until a sync reads it again (it may be
    # cleaning). Cleared only by a read that started after it was set.
    stale_since = sa.Column(DateTime, nullable=True)
    # The node's rows of node_traits and node_capabilities as texts the
    # candidate query tests in the row (db/node_texts.py); the sync
    # writes them with the rows.
    traits_text = sa.Column(NodeText, nullable=False, server_default=',')
    capabilities_text = sa.Column(NodeText, nullable=False,
                                  server_default=',')

    traits = orm.relationship(
        'NodeTrait', primaryjoin='Node.id == foreign(NodeTrait.node_id)',
        cascade='all, delete-orphan', lazy='selectin')
    capabilities = orm.relationship(
        'NodeCapability',
        primaryjoin='Node.id == foreign(NodeCapability.node_id)',
        cascade='all, delete-orphan', lazy='selectin')


_RULE_TESTS = {
    eligibility.EQUALS: lambda column, rule: column == rule.value,
    eligibility.IS_SET: lambda column, rule: column.is_not(None),
    eligibility.IS_UNSET: lambda column, rule: column.is_(None),
    eligibility.FALSE: lambda column, rule: sa.not_(column),
}


def passing(rule, node=Node):
    """The nodes passing ``rule`` (a node-state rule of
    common/eligibility.py), as SQL over ``node`` (Node or an alias):
    here, below every module that asks it, so that all ask it alike.
    The inventory stores an empty text as NULL."""
    return _RULE_TESTS[rule.test](getattr(node, rule.field), rule)


def in_universe(node=Node):
    """The clauses of the nodes every count is over (eligibility.UNIVERSE:
    those still in the inventory), over ``node``."""
    return [passing(criterion.rule, node)
            for criterion in eligibility.UNIVERSE]


class NodeTrait(Base):
    # Read by node (the primary key): matching tests traits in the
    # node's row (traits_text), so no index by trait. No foreign key to
    # nodes, as Placement's inventories and allocations have none: the
    # sync writes a node's rows only with the node, in bulk, where a key
    # checks every row inserted, one lookup each, as costly as the insert
    # itself (migration 0009); removing a node removes them first.
    __tablename__ = 'node_traits'
    __table_args__ = (TABLE_ARGS,)

    node_id = sa.Column(sa.Integer, primary_key=True)
    trait = sa.Column(sa.String(node_fields.ITEM_LENGTH), primary_key=True)


class NodeCapability(Base):
    # Read by node and key (the primary key); no foreign key, as
    # NodeTrait.
    __tablename__ = 'node_capabilities'
    __table_args__ = (TABLE_ARGS,)

    node_id = sa.Column(sa.Integer, primary_key=True)
    key = sa.Column(sa.String(node_fields.ITEM_LENGTH), primary_key=True)
    value = sa.Column(sa.String(node_fields.ITEM_LENGTH), nullable=False)


class Reservation(TimestampMixin, Base):
    """One node held for one instance on behalf of one compute host.

    ``active_node_id`` and ``active_instance_uuid`` are set while the
    reservation is live and cleared when it ends; their unique constraints
    are what makes a double booking impossible across processes.
    """

    __tablename__ = 'reservations'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_reservations0uuid'),
        sa.UniqueConstraint('active_node_id',
                            name='uniq_reservations0active_node_id'),
        sa.UniqueConstraint('active_instance_uuid',
                            name='uniq_reservations0active_instance_uuid'),
        # Leads with the host and then tells live reservations apart:
        # a host's live reservations per class without reading its ended
        # ones (capacity's ``reserved_by_host``).
        sa.Index('reservations_host_live_idx', 'host', 'active_node_id'),
        sa.Index('reservations_instance_uuid_idx', 'instance_uuid'),
        sa.Index('reservations_state_created_idx', 'state', 'created_at'),
        sa.Index('reservations_hold_state_idx', 'hold_id', 'state'),
        TABLE_ARGS,
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    uuid = sa.Column(sa.String(36), nullable=False)
    instance_uuid = sa.Column(sa.String(36), nullable=False)
    host = sa.Column(sa.String(255), nullable=False)
    project_id = sa.Column(sa.String(255), nullable=True)
    node_id = sa.Column(sa.Integer,
                        sa.ForeignKey('nodes.id', ondelete='CASCADE'),
                        nullable=False)
    state = sa.Column(sa.String(16), nullable=False)
    active_node_id = sa.Column(sa.Integer, nullable=True)
    active_instance_uuid = sa.Column(sa.String(36), nullable=True)
    expires_at = sa.Column(DateTime, nullable=True)
    # The hold whose node this pins (state ``pinned``) or whose boot it
    # is; NULL for an on-demand reservation.
    hold_id = sa.Column(sa.Integer, nullable=True)

    node = orm.relationship('Node', lazy='joined', innerjoin=True)


class Hold(TimestampMixin, Base):
    """A promise of ``amount`` nodes matching ``request_spec`` to one
    project from ``start_at`` to ``end_at``.

    ``busy_from`` and ``busy_until`` are that window padded by
    ``padding`` seconds at both ends, for cleaning: stored, so that the
    holds still to be kept are found by an index.

    From its start its nodes are pinned (reservations with its
    ``hold_id``); ``reclaimed`` counts the pins given back unused,
    ``shortfall`` the nodes its last pinning could not find.
    ``finished_at`` is when its end was carried out (``at_end``:
    ``delete`` or ``keep`` its instances).
    """

    __tablename__ = 'holds'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_holds0uuid'),
        sa.Index('holds_busy_until_idx', 'busy_until'),
        sa.Index('holds_project_start_idx', 'project_id', 'start_at'),
        sa.Index('holds_finished_idx', 'finished_at'),
        TABLE_ARGS,
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    uuid = sa.Column(sa.String(36), nullable=False)
    project_id = sa.Column(sa.String(255), nullable=False)
    amount = sa.Column(sa.Integer, nullable=False)
    # The request spec as sent, in JSON.
    request_spec = sa.Column(sa.Text, nullable=False)
    resource_class = sa.Column(sa.String(255), nullable=True)
    shard = sa.Column(sa.String(255), nullable=True)
    conductor_group = sa.Column(sa.String(255), nullable=True)
    start_at = sa.Column(DateTime, nullable=False)
    end_at = sa.Column(DateTime, nullable=False)
    padding = sa.Column(sa.Integer, nullable=False)
    busy_from = sa.Column(DateTime, nullable=False)
    busy_until = sa.Column(DateTime, nullable=False)
    cancelled_at = sa.Column(DateTime, nullable=True)
    at_end = sa.Column(sa.String(16), nullable=False, server_default='keep')
    reclaimed = sa.Column(sa.Integer, nullable=False, server_default='0')
    shortfall = sa.Column(sa.Integer, nullable=False, server_default='0')
    flavor_id = sa.Column(sa.String(255), nullable=True)
    warned_at = sa.Column(DateTime, nullable=True)
    finished_at = sa.Column(DateTime, nullable=True)


class HoldGuard(Base):
    """One row whose ``version`` every write of a hold, and every
    reservation a hold may need, moves on in its own transaction: such
    writers take turns on it, Galera's included, which orders only
    writes. No row reads as version 0; the first writer inserts it
    (db/holds.py).
    """

    __tablename__ = 'hold_guard'
    __table_args__ = (TABLE_ARGS,)

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=False)
    version = sa.Column(sa.Integer, nullable=False)


SUMMARY_SLOTS = 16
"""Counter rows per key of the node summary: a node adds to slot ``id %
SUMMARY_SLOTS``, so that concurrent reservations (and Galera writers)
seldom update the same row; a reader sums the slots, those past
SUMMARY_SLOTS too, where bulk writes append their counts
(db/counters.py)."""


def _summary_key(name, length=None):
    """A key column of the node summary, as wide as the node's field of
    that name unless ``length`` is given: the partition's shard and
    conductor group are '' where the node's are NULL (the inventory
    stores an empty value as NULL, so '' is never a value of its own)."""
    return sa.Column(name, sa.String(length or node_fields.max_length(name)),
                     primary_key=True)


class CapacityCounter(Base):
    """Per partition, resource class and slot: the capacity counts of
    the nodes, kept by triggers on ``nodes`` (migration 0007) in the
    transaction of every change, so that reading capacity costs the same
    at any number of nodes.
    """

    __tablename__ = 'capacity_counters'
    __table_args__ = (TABLE_ARGS,)

    shard = _summary_key('shard')
    conductor_group = _summary_key('conductor_group')
    resource_class = _summary_key('resource_class')
    slot = sa.Column(sa.Integer, primary_key=True, autoincrement=False)
    total = sa.Column(sa.BigInteger, nullable=False)
    available = sa.Column(sa.BigInteger, nullable=False)
    reserved = sa.Column(sa.BigInteger, nullable=False)
    memory_mb = sa.Column(sa.BigInteger, nullable=False)
    vcpus = sa.Column(sa.BigInteger, nullable=False)
    local_gb = sa.Column(sa.BigInteger, nullable=False)


class FreeTraitCounter(Base):
    """Per partition, trait and slot: how many free nodes have the
    trait; kept by triggers on ``nodes`` and ``node_traits``."""

    __tablename__ = 'free_trait_counters'
    __table_args__ = (TABLE_ARGS,)

    shard = _summary_key('shard')
    conductor_group = _summary_key('conductor_group')
    trait = _summary_key('trait', node_fields.ITEM_LENGTH)
    slot = sa.Column(sa.Integer, primary_key=True, autoincrement=False)
    node_count = sa.Column(sa.BigInteger, nullable=False)


class CpuArchCounter(Base):
    """Per partition, CPU architecture and slot: how many nodes (not
    vanished) have it; kept by triggers on ``nodes``."""

    __tablename__ = 'cpu_arch_counters'
    __table_args__ = (TABLE_ARGS,)

    shard = _summary_key('shard')
    conductor_group = _summary_key('conductor_group')
    cpu_arch = _summary_key('cpu_arch')
    slot = sa.Column(sa.Integer, primary_key=True, autoincrement=False)
    node_count = sa.Column(sa.BigInteger, nullable=False)


class MirrorAggregate(TimestampMixin, Base):
    """A Nova host aggregate whose membership we mirror into Placement.

    Only aggregate UUIDs recorded here are ever removed from a provider.
    """

    __tablename__ = 'mirror_aggregates'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_mirror_aggregates0uuid'),
        TABLE_ARGS,
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    uuid = sa.Column(sa.String(36), nullable=False)
    deleted = sa.Column(sa.Boolean, nullable=False, default=False)

    hosts = orm.relationship('MirrorHost', cascade='all, delete-orphan',
                             lazy='selectin', back_populates='aggregate')


class MirrorHost(TimestampMixin, Base):
    """Desired membership of one host in one aggregate, and its progress.

    ``version`` grows with every change of ``member``; a worker only marks
    the row synced if the version it applied is still current, so a
    remove that lands while an add is being applied is never lost.
    """

    __tablename__ = 'mirror_hosts'
    __table_args__ = (
        sa.UniqueConstraint('aggregate_id', 'host',
                            name='uniq_mirror_hosts0aggregate_id0host'),
        sa.Index('mirror_hosts_pending_idx', 'state', 'next_attempt_at'),
        TABLE_ARGS,
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    aggregate_id = sa.Column(
        sa.Integer, sa.ForeignKey('mirror_aggregates.id', ondelete='CASCADE'),
        nullable=False)
    host = sa.Column(sa.String(255), nullable=False)
    member = sa.Column(sa.Boolean, nullable=False)
    version = sa.Column(sa.Integer, nullable=False, default=1)
    state = sa.Column(sa.String(16), nullable=False)
    attempts = sa.Column(sa.Integer, nullable=False, default=0)
    last_error = sa.Column(sa.Text, nullable=True)
    next_attempt_at = sa.Column(DateTime, nullable=True)
    leased_by = sa.Column(sa.String(255), nullable=True)
    leased_until = sa.Column(DateTime, nullable=True)
    synced_at = sa.Column(DateTime, nullable=True)
    pending_since = sa.Column(DateTime, nullable=True)

    aggregate = orm.relationship('MirrorAggregate', back_populates='hosts')


class InventorySync(Base):
    """What every process shares about syncing one inventory source.

    When it was last read completely (``synced_at``, by a full or an
    incremental pass) and how many nodes the inventory then held:
    ``reserveapi-status`` tells a stalled sync by it. For Ironic also the
    last full pass, the incremental watermark (Ironic's clock), where the
    nodes came from, an outage in progress, and the lease that lets one
    worker sync at a time. For a file, the digests of the document last
    applied and of the node table it left, so that an unchanged document
    is not read again.
    """

    __tablename__ = 'inventory_syncs'
    __table_args__ = (
        sa.UniqueConstraint('source', name='uniq_inventory_syncs0source'),
        TABLE_ARGS,
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    source = sa.Column(sa.String(32), nullable=False)
    synced_at = sa.Column(DateTime, nullable=True)
    nodes = sa.Column(sa.Integer, nullable=False)
    full_synced_at = sa.Column(DateTime, nullable=True)
    watermark = sa.Column(DateTime, nullable=True)
    location = sa.Column(sa.String(255), nullable=True)
    outage_since = sa.Column(DateTime, nullable=True)
    last_error = sa.Column(sa.Text, nullable=True)
    leased_by = sa.Column(sa.String(255), nullable=True)
    leased_until = sa.Column(DateTime, nullable=True)
    document_digest = sa.Column(sa.String(64), nullable=True)
    nodes_digest = sa.Column(sa.String(64), nullable=True)


class ClaimToClear(TimestampMixin, Base):
    """A claim of ours in Ironic to clear: its node is not offered while
    the row exists.

    Cleared only by the process holding the row's lease (``leased_by``
    until ``leased_until``), only while Ironic still shows this
    instance on this node with nothing deployed, and no live reservation
    of ours holds that pair. ``generation`` counts the requests to clear
    it: a clear finishes (deletes the row) only if none came meanwhile.

    The table keeps the name version 1.0.0 gave it, ``ironic_releases``
    (from when clearing a claim was called a release): renaming a table
    would take an expand and a contract for no change in behaviour.
    """

    __tablename__ = 'ironic_releases'
    __table_args__ = (
        sa.UniqueConstraint(
            'node_uuid', 'instance_uuid',
            name='uniq_ironic_releases0node_uuid0instance_uuid'),
        sa.Index('ironic_releases_next_attempt_idx', 'next_attempt_at'),
        TABLE_ARGS,
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    node_uuid = sa.Column(sa.String(36), nullable=False)
    instance_uuid = sa.Column(sa.String(36), nullable=False)
    attempts = sa.Column(sa.Integer, nullable=False, default=0)
    next_attempt_at = sa.Column(DateTime, nullable=False)
    last_error = sa.Column(sa.Text, nullable=True)
    leased_by = sa.Column(sa.String(255), nullable=True)
    leased_until = sa.Column(DateTime, nullable=True)
    generation = sa.Column(sa.Integer, nullable=False, default=0,
                           server_default='0')


class Service(Base):
    """A running process of the service and the version it runs, renewed
    by the process while it lives (``seen_at``) and gone from every
    answer once ``expires_at`` passes: which versions serve the database
    now, for ``reserveapi-status upgrade check`` and ``reserveapi-dbsync
    contract`` during a rolling upgrade.
    """

    __tablename__ = 'services'
    __table_args__ = (
        sa.UniqueConstraint('holder', name='uniq_services0holder'),
        sa.Index('services_expires_at_idx', 'expires_at'),
        TABLE_ARGS,
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    holder = sa.Column(sa.String(255), nullable=False)
    kind = sa.Column(sa.String(32), nullable=False)
    host = sa.Column(sa.String(255), nullable=False)
    pid = sa.Column(sa.Integer, nullable=False)
    # The column keeps the name version 1.0.0's schema gave it.
    version = sa.Column('release', sa.String(64), nullable=False)
    schema_head = sa.Column(sa.String(64), nullable=False)
    started_at = sa.Column(DateTime, nullable=False)
    seen_at = sa.Column(DateTime, nullable=False)
    expires_at = sa.Column(DateTime, nullable=False)
