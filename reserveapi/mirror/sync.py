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

Fixes go through the same stored, leased and versioned rows as the API.
An extra is removed when our recorded state already says it must go (the
host left, or the aggregate was deleted) or, for any aggregate we own,
with ``prune``.
"""

import collections
import dataclasses

from oslo_log import log

from reserveapi.common import exception
import reserveapi.conf
from reserveapi.db import mirror as db_mirror
from reserveapi.mirror import desired as desired_mod
from reserveapi.mirror import nova
from reserveapi.mirror import state
from reserveapi.peers import clients as peers

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
    FAILED: 'failed: the next sync retries it',
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


def desired_from_nova():
    """Nova's host aggregates, as a DesiredState.

    :raises: NovaError, NovaUnavailable; Invalid if Nova's answer is not
        a desired state we can mirror.
    """
    try:
        return desired_mod.parse(nova.NovaClient().aggregates())
    except ValueError as exc:
        raise exception.Invalid(reason="Nova's aggregates: %s" % exc)


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


def sync(desired=None, dry_run=False, prune=False, inline=False):
    """Compare Placement with a desired state and, unless ``dry_run``,
    fix what differs; a Report.

    ``desired`` is a full DesiredState (``desired.parse`` of Nova's
    aggregates or of a sync document): aggregates we own that it does not
    name have no hosts. None compares the state recorded in our database.
    ``inline`` bounds all the Placement and Nova calls together by
    ``[mirror] inline_timeout``, for the API: what is not fixed by then
    stays pending for the worker.

    :raises: DBError; never for Placement or Nova, whose failures the
        report shows.
    """
    table = db_mirror.list_aggregates()
    comparison = _Comparison(desired or desired_mod.recorded(table), table)
    if not comparison.owned:
        return Report(dry_run, prune, 0, 0, [])
    host_resolver = state.resolver(inline=inline)
    deadline = peers.deadline_for(
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


def sync_aggregates():
    """Worker job ``sync-aggregates``, what ``reserveapi-manage
    sync-aggregates`` does with the recorded state: make Placement match
    it again, so that providers created since a host joined inherit its
    aggregates.

    :raises: DBError; never for Placement or Nova.
    """
    report = sync()
    if report.differences:
        LOG.info('sync-aggregates: %(found)d differences, %(fixed)d '
                 'fixed, %(pending)d pending, %(kept)d extra kept.',
                 {'found': len(report.differences),
                  'fixed': report.count(ADDED) + report.count(REMOVED),
                  'pending': report.count(PENDING),
                  'kept': report.count(KEPT)})
    return report


def sync_aggregates_from_nova():
    """Worker job ``sync-aggregates-from-nova``, what
    ``reserveapi-manage sync-aggregates --from-nova`` does: Nova's host
    aggregates are the desired state.

    Our records follow Nova first (joins, leaves and deletes that
    nova-api's hook could not report), then Placement follows our
    records on every provider of each host, as ``sync_aggregates`` does. Our
    table is read before Nova, so a change recorded while Nova answers
    is newer than its answer and wins. Extra memberships nobody explains
    are only removed with ``[mirror] reconcile_from_nova_prune``.

    :raises: NovaError, NovaUnavailable (nothing changed); DBError.
    """
    table = db_mirror.list_aggregates()
    followed = _follow(table, desired_from_nova())
    report = sync(prune=CONF.mirror.reconcile_from_nova_prune)
    if followed or report.differences:
        LOG.info('Reconcile from Nova: %(followed)d memberships changed to '
                 'follow Nova; %(found)d differences with Placement, '
                 '%(fixed)d fixed, %(pending)d pending, %(kept)d extra '
                 'kept.',
                 {'followed': followed, 'found': len(report.differences),
                  'fixed': report.count(ADDED) + report.count(REMOVED),
                  'pending': report.count(PENDING),
                  'kept': report.count(KEPT)})
    return report


def _follow(table, desired):
    """Record in our table what Nova says; how many rows changed."""
    rows = {(aggregate.uuid, row.host): row
            for aggregate in table for row in aggregate.hosts}
    followed = 0
    for aggregate in table:
        if not aggregate.deleted and aggregate.uuid not in desired.hosts:
            seen = {row.host: row.seen for row in aggregate.hosts}
            followed += db_mirror.follow_deletion(aggregate.uuid, seen)
    pairs = set(rows) | {(aggregate_uuid, host)
                         for aggregate_uuid, names in desired.hosts.items()
                         for host in names}
    for aggregate_uuid, host in sorted(pairs):
        if aggregate_uuid not in desired.hosts:
            continue  # deleted in Nova: done above
        member = host in desired.hosts[aggregate_uuid]
        row = rows.get((aggregate_uuid, host))
        if (row.member if row is not None else False) != member:
            followed += db_mirror.follow_membership(
                aggregate_uuid, host, member,
                row.seen if row is not None else None)
    return followed


def _compare(comparison, host_resolver, deadline):
    """``(differences, {host: providers})``; the providers are empty when
    they could not be resolved.

    One listing per aggregate we own (``member_of``) says which
    providers are in it: that answers, for every provider of every host,
    which of our aggregates it has, without reading each provider.
    """
    try:
        providers = host_resolver.providers_for_hosts(
            comparison.hosts, timeout=peers.time_left(deadline))
    except exception.PeerError as exc:
        return [Difference(aggregate_uuid, host, None, UNVERIFIED,
                           detail=exc.detail)
                for host in comparison.hosts
                for aggregate_uuid in comparison.concerning(host)], {}
    members, differences = _members(comparison, host_resolver.placement,
                                    deadline)
    known = set()
    for host in comparison.hosts:
        if not providers[host]:
            differences.extend(
                Difference(aggregate_uuid, host, None, UNVERIFIED,
                           detail=exception.HostHasNoProvider(
                               host=host).detail)
                for aggregate_uuid in sorted(comparison.wanted[host]))
            continue
        known.update(providers[host])
        differences.extend(_host_differences(comparison, host,
                                             providers[host], members))
    for aggregate_uuid, rp_uuids in sorted(members.items()):
        differences.extend(Difference(aggregate_uuid, None, rp_uuid, EXTRA)
                           for rp_uuid in sorted(rp_uuids - known))
    return differences, providers


def _members(comparison, client, deadline):
    """``({aggregate: provider UUIDs}, differences)``: the providers in
    each aggregate we own, and an unverified difference for each one
    Placement did not list.
    """
    members, unverified = {}, []
    for aggregate_uuid in sorted(comparison.owned):
        try:
            members[aggregate_uuid] = client.aggregate_providers(
                aggregate_uuid, timeout=peers.time_left(deadline))
        except exception.PeerError as exc:
            unverified.append(Difference(aggregate_uuid, None, None,
                                         UNVERIFIED, detail=exc.detail))
    return members, unverified


def _host_differences(comparison, host, rp_uuids, members):
    """Missing and extra memberships of a host's providers, for the
    aggregates whose members are known.
    """
    wanted = comparison.wanted[host] & set(members)
    for rp_uuid in rp_uuids:
        current = {aggregate_uuid
                   for aggregate_uuid, in_it in members.items()
                   if rp_uuid in in_it}
        yield from (Difference(aggregate_uuid, host, rp_uuid, MISSING)
                    for aggregate_uuid in sorted(wanted - current))
        yield from (Difference(aggregate_uuid, host, rp_uuid, EXTRA)
                    for aggregate_uuid in sorted(
                        current - comparison.wanted[host]))


def _fix(comparison, differences, prune, host_resolver, deadline,
         providers):
    """Apply the differences through our rows; set each one's action."""
    if not comparison.desired.recorded:
        db_mirror.record_aggregates(sorted(comparison.desired.hosts))
    holder = state.new_lease()[0]
    by_host = collections.defaultdict(list)
    for item in differences:
        if item.host is not None:
            by_host[(item.aggregate_uuid, item.host)].append(item)
        elif item.provider_uuid is not None:
            _remove_stray(comparison, item, prune, host_resolver.placement,
                          deadline)
    with state.kept_leases(holder):
        for (aggregate_uuid, host), items in sorted(by_host.items()):
            action, detail = _fix_host(comparison, aggregate_uuid, host,
                                       prune, holder, host_resolver,
                                       deadline, providers)
            for item in items:
                item.action, item.detail = (
                    (KEPT if item.difference == EXTRA else NONE, None)
                    if action is None else (action, detail))


def _fix_host(comparison, aggregate_uuid, host, prune, holder,
              host_resolver, deadline, providers):
    """``(action, detail)`` for one host's differences, through its row
    leased for ``holder``; action None when they are left as
    they are."""
    member = comparison.member(aggregate_uuid, host)
    if not (member or prune or comparison.must_leave(aggregate_uuid, host)):
        return None, None
    row = comparison.rows.get((aggregate_uuid, host))
    if row is not None and row.member == member:
        record = db_mirror.lease_host(row.id, row.version, holder,
                                      state.lease_until())
    else:
        record = db_mirror.set_membership(aggregate_uuid, host, member,
                                          holder, state.lease_until())
    if record is None:
        return PENDING, BUSY
    _recorded, detail = state.apply(record, holder, host_resolver,
                                    deadline,
                                    providers=providers.get(host) or None)
    action = (ADDED if member else REMOVED) if detail is None else PENDING
    return action, detail


def _remove_stray(comparison, item, prune, client, deadline):
    """A provider of no host we know: no row to go through."""
    if not (prune or item.aggregate_uuid in comparison.deleted):
        item.action = KEPT
        return
    try:
        client.remove_aggregate(item.provider_uuid, item.aggregate_uuid,
                                timeout=peers.time_left(deadline))
    except exception.ProviderGone:
        pass
    except exception.PeerError as exc:
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
