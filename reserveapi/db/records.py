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

"""The plain, frozen records the database modules return.

Callers never see a live ORM object: what they hold cannot lazy-load,
and cannot change behind their back.
"""

import dataclasses
import json

from reserveapi.common import node_fields
from reserveapi.common import states

# Node columns copied from the inventory as they are.
NODE_COLUMNS = node_fields.NAMES


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
    shard: str | None
    owner: str | None
    lessee: str | None
    vanished: bool
    stale_since: object
    synced_at: object
    created_at: object
    updated_at: object
    reservation: object = None

    @property
    def reserved(self):
        return self.reservation is not None


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
    hold_id: int | None = None


@dataclasses.dataclass(frozen=True)
class HoldRecord:
    """A hold as stored: its times naive UTC, ``request_spec`` the spec
    as sent (decoded), ``busy_from``/``busy_until`` its window padded by
    ``padding`` seconds at both ends."""

    uuid: str
    project_id: str
    amount: int
    request_spec: dict
    resource_class: str | None
    shard: str | None
    conductor_group: str | None
    start_at: object
    end_at: object
    padding: int
    busy_from: object
    busy_until: object
    cancelled_at: object
    created_at: object
    updated_at: object
    at_end: str = 'keep'
    reclaimed: int = 0
    shortfall: int = 0
    flavor_id: str | None = None
    warned_at: object = None
    finished_at: object = None
    id: int | None = None

    @property
    def kept(self):
        """The nodes it still keeps: its amount less the pins it gave
        back unused."""
        return max(self.amount - self.reclaimed, 0)


HOLD_COLUMNS = tuple(field.name for field in dataclasses.fields(HoldRecord))
"""The holds columns a HoldRecord is built from, by the same names."""


def hold_record(row):
    """A HoldRecord from a row with HOLD_COLUMNS (and maybe others)."""
    columns = {name: row._mapping[name] for name in HOLD_COLUMNS}
    return HoldRecord(**dict(
        columns, request_spec=json.loads(columns['request_spec'])))


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
    # When the row was last written (None until its first update): with
    # ``version``, tells a reader whether anyone wrote it since.
    updated_at: object = None

    @property
    def seen(self):
        """What ``follow_membership`` compares, to write only a row
        nobody wrote since it was read.
        """
        return (self.version, self.updated_at)

    @property
    def synced(self):
        return self.state == states.SYNCED


@dataclasses.dataclass(frozen=True)
class MirrorAggregateRecord:
    uuid: str
    deleted: bool
    created_at: object
    updated_at: object
    hosts: tuple
    """Every host row, member or not, sorted by host name."""

    @property
    def synced(self):
        """Placement agrees with every row, leaving ones included."""
        return all(row.synced for row in self.hosts)


def node_record(node, reservation=None):
    """A NodeRecord from a Node row and its live Reservation row."""
    return NodeRecord(
        id=node.id,
        capabilities={cap.key: cap.value for cap in node.capabilities},
        traits=frozenset(trait.trait for trait in node.traits),
        vanished=node.vanished, stale_since=node.stale_since,
        synced_at=node.synced_at,
        created_at=node.created_at, updated_at=node.updated_at,
        reservation=(reservation_record(reservation, node)
                     if reservation is not None else None),
        **{column: getattr(node, column) for column in NODE_COLUMNS})


def reservation_record(reservation, node):
    """A ReservationRecord from a Reservation row and its Node row."""
    return ReservationRecord(
        uuid=reservation.uuid,
        instance_uuid=reservation.instance_uuid, host=reservation.host,
        project_id=reservation.project_id, state=reservation.state,
        node_id=node.id, node_uuid=node.uuid, node_name=node.name,
        resource_class=node.resource_class,
        created_at=reservation.created_at,
        updated_at=reservation.updated_at,
        expires_at=reservation.expires_at, hold_id=reservation.hold_id)


def mirror_host_record(row, aggregate_uuid):
    """A MirrorHostRecord from a MirrorHost row."""
    return MirrorHostRecord(
        id=row.id, aggregate_uuid=aggregate_uuid, host=row.host,
        member=row.member, version=row.version, state=row.state,
        attempts=row.attempts, last_error=row.last_error,
        next_attempt_at=row.next_attempt_at,
        pending_since=row.pending_since, synced_at=row.synced_at,
        updated_at=row.updated_at)


def mirror_aggregate_record(aggregate):
    """A MirrorAggregateRecord from a MirrorAggregate row and its hosts."""
    return MirrorAggregateRecord(
        uuid=aggregate.uuid, deleted=aggregate.deleted,
        created_at=aggregate.created_at, updated_at=aggregate.updated_at,
        hosts=tuple(sorted((mirror_host_record(row, aggregate.uuid)
                            for row in aggregate.hosts),
                           key=lambda record: record.host)))


@dataclasses.dataclass(frozen=True)
class InventorySyncRecord:
    """What is known about syncing one inventory source.

    ``synced_at``: when the last complete pass (full or incremental)
    started reading, so the inventory is at least that fresh; None before
    the first. ``nodes``: how many nodes the inventory held after it.
    ``watermark``: the newest change read from Ironic, on Ironic's clock.
    ``outage_since``/``last_error``: the source cannot be read now.
    ``document_digest``/``nodes_digest``: the file last applied and the
    node table it left.
    """

    source: str
    synced_at: object
    nodes: int
    full_synced_at: object = None
    watermark: object = None
    location: str | None = None
    outage_since: object = None
    last_error: str | None = None
    document_digest: str | None = None
    nodes_digest: str | None = None


@dataclasses.dataclass(frozen=True)
class ClaimToClearRecord:
    """A claim in Ironic left for the worker to clear."""

    id: int
    node_uuid: str
    instance_uuid: str
    attempts: int
    next_attempt_at: object
    last_error: str | None
    created_at: object


@dataclasses.dataclass(frozen=True)
class ServiceRecord:
    """A process that reported itself alive: what it is, where, and the
    version and newest schema revision its code knows."""

    kind: str
    host: str
    pid: int
    version: str
    schema_head: str
    started_at: object
    seen_at: object


@dataclasses.dataclass(frozen=True)
class SessionRecord:
    """Another session on our database, as the server lists it: its id
    there (PostgreSQL's backend pid, MariaDB's connection id) and that
    id in words, the client's address (None when the server hides it),
    the name the client gave (``''`` none, None when the server cannot
    tell) and, where the server says, the client's pid."""

    id: int
    label: str
    client: str | None
    name: str | None
    client_pid: int | None = None
