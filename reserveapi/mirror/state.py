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

"""Desired aggregate membership, and the queue that applies it.

Every change is committed to our database before Placement is called,
then applied at once within ``[mirror] inline_timeout``; whatever
Placement did not take stays pending and the worker retries it, with
exponential back-off, until Placement agrees. Rows are leased in the
database, so any number of API processes and workers may run; each row
carries a version, so an older change that reaches Placement late is
never marked synced over a newer one.
"""

import datetime

from oslo_log import log
from oslo_utils import timeutils
from oslo_utils import uuidutils

from reserveapi import notifications
from reserveapi.common import exception
from reserveapi.common import heartbeat
from reserveapi.common import metrics
import reserveapi.conf
from reserveapi.db import mirror as db_mirror
from reserveapi.mirror import hosts
from reserveapi.mirror import placement
from reserveapi.peers import clients as peers

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF

# What lists may be sorted by: columns of the aggregates table.
SORT_KEYS = ('uuid', 'created_at', 'updated_at')
RETRY_BATCH = 50
OVERTAKEN = ('The membership changed while this change was being applied; '
             'the newest one is applied next.')

_resolvers = {}


def resolver(inline=False):
    """The process's HostResolver, so tokens and connections are reused.

    ``inline`` ones give up after ``[mirror] inline_timeout`` (0: no
    bound); the others use the ``[placement]`` timeouts and retries.
    """
    if inline not in _resolvers:
        timeout = (CONF.mirror.inline_timeout or None) if inline else None
        _resolvers[inline] = hosts.HostResolver(
            placement.PlacementClient(timeout=timeout))
    return _resolvers[inline]


def new_lease():
    """``(holder, until)`` for rows a caller applies now."""
    return uuidutils.generate_uuid(), lease_until()


def lease_until():
    """When a lease taken now lapses unless renewed."""
    return timeutils.utcnow() + datetime.timedelta(
        seconds=CONF.mirror.lease_timeout)


def kept_leases(holder):
    """A heartbeat renewing ``holder``'s leases while a worker
    applies them: ``[mirror] lease_timeout`` then only bounds how long
    the rows of a worker that died wait for another."""
    seconds = CONF.mirror.lease_timeout
    return heartbeat.Heartbeat(
        lambda: db_mirror.renew_leases(holder, seconds) or True,
        seconds=seconds, name='mirror')


def _inline_lease():
    """A lease for applying at once, or ``(None, None)`` when
    ``[mirror] inline_timeout`` is 0 and the worker does all the work.
    """
    return new_lease() if CONF.mirror.inline_timeout else (None, None)


def _inline_deadline():
    """One deadline for all the Placement calls of an API request."""
    return peers.deadline_for(CONF.mirror.inline_timeout)


def join(aggregate_uuid, host):
    """Host joins the aggregate; its row, ``synced`` or ``pending``.

    :raises: DBError; never for Placement.
    """
    return _change_membership(aggregate_uuid, host, True)


def leave(aggregate_uuid, host):
    """Host leaves the aggregate; its row, ``synced`` or ``pending``.

    :raises: DBError; never for Placement.
    """
    return _change_membership(aggregate_uuid, host, False)


def _change_membership(aggregate_uuid, host, member):
    """Two transactions: store the change, then record how applying it
    went; the second one answers with the row.
    """
    holder, until = _inline_lease()
    row = db_mirror.set_membership(aggregate_uuid, host, member,
                                   holder, until)
    if holder is None:
        return row
    applied, _reason = apply(row, holder, resolver(inline=True),
                             _inline_deadline())
    return applied or row


def delete_aggregate(aggregate_uuid):
    """Every provider leaves the aggregate; the aggregate's record.

    Hosts leave through their rows. Then, inline and best effort, any
    other provider still in it leaves too (one an operator added, a node
    that moved to another host); a reconcile pass finishes that if
    Placement did not answer, and only then forgets the aggregate.

    :raises: DBError; never for Placement.
    """
    holder, until = _inline_lease()
    leaving = db_mirror.delete_aggregate(aggregate_uuid, holder,
                                         until)
    if holder is not None:
        deadline = _inline_deadline()
        for row in leaving:
            apply(row, holder, resolver(inline=True), deadline)
        _remove_from_every_provider(aggregate_uuid, deadline)
    return db_mirror.get_aggregate(aggregate_uuid)


def _remove_from_every_provider(aggregate_uuid, deadline):
    client = resolver(inline=True).placement
    try:
        members = client.aggregate_providers(
            aggregate_uuid, timeout=peers.time_left(deadline))
        for rp_uuid in sorted(members):
            try:
                client.remove_aggregate(rp_uuid, aggregate_uuid,
                                        timeout=peers.time_left(deadline))
            except exception.ProviderGone:
                continue
    except exception.PeerError as exc:
        LOG.warning('Deleted aggregate %(aggregate)s may remain on '
                    'providers of no host we know until the next '
                    'reconcile: %(error)s',
                    {'aggregate': aggregate_uuid, 'error': exc})


