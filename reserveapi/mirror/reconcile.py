"""Compare the desired aggregate membership with Placement, and fix it.

Nova's ``placement sync_aggregates`` stops at a host with several
providers, only ever adds, and never says what is extra. Here every
provider of every host is compared in both directions, for the
aggregates we own (recorded in our table, or named by the desired
state); any other aggregate on a provider is never looked at:

- *missing*: a provider of a host lacks an aggregate the host is in;
- *extra*: a provider has an aggregate of ours that its host is not
  in, or is in one of our aggregates without belonging to any host we
  know of;
- *unverified*: the comparison could not be made (a host without
  providers yet, a peer that did not answer).

Fixes go through the same stored, claimed and versioned rows as the API.
An extra is removed when our recorded state already says it must go (the
host left, or the aggregate was deleted) or, for any aggregate we own,
with ``prune``.
"""

import collections
import dataclasses
import json
import uuid as uuidlib

from oslo_log import log

from reserveapi.common import exception
import reserveapi.conf
from reserveapi.db import mirror as db_mirror
from reserveapi.mirror import exception as mirror_exc
from reserveapi.mirror import nova
from reserveapi.mirror import peer
from reserveapi.mirror import state

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF

MISSING = 'missing'
EXTRA = 'extra'
UNVERIFIED = 'unverified'

NONE = 'none'
ADDED = 'added'
REMOVED = 'removed'
KEPT = 'kept'
PENDING = 'pending'
FAILED = 'failed'
FIXED = (ADDED, REMOVED)
BUSY = 'Another API request or worker is applying this membership now.'
ACTIONS = {
    NONE: 'nothing done',
    ADDED: 'added',
    REMOVED: 'removed',
    KEPT: 'kept: prune to remove it',
    PENDING: 'pending: the worker retries it',
    FAILED: 'failed: the next reconcile retries it',
}


@dataclasses.dataclass
class Difference:
    """One provider disagreeing with the desired state, and what was done.

    ``host`` is None for a provider of no host we know of;
    ``provider_uuid`` is None when the host has no provider or could not
    be resolved.
    """

    aggregate_uuid: str
    host: str | None
    provider_uuid: str | None
    difference: str
    action: str = NONE
    detail: str | None = None


@dataclasses.dataclass(frozen=True)
class Report:
    dry_run: bool
    prune: bool
    aggregates: int
    hosts: int
    differences: list

    @property
    def in_sync(self):
        """Placement now agrees: nothing differed, or all was fixed."""
        return all(item.action in FIXED for item in self.differences)

    @property
    def pending(self):
        return any(item.action == PENDING for item in self.differences)

    def count(self, action):
        return sum(item.action == action for item in self.differences)


@dataclasses.dataclass(frozen=True)
class DesiredState:
    """Aggregate UUID → frozenset of host names, for every aggregate.

    ``recorded`` when it was read from our database, so that fixing it
    must not store it again, only requeue rows that were read.
    """

    hosts: dict
    recorded: bool = False


def desired_state(aggregates):
    """A full desired state from ``[{"uuid": ..., "hosts": [...]}]``."""
    if not isinstance(aggregates, list):
        raise exception.Invalid(reason='aggregates must be a list.')
    desired = {}
    for item in aggregates:
        if not isinstance(item, dict) or set(item) != {'uuid', 'hosts'}:
            raise exception.Invalid(
                reason='each aggregate must be an object with exactly '
                       '"uuid" and "hosts", got %s.' % json.dumps(item))
        aggregate_uuid = _canonical_uuid(item['uuid'])
        if aggregate_uuid in desired:
            raise exception.Invalid(reason='aggregate %s is listed twice.'
                                    % aggregate_uuid)
        if not isinstance(item['hosts'], list) or not all(
                isinstance(host, str) and 0 < len(host) <= 255
                for host in item['hosts']):
            raise exception.Invalid(
                reason='hosts of aggregate %s must be a list of names of '
                       '1 to 255 characters.' % aggregate_uuid)
        desired[aggregate_uuid] = frozenset(item['hosts'])
    return DesiredState(desired)


def _canonical_uuid(value):
    try:
        return str(uuidlib.UUID(value))
    except (TypeError, ValueError, AttributeError):
        raise exception.Invalid(reason='%s is not an aggregate UUID.'
                                % json.dumps(value))