def apply(row, holder, host_resolver, deadline=None, providers=None):
    """Make Placement agree with one leased row; record the outcome.

    ``providers``, the host's providers when the caller resolved many
    hosts at once, spares a lookup (with Nova, a hypervisor listing) per
    row. Returns the row as recorded, and None once it is synced or else
    why it is still pending (the worker retries it).

    :raises: DBError; never for Placement or Nova.
    """
    try:
        _converge(host_resolver, row.aggregate_uuid, row.host, row.member,
                  deadline, providers)
    except exception.MirrorError as exc:
        metrics.mirror_failed(exc)
        LOG.warning('Host %(host)s %(action)s aggregate %(aggregate)s is '
                    'pending (attempt %(attempt)d): %(error)s',
                    {'host': row.host,
                     'action': 'joining' if row.member else 'leaving',
                     'aggregate': row.aggregate_uuid,
                     'attempt': row.attempts + 1, 'error': exc.detail})
        recorded = db_mirror.finish_host(
            row.id, row.version, holder, error=exc.detail,
            retry_at=timeutils.utcnow() + backoff(row.attempts))
        notifications.mirror_change_failed(row, exc.detail)
        return recorded, exc.detail
    metrics.MIRROR_ATTEMPTS.labels(result='synced').inc()
    recorded = db_mirror.finish_host(row.id, row.version, holder)
    notifications.mirror_change_applied(row, recorded)
    if recorded is not None and recorded.synced:
        return recorded, None
    return recorded, OVERTAKEN


def backoff(attempts):
    """Delay after a failure that follows ``attempts`` failed ones."""
    return datetime.timedelta(seconds=min(
        CONF.mirror.backoff_base * 2 ** min(attempts, 32),
        CONF.mirror.backoff_max))


def _converge(host_resolver, aggregate_uuid, host, member, deadline,
              providers=None):
    try:
        _change_every_provider(host_resolver, aggregate_uuid, host, member,
                               deadline, providers)
    except exception.ProviderGone:
        # The host's providers changed under us: resolve it again, once.
        _change_every_provider(host_resolver, aggregate_uuid, host, member,
                               deadline)


def _change_every_provider(host_resolver, aggregate_uuid, host, member,
                           deadline, providers=None):
    if providers is None:
        providers = host_resolver.providers_for_host(
            host, timeout=peers.time_left(deadline))
    if member and not providers:
        raise exception.HostHasNoProvider(host=host)
    client = host_resolver.placement
    change = client.add_aggregate if member else client.remove_aggregate
    for rp_uuid in providers:
        change(rp_uuid, aggregate_uuid, timeout=peers.time_left(deadline))


def retry_pending():
    """Worker job: apply every due pending row, a batch at a time.

    Returns ``(synced, still_pending)`` counts. A batch stops early when
    its lease runs out, leaving the rest to whoever leases them next.

    :raises: DBError; never for Placement or Nova.
    """
    synced = still_pending = 0
    while True:
        holder, until = new_lease()
        batch = db_mirror.lease_hosts(holder, until,
                                      RETRY_BATCH)
        with kept_leases(holder) as keeper:
            providers = _resolve_hosts({row.host for row in batch})
            for row in batch:
                if not keeper.held():
                    break
                _recorded, reason = apply(row, holder, resolver(),
                                          providers=providers.get(row.host))
                if reason is None:
                    synced += 1
                else:
                    still_pending += 1
        if len(batch) < RETRY_BATCH:
            if synced or still_pending:
                LOG.info('Mirror retry pass: %(synced)d synced, '
                         '%(pending)d still pending.',
                         {'synced': synced, 'pending': still_pending})
            return synced, still_pending


def _resolve_hosts(hosts):
    """Providers of many hosts with one Nova listing; ``{}`` when a peer
    fails, and each row then resolves (and records the failure) itself.
    """
    if not hosts:
        return {}
    try:
        return resolver().providers_for_hosts(sorted(hosts))
    except exception.PeerError:
        return {}


def get_aggregate(aggregate_uuid):
    """:raises: AggregateNotFound"""
    return db_mirror.get_aggregate(aggregate_uuid)


def list_aggregates(limit=None, marker=None, sort_key='uuid',
                    sort_dir='asc'):
    """Aggregates with all their host rows, deleted ones included.

    :raises: Invalid for an unknown marker.
    """
    return db_mirror.list_aggregates(limit, marker, sort_key, sort_dir)


def get_status():
    """Counts of synced and pending rows, and the oldest pending one."""
    return db_mirror.get_status()