def _recorded_state(table):
    return DesiredState(
        {aggregate.uuid: frozenset(row.host for row in aggregate.hosts
                                   if row.member)
         for aggregate in table if not aggregate.deleted},
        recorded=True)


def read_desired_file(path):
    """The aggregates listed in a JSON file, as the sync body has them."""
    try:
        with open(path) as desired_file:
            return json.load(desired_file)
    except OSError as exc:
        raise exception.Invalid(reason='cannot read %s: %s'
                                % (path, exc.strerror))
    except ValueError as exc:
        raise exception.Invalid(reason='%s is not JSON: %s' % (path, exc))


def nova_aggregates():
    """Nova's host aggregates, in the shape ``desired_state`` takes."""
    return nova.NovaClient().aggregates()


class _Comparison:
    """The desired state against what our table knows."""

    def __init__(self, desired, table):
        self.desired = desired
        self.rows = {(aggregate.uuid, row.host): row
                     for aggregate in table for row in aggregate.hosts}
        self.owned = set(desired.hosts) | {agg.uuid for agg in table}
        self.deleted = ({agg.uuid for agg in table if agg.deleted}
                        - set(desired.hosts))
        self.wanted = collections.defaultdict(set)
        for aggregate_uuid, names in desired.hosts.items():
            for host in names:
                self.wanted[host].add(aggregate_uuid)
        self.hosts = sorted(set(self.wanted)
                            | {host for _agg, host in self.rows})

    def concerning(self, host):
        """Our aggregates that a host is in, or was in."""
        return sorted(self.wanted[host] | {
            aggregate_uuid for aggregate_uuid, name in self.rows
            if name == host})

    def member(self, aggregate_uuid, host):
        return host in self.desired.hosts.get(aggregate_uuid, ())

    def must_leave(self, aggregate_uuid, host):
        """Our own record says the host is out of the aggregate."""
        row = self.rows.get((aggregate_uuid, host))
        return aggregate_uuid in self.deleted or (
            row is not None and not row.member)


def sync(aggregates=None, dry_run=False, prune=False, inline=False):
    """Compare Placement with a desired state and, unless ``dry_run``,
    fix what differs; a Report.

    ``aggregates`` is a full desired state (``[{"uuid", "hosts"}]``,
    e.g. Nova's): aggregates we own that it does not name have no hosts.
    None compares the state recorded in our database. ``inline`` bounds
    all the Placement and Nova calls together by ``[mirror]
    inline_timeout``, for the API: what is not fixed by then stays pending
    for the worker.
    """
    table = db_mirror.list_aggregates()
    desired = (_recorded_state(table) if aggregates is None
               else desired_state(aggregates))
    comparison = _Comparison(desired, table)
    if not comparison.owned:
        return Report(dry_run, prune, 0, 0, [])
    host_resolver = state.resolver(inline=inline)
    deadline = peer.deadline_for(
        (CONF.mirror.inline_timeout or None) if inline else None)
    differences, providers = _compare(comparison, host_resolver, deadline)
    if not dry_run:
        _fix(comparison, differences, prune, host_resolver, deadline,
             providers)
        _forget_deleted(comparison, differences)
    differences.sort(key=lambda item: (
        item.aggregate_uuid, item.host or '', item.provider_uuid or '',
        item.difference))
    return Report(dry_run, prune, len(comparison.owned),
                  len(comparison.hosts), differences)


def reconcile():
    """Worker job: make Placement match our recorded state again, so
    that providers created since a host joined inherit its aggregates.
    """
    report = sync()
    if report.differences:
        LOG.info('Mirror reconcile: %(found)d differences, %(fixed)d '
                 'fixed, %(pending)d pending, %(kept)d extra kept.',
                 {'found': len(report.differences),
                  'fixed': report.count(ADDED) + report.count(REMOVED),
                  'pending': report.count(PENDING),
                  'kept': report.count(KEPT)})
    return report


def _compare(comparison, host_resolver, deadline):
    """``(differences, {host: providers})``; the providers are empty when
    they could not be resolved.
    """
    client = host_resolver.placement
    differences = []
    try:
        providers = host_resolver.providers_for_hosts(
            comparison.hosts, timeout=peer.time_left(deadline))
    except mirror_exc.PeerError as exc:
        return [Difference(aggregate_uuid, host, None, UNVERIFIED,
                           detail=exc.detail)
                for host in comparison.hosts
                for aggregate_uuid in comparison.concerning(host)], {}
    known = set()
    for host in comparison.hosts:
        wanted = comparison.wanted[host]
        if not providers[host]:
            differences.extend(
                Difference(aggregate_uuid, host, None, UNVERIFIED,
                           detail=mirror_exc.HostHasNoProvider(host=host).detail)
                for aggregate_uuid in sorted(wanted))
            continue
        for rp_uuid in providers[host]:
            known.add(rp_uuid)
            try:
                current, _generation = client.get_aggregates(
                    rp_uuid, timeout=peer.time_left(deadline))
            except mirror_exc.ProviderGone:
                continue
            except mirror_exc.PeerError as exc:
                differences.extend(
                    Difference(aggregate_uuid, host, rp_uuid, UNVERIFIED,
                               detail=exc.detail)
                    for aggregate_uuid in comparison.concerning(host))
                continue
            differences.extend(
                Difference(aggregate_uuid, host, rp_uuid, MISSING)
                for aggregate_uuid in sorted(wanted - current))
            differences.extend(
                Difference(aggregate_uuid, host, rp_uuid, EXTRA)
                for aggregate_uuid in sorted(
                    (current & comparison.owned) - wanted))
    for aggregate_uuid in sorted(comparison.owned):
        try:
            members = client.aggregate_providers(
                aggregate_uuid, timeout=peer.time_left(deadline))
        except mirror_exc.PeerError as exc:
            differences.append(Difference(aggregate_uuid, None, None,
                                          UNVERIFIED, detail=exc.detail))
            continue
        differences.extend(Difference(aggregate_uuid, None, rp_uuid, EXTRA)
                           for rp_uuid in sorted(members - known))
    return differences, providers


def _fix(comparison, differences, prune, host_resolver, deadline,
         providers):
    """Apply the differences through our rows; set each one's action."""
    if not comparison.desired.recorded:
        db_mirror.record_aggregates(sorted(comparison.desired.hosts))
    claimed_by, claimed_until = state.new_claim()
    by_host = collections.defaultdict(list)
    for item in differences:
        if item.host is not None:
            by_host[(item.aggregate_uuid, item.host)].append(item)
        elif item.provider_uuid is not None:
            _remove_stray(comparison, item, prune, host_resolver.placement,
                          deadline)
    for (aggregate_uuid, host), items in sorted(by_host.items()):
        member = comparison.member(aggregate_uuid, host)
        if not (member or prune
                or comparison.must_leave(aggregate_uuid, host)):
            for item in items:
                item.action = KEPT if item.difference == EXTRA else NONE
            continue
        row = comparison.rows.get((aggregate_uuid, host))
        if row is not None and row.member == member:
            record = db_mirror.claim_host(row.id, row.version,
                                              claimed_by, claimed_until)
        else:
            record = db_mirror.set_membership(
                aggregate_uuid, host, member, claimed_by, claimed_until)
        if record is None:
            action, detail = PENDING, BUSY
        else:
            _recorded, detail = state.apply(
                record, claimed_by, host_resolver, deadline,
                providers=providers.get(host) or None)
            action = ((ADDED if member else REMOVED) if detail is None
                      else PENDING)
        for item in items:
            item.action, item.detail = action, detail


def _remove_stray(comparison, item, prune, client, deadline):
    """A provider of no host we know: no row to go through."""
    if not (prune or item.aggregate_uuid in comparison.deleted):
        item.action = KEPT
        return
    try:
        client.remove_aggregate(item.provider_uuid, item.aggregate_uuid,
                                timeout=peer.time_left(deadline))
    except mirror_exc.ProviderGone:
        pass
    except mirror_exc.PeerError as exc:
        item.action, item.detail = FAILED, exc.detail
        return
    item.action = REMOVED


def _forget_deleted(comparison, differences):
    """Purge deleted aggregates now verified gone from every provider."""
    unfinished = {item.aggregate_uuid for item in differences
                  if item.action not in FIXED}
    for aggregate_uuid in sorted(comparison.deleted - unfinished):
        if db_mirror.purge_aggregate(aggregate_uuid):
            LOG.info('Deleted aggregate %s is gone from Placement; '
                     'forgotten.', aggregate_uuid)
