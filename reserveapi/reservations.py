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

"""Reservations: match a request spec to one node and hold it.

SQL narrows the inventory to nodes that can possibly match, best fit
first and in bounded batches; the matcher re-checks each candidate in
Python and ranks them; the database's unique constraints decide who gets
a node when requests race.
"""

import collections
import dataclasses
import datetime
import itertools

from oslo_log import log
from oslo_utils import timeutils
from oslo_utils import uuidutils

from reserveapi import notifications
from reserveapi.common import exception
from reserveapi.common import metrics
from reserveapi.common import states
import reserveapi.conf
from reserveapi.db import matching as db_matching
from reserveapi.db import nodes as db_nodes
from reserveapi.db import reservations as db_reservations
from reserveapi.holds import admission
from reserveapi.inventory import ironic
from reserveapi.inventory import lifecycle
from reserveapi.matcher import filters
from reserveapi.matcher import selection
from reserveapi.matcher import spec as spec_mod
from reserveapi.mirror import nova as nova_peer

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF

# What lists may be sorted by: columns of the reservations table.
SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'host', 'instance_uuid',
             'state', 'expires_at')


def reserve(instance_uuid, host, project_id, request_spec,
            candidate_nodes=None, conductor_group=None, shard=None):
    """Hold one matching node for ``instance_uuid`` on behalf of ``host``.

    Returns ``(reservation, created)``. Asking again for the same instance
    from the same host returns the reservation it already has, so that
    Nova may retry freely; from another host it is a conflict. A retry is
    rare, so it is only looked for when the insert fails (the unique
    live-instance column refuses it, or nothing matches because its node
    is taken), which spares the common path a query. ``conductor_group``
    and ``shard`` limit matching to that Ironic partition.

    With the Ironic source and ``[ironic] claim_nodes``, the node is also
    claimed in Ironic; a node Ironic refuses is left for a sync to read
    again, and the next candidate is tried.

    Every call is counted by outcome (``reserveapi_reservations_total``).

    :raises: InvalidRequestSpec naming the key; NoValidNode; InstanceReserved
        when another host holds the instance; InstanceDeployed when
        Ironic has it on another node; IronicUnavailable (no reservation
        is left behind).
    """
    try:
        reservation, created = _reserve(instance_uuid, host, project_id,
                                        request_spec, candidate_nodes,
                                        conductor_group, shard)
    except Exception as error:
        count_refused(error)
        raise
    metrics.RESERVATIONS.labels(outcome='created' if created else 'existing',
                                cause='').inc()
    return reservation, created


def count_refused(error):
    """Count a POST /v1/reservations that ``error`` ended, also one whose
    body never reached ``reserve`` (a 400)."""
    outcome, cause = metrics.reservation_outcome(error)
    metrics.RESERVATIONS.labels(outcome=outcome, cause=cause).inc()


def _reserve(instance_uuid, host, project_id, request_spec, candidate_nodes,
             conductor_group, shard):
    spec = spec_mod.parse_request_spec(request_spec)
    hold_uuid = admission.hold_of_resource_class(spec.resource_class)
    if hold_uuid is not None:
        # Its own flavor: one of the hold's nodes, whatever the host's
        # partition (the hold chose its own).
        def reserve_once():
            return _reserve_for_hold(instance_uuid, host, project_id,
                                     hold_uuid, request_spec)
    else:
        context = _match_context(project_id, candidate_nodes,
                                 conductor_group, shard)

        def reserve_once():
            return _reserve_best(instance_uuid, host, spec, context,
                                 request_spec)
    try:
        return reserve_once(), True
    except (exception.NoValidNode, exception.InstanceReserved):
        existing = _existing_for(instance_uuid, host)
        if existing is None:
            raise
    if _still_claimed(existing, request_spec):
        return existing, False
    return reserve_once(), True


def _match_context(project_id, candidate_nodes, conductor_group, shard):
    return filters.MatchContext(
        project_id=project_id, exact_match=CONF.matcher.exact_match,
        candidate_nodes=(frozenset(candidate_nodes)
                         if candidate_nodes is not None else None),
        conductor_group=conductor_group, shard=shard)


CANDIDATE_ROUNDS = 10
"""Candidate reads one reservation may make while concurrent requests
take (or Ironic refuses) every node it tries: each lost round means other
requests got nodes, so the pool drains and the rounds end, without
sending back a 409 while a node is still free."""


def _reserve_for_hold(instance_uuid, host, project_id, hold_uuid,
                      request_spec):
    """A boot of hold ``hold_uuid``'s flavor: one of its pins while its
    boots have fewer nodes than it keeps; with no pin left (the worker
    has not pinned yet, or a node came back from cleaning), one pinned
    for it first.

    :raises: NoValidNode (criterion ``hold``) for a hold that is not the
        project's, not running, or full
    """
    try:
        hold = admission.get_hold(hold_uuid)
    except exception.HoldNotFound:
        hold = None
    if hold is None or hold.project_id != project_id:
        # Another project's hold is as unknown as a missing one.
        raise exception.NoValidNode(
            reason='project %s has no hold %s.' % (project_id, hold_uuid),
            criterion='hold')
    state = admission.state(hold)
    if state not in admission.RUNNING:
        raise exception.NoValidNode(
            reason='hold %s is %s: its flavor boots only between its '
                   'start and its end.' % (hold_uuid, state),
            criterion='hold')
    source = lifecycle.claiming_source()
    info = ironic.instance_info(request_spec) if source else None
    looked_again = pinned = False
    try:
        for _attempt in range(CONF.matcher.max_attempts):
            reservation = db_reservations.take_pin(hold.id, hold.kept,
                                                   instance_uuid, host)
            if reservation is db_reservations.FULL:
                raise exception.NoValidNode(
                    reason='hold %s has all of its %d nodes in use.'
                    % (hold_uuid, hold.kept), criterion='hold')
            if reservation is None:
                # None pinned yet (the worker's round is to come, or a
                # node is back from cleaning): pin one now, then take it.
                # Found none to pin? The worker may have pinned the last
                # ones meanwhile: look once more.
                if pin(hold, 1):
                    pinned = True
                elif looked_again:
                    break
                looked_again = True
                continue
            if source is not None and not lifecycle.claim_new(
                    source, reservation, info):
                continue
            LOG.info('Gave node %s pinned for hold %s to instance %s on '
                     'host %s', reservation.node_uuid, hold_uuid,
                     instance_uuid, host)
            notifications.reservation_created(reservation)
            return reservation
        raise exception.NoValidNode(
            reason='no node could be pinned for hold %s.' % hold_uuid,
            criterion='hold')
    finally:
        if pinned:
            _free_surplus_pins(hold)


def _free_surplus_pins(hold):
    """Free the newest pins beyond what ``hold``'s boots leave of what
    it keeps. Boots that pin for themselves at once pin more nodes than
    they take, and the surplus would be kept from everyone until the
    worker's next round.

    :raises: DBError
    """
    usage = admission.usage([hold])[hold.uuid]
    surplus = usage.pinned + usage.in_use - hold.kept
    if surplus > 0:
        freed = unpin(db_reservations.list_pins(hold.id)[-surplus:])
        LOG.info('Hold %s: freed %d pins its boots did not take',
                 hold.uuid, len(freed))


def pin(hold, count):
    """Set aside up to ``count`` nodes matching active ``hold``'s spec
    for its boots: reservations in state ``pinned``, made as a boot of
    its project would be, so that they keep every other hold. Returns
    how many were pinned (fewer when no more can be had).

    :raises: DBError
    """
    spec = spec_mod.parse_request_spec(hold.request_spec)
    context = _match_context(hold.project_id, None, hold.conductor_group,
                             hold.shard)
    pinned = 0
    for _pin in range(count):
        uuid = uuidutils.generate_uuid()
        try:
            _reserve_best(uuid, '', spec, context, None, hold_id=hold.id,
                          state=states.PINNED)
        except exception.NoValidNode as error:
            LOG.warning('Hold %s: pinned %d of %d nodes: %s', hold.uuid,
                        pinned, count, error.detail)
            break
        pinned += 1
    return pinned


def unpin(pins, reclaimed_from=None):
    """Free ``pins`` (ReservationRecords) no boot has taken meanwhile;
    with ``reclaimed_from`` (a hold id), count them as that hold's
    reclaimed pins. Returns those freed.

    :raises: DBError
    """
    return lifecycle.unpin(pins, reclaimed_from)


def _reserve_best(instance_uuid, host, spec, context, request_spec,
                  hold_id=None, state=states.RESERVED):
    """A new reservation on the best node that can still be had; with
    ``state`` ``pinned``, a pin of hold ``hold_id``, which no instance
    has: nothing is claimed in Ironic or announced."""
    node_filter = _prefilter(spec, context)
    values = {'instance_uuid': instance_uuid, 'host': host,
              'project_id': context.project_id, 'hold_id': hold_id,
              'state': state}
    pinning = state == states.PINNED
    source = None if pinning else lifecycle.claiming_source()
    info = ironic.instance_info(request_spec) if source else None
    promises = admission.Promises(context.project_id)
    tried = refused = 0
    held = set()
    for _round in range(CANDIDATE_ROUNDS):
        candidates, python_eliminated = _best_candidates(spec, context,
                                                         node_filter)
        if not candidates:
            reason, criterion = _explain(node_filter, python_eliminated)
            raise exception.NoValidNode(reason=reason, criterion=criterion)
        untried = [node for node in candidates if node.id not in held]
        if not untried:
            break
        for node in untried[:CONF.matcher.max_attempts]:
            tried += 1
            try:
                reservation = _create(promises, values, node)
            except exception.NodeAlreadyReserved:
                metrics.RESERVATION_LOST_RACES.inc()
                LOG.debug('Node %s was taken concurrently; trying the '
                          'next.', node.uuid)
                continue
            except exception.NodeHeld as held_node:
                held.add(node.id)
                LOG.debug('%s Trying the next.', held_node.detail)
                continue
            if source is not None and not lifecycle.claim_new(
                    source, reservation, info):
                refused += 1
                continue
            if pinning:
                LOG.info('Pinned node %s for hold %s', node.uuid, hold_id)
                return reservation
            LOG.info('Reserved node %s for instance %s on host %s',
                     node.uuid, instance_uuid, host)
            notifications.reservation_created(reservation)
            return reservation
    if held:
        raise exception.NoValidNode(
            reason='%d of the %d matching nodes tried are kept for holds; '
                   'the others were reserved '
                   'concurrently or refused by Ironic.' % (len(held), tried),
            criterion='held')
    raise exception.NoValidNode(
        reason='%d matching nodes were all reserved by concurrent requests '
               'or refused by Ironic (%d); retry.' % (tried, refused)
        if refused else
        '%d matching nodes were all reserved by concurrent requests; '
        'retry.' % tried, criterion='lost_races')


HOLD_ROUNDS = 3
"""Times one node is tried while holds change under it."""


def _create(promises, values, node):
    """Reserve ``node`` unless that breaks a hold: freely (while no hold
    was admitted meanwhile) when no live hold can use it, else taking
    the holds' turn from the version the decision was made at.

    :raises: NodeAlreadyReserved; NodeHeld; InstanceReserved
    """
    for _attempt in range(HOLD_ROUNDS):
        takes_turn = promises.keep(node)
        try:
            # A uuid per attempt: one ended by a concurrent process may
            # have left its row (expired).
            return db_reservations.create_reservation(
                dict(values, uuid=uuidutils.generate_uuid()), node,
                guard_version=promises.version, takes_turn=takes_turn)
        except exception.HoldsChanged:
            promises.read_again()
    raise exception.NodeAlreadyReserved(node=node.uuid)


def _still_claimed(existing, request_spec):
    """Whether the instance's reservation, found again for a retried
    request, may be answered: when reservations claim in Ironic, its
    node must carry the instance there (the first answer may have been
    lost before the claim was made), so it is claimed again if need be.

    False when Ironic will not have the node: the reservation is undone
    and the caller reserves another. An ``active`` reservation belongs to
    a deployed instance and is answered as it is.

    :raises: as ``lifecycle.claim_again``.
    """
    source = lifecycle.claiming_source()
    if source is None or existing.state != states.RESERVED:
        return True
    return lifecycle.claim_again(source, existing,
                                 ironic.instance_info(request_spec))


def _existing_for(instance_uuid, host):
    existing = db_reservations.get_live_reservation_for_instance(instance_uuid)
    if existing is None or existing.host == host:
        return existing
    raise exception.InstanceReserved(instance_uuid=instance_uuid,
                                     reservation=existing.uuid,
                                     host=existing.host)


def _prefilter(spec, context):
    """The part of the spec SQL can check: a superset of the matches."""
    return db_matching.NodeFilter(filters.asked(spec, context))


def _best_candidates(spec, context, node_filter):
    """Matching nodes in the order to try them, and, while none matched,
    what eliminated the nodes SQL let through (for the explanation).
    """
    matched, python_eliminated = _first_matches(
        spec, context, node_filter,
        max(CONF.matcher.subset_size, CONF.matcher.max_attempts))
    ranked = selection.rank(spec, matched, CONF.matcher.subset_size)
    return ranked, python_eliminated


def _first_matches(spec, context, node_filter, wanted):
    """The first ``wanted`` matching nodes, and, while none matched, what
    eliminated the nodes SQL let through.

    Batches come best fit first, so the first nodes that match are the
    best ones; reading stops once there are enough to choose among.
    Memory stays bounded by one batch whatever the inventory size.
    """
    matched = []
    eliminated = collections.Counter()
    capability_values = collections.defaultdict(collections.Counter)
    for batch in db_matching.candidate_batches(node_filter,
                                          CONF.matcher.batch_size,
                                          first_batch=wanted):
        batch_matched, misses = filters.partition(spec, batch, context)
        matched.extend(batch_matched)
        if not matched:
            counts, values = selection.eliminate(misses)
            eliminated.update(counts)
            for key, counter in values.items():
                capability_values[key].update(counter)
        if len(matched) >= wanted:
            break
    return matched, (eliminated, capability_values)


def _explain(node_filter, python_eliminated):
    """'120 nodes: 80 wrong resource class, 30 lack trait ...', and why,
    for the metric: selection.refusal_cause of the nodes counted again
    with the requested class first. A second count, only on a refusal,
    since the text counts the nodes in the matcher's order."""
    total, eliminated, capability_values = _with_python(
        db_matching.tally(node_filter), python_eliminated)
    _total, by_class, _values = _with_python(
        db_matching.tally(node_filter, explain_class=True),
        python_eliminated)
    return (selection.explain(total, eliminated, capability_values),
            selection.refusal_cause(by_class))


def _with_python(counted, python_eliminated):
    """``(total, eliminated, capability_values)``: what SQL eliminated
    (``counted``, a db.matching.Tally) and what Python eliminated among
    the nodes SQL let through (``(counts, values)`` of
    selection.eliminate), added up. The 409's explanation and
    candidates' ``excluded`` both come from here."""
    eliminated = dict(counted.eliminated)
    capability_values = {key: collections.Counter(counter) for key, counter
                         in counted.capability_values.items()}
    counts, values = python_eliminated
    for key, count in counts.items():
        eliminated[key] = eliminated.get(key, 0) + count
    for key, counter in values.items():
        capability_values.setdefault(key, collections.Counter()).update(
            counter)
    return counted.total, eliminated, capability_values


def expires_at(reservation):
    """When a ``reserved`` reservation will expire, or when an expired one
    did; None for an ``active`` one or when reserved_ttl is 0.
    """
    ttl = CONF.reservations.reserved_ttl
    if reservation.state == states.RESERVED and ttl:
        return reservation.created_at + datetime.timedelta(seconds=ttl)
    return reservation.expires_at


def get_reservation(uuid):
    """:raises: ReservationNotFound"""
    return db_reservations.get_reservation(uuid)


def list_reservations(filters=None, limit=None, marker=None,
                      sort_key='created_at', sort_dir='asc'):
    """Reservations by equality filters, a page at a time.

    :raises: Invalid for an unknown state or marker.
    """
    state = (filters or {}).get('state')
    if state is not None and state not in states.RESERVATION_STATES:
        raise exception.Invalid(reason='state must be one of %s.'
                                % ', '.join(states.RESERVATION_STATES))
    return db_reservations.list_reservations(filters, limit, marker, sort_key,
                                    sort_dir)


def update(current, changes):
    """Apply ``{'host': ..., 'state': ...}`` changes to the reservation
    ``current`` as it was read; a concurrent change makes this a 409.

    A new host takes the reservation over (its compute host died); the
    only state change is ``reserved`` → ``active`` once deployed.

    :raises: InvalidStateTransition; Invalid for an unknown state; Conflict
        when the reservation changed meanwhile.
    """
    uuid = current.uuid
    state = changes.get('state', current.state)
    if state not in states.RESERVATION_STATES:
        raise exception.Invalid(reason='state must be one of %s.'
                                % ', '.join(states.RESERVATION_STATES))
    if current.state == states.EXPIRED:
        raise exception.InvalidStateTransition(
            'Reservation %s has expired and can no longer change; reserve '
            'again.' % uuid)
    values = {}
    if 'host' in changes:
        values['host'] = changes['host']
    if state != current.state:
        if (current.state, state) != (states.RESERVED, states.ACTIVE):
            raise exception.InvalidStateTransition(
                reservation=uuid, src=current.state, dst=state)
        values['state'] = state
    if not values:
        return current
    try:
        reservation = db_reservations.update_reservation(
            uuid, current.state, values)
    except exception.Conflict:
        # Changed since it was read: by this very change too, made by a
        # concurrent request (a retry of this one, resent after its
        # answer was lost). Then nothing is left to do.
        now = db_reservations.get_reservation(uuid)
        if any(getattr(now, name) != value for name, value in values.items()):
            raise
        return now
    LOG.info('Reservation %s updated: %s', uuid, values)
    notifications.reservation_updated(current, reservation)
    return reservation


def release(uuid, check):
    """End the reservation ``uuid`` once ``check`` accepts it (called with
    the reservation as read in the transaction that deletes it; what it
    raises deletes nothing): its node is free at once, or with the Ironic
    source once a sync reads it again (it may be cleaning).

    With ``[ironic] claim_nodes`` its claim in Ironic is cleared too, if
    still ours and nothing was deployed (a teardown clears it itself).
    Ironic unreachable changes nothing here: the clearing is recorded in
    the same transaction and the worker does it once Ironic is back.

    :raises: ReservationNotFound; what ``check`` raises.
    """
    lifecycle.release(uuid, check, _released)


def _released(reservation):
    LOG.info('Reservation %s released', reservation.uuid)
    notifications.reservation_released(reservation)


def expire(now=None):
    """Expire ``reserved`` reservations older than [reservations]
    reserved_ttl; returns how many.

    :raises: DBError
    """
    ttl = CONF.reservations.reserved_ttl
    if not ttl:
        return 0
    now = now or timeutils.utcnow()
    expired = lifecycle.expire(now - datetime.timedelta(seconds=ttl))
    if expired:
        LOG.info('Expired %d reservations older than %ss: %s', len(expired),
                 ttl, ', '.join(reservation.uuid for reservation in expired))
    for reservation in expired:
        notifications.reservation_expired(reservation)
    return len(expired)


@dataclasses.dataclass(frozen=True)
class Orphan:
    """A live reservation whose instance Nova deleted at ``deleted_at``
    (naive UTC; ``nova.LONG_AGO`` when Nova no longer keeps the record).
    """

    reservation: object
    deleted_at: object


def release_orphans(dry_run=False, now=None):
    """Release the reservations whose instance Nova deleted at least
    ``[reservations] orphan_grace`` ago (a delete while the compute host
    was down releases nothing); the orphans found, released unless
    ``dry_run``.

    A host's instances are listed once; only the reservations whose
    instance is not among them are asked about one by one, and only
    Nova's own word that the instance is deleted (404 on the instance,
    then its deleted record or none at all) makes an orphan.

    :raises: NovaError, NovaUnavailable (nothing released); DBError
    """
    grace = datetime.timedelta(seconds=CONF.reservations.orphan_grace)
    now = now or timeutils.utcnow()
    nova = nova_peer.NovaClient()
    orphans = []
    suspects = db_reservations.list_live_reservations(now - grace)
    for host, group in itertools.groupby(suspects, lambda r: r.host):
        present = nova.server_uuids(host)
        for reservation in group:
            if reservation.instance_uuid in present:
                continue
            deleted_at = nova.deleted_at(reservation.instance_uuid)
            if deleted_at is not None and now - deleted_at >= grace:
                orphans.append(Orphan(reservation, deleted_at))
    if not dry_run:
        for orphan in orphans:
            _release_orphan(orphan.reservation)
    return orphans


def _release_orphan(reservation):
    try:
        lifecycle.release_record(reservation, _released_as_orphan)
    except exception.ReservationNotFound:
        pass  # released meanwhile


def _released_as_orphan(reservation):
    LOG.warning('Released reservation %(uuid)s of node %(node)s: Nova '
                'deleted its instance %(instance)s without host %(host)s '
                'releasing it. If Ironic still shows the instance on the '
                'node, undeploy the node.',
                {'uuid': reservation.uuid, 'node': reservation.node_uuid,
                 'instance': reservation.instance_uuid,
                 'host': reservation.host})
    notifications.reservation_released_as_orphan(reservation)


def take_over(source, destination, force=False):
    """Give every live reservation of compute host ``source`` to
    ``destination`` in one transaction; the reservations moved.

    Unless ``force``, Nova must report ``source``'s nova-compute down
    (a live host would go on using its reservations) and know a
    nova-compute on ``destination``.

    :raises: Invalid when both are one host; HostStillUp;
        UnknownComputeHost; NovaError, NovaUnavailable; DBError
    """
    if source == destination:
        raise exception.Invalid(reason='the source and destination hosts '
                                       'are both %s.' % source)
    if not force:
        nova = nova_peer.NovaClient()
        service = nova.compute_service(source)
        if service is not None and service['state'] == 'up':
            raise exception.HostStillUp(host=source)
        if nova.compute_service(destination) is None:
            raise exception.UnknownComputeHost(host=destination)
    moved = db_reservations.take_over_host(source, destination)
    LOG.info('Host %s took over %d reservations of host %s%s.',
             destination, len(moved), source,
             ' (forced)' if force else '')
    notifications.reservations_taken_over(moved, source)
    return moved


def get_capacity(host=None, shard=None, conductor_group=None,
                 labels=False, promised=False, holds=False):
    """Per resource class: total, available, reserved and summed sizes,
    of the partition ``shard`` and ``conductor_group`` (each when given);
    with ``labels``, the free nodes' traits and the architectures too.
    See db.nodes.get_capacity. With ``promised``, each class also says
    how many of its free nodes are promised to holds that have not
    started (admission.promised; holds of another partition included,
    since they may take these nodes). With ``holds``, each class says
    how many of its reserved nodes holds' pins and boots have
    (``hold_nodes``, ``hold_nodes_by_host``), and a row per running hold
    follows under its own resource class (admission.boot_capacity),
    whatever the partition: its flavor boots through any host.

    :raises: DBError
    """
    capacity = db_nodes.get_capacity(host, shard, conductor_group, labels,
                                     holds)
    if holds:
        capacity['capacity'].extend(admission.boot_capacity(host))
    if promised:
        kept = admission.promised()
        for row in capacity['capacity']:
            row['promised'] = min(kept.get(row['resource_class'], 0),
                                  row['available'])
    return capacity


CANDIDATES_SHOWN = 10
"""Nodes a candidates answer names unless asked for another number."""
_CAPABILITIES = filters.BY_NAME['capabilities']


@dataclasses.dataclass(frozen=True)
class Candidates:
    """What a reservation with a request spec could get now.

    ``count`` nodes of ``total`` (every node not vanished that the
    caller counts over; None when not explained); ``by_partition``,
    ``{(shard, conductor_group):
    count}`` of them (``''`` is Ironic's default group); ``excluded``,
    selection.Exclusion entries in the order the matcher applies its
    criteria; ``nodes``, the first of them, best fit first; ``promised``,
    how many of the ``count`` the holds keep from the project
    (admission.kept_from), so that ``count - promised`` more
    reservations would get a node now; ``admissible``, asked for a
    window, how many nodes a hold over it would be admitted for now
    (admission.admissible), else None.
    """

    count: int
    total: int | None
    by_partition: dict
    excluded: list
    nodes: list
    promised: int
    admissible: int | None = None


def candidates(project_id, request_spec, candidate_nodes=None,
               conductor_group=None, shard=None, limit=CANDIDATES_SHOWN,
               usable_by=None, explain=True, window=None):
    """How many nodes ``reserve`` with these arguments could get now,
    why the others are excluded (unless not ``explain``: ``total`` is
    then None and ``excluded`` empty, at the cost of reading only the
    nodes that pass the rules before the capabilities), and the first
    ``limit`` of them in the order a reservation tries them. Nothing is
    held.

    The nodes are counted as a 409 of ``reserve`` explains them, by the
    same code: SQL counts every node under the first criterion it fails
    (db.matching.tally), then Python checks the capabilities of the
    nodes SQL let through, once per distinct set of them, as it checks
    every node it reserves. With ``usable_by`` (a project) only the
    nodes that project may use are counted, and only those it owns or
    leases named. With ``window``, ``(start, end)``, it also answers how
    many nodes a hold over that window would be admitted for.

    :raises: InvalidRequestSpec naming the key; InvalidHold for a window
        that ends before it starts; DBError
    """
    spec = spec_mod.parse_request_spec(request_spec)
    context = _match_context(project_id, candidate_nodes, conductor_group,
                             shard)
    node_filter = _prefilter(spec, context)
    counted = db_matching.tally(node_filter, usable_by=usable_by,
                                partitions=True,
                                capabilities=bool(spec.capabilities),
                                explain=explain)
    by_partition = collections.Counter()
    misses, weights = [], []
    for group in counted.passing:
        miss = _CAPABILITIES.check(spec, group, context)
        if miss is None:
            by_partition[group.shard, group.conductor_group or ''] += (
                group.count)
        else:
            misses.append((group, _CAPABILITIES.name, miss))
            weights.append(group.count)
    total, eliminated, capability_values = _with_python(
        counted, selection.eliminate(misses, weights))
    nodes = []
    if limit:
        matched, _python_eliminated = _first_matches(
            spec, context, node_filter, max(
                limit, CONF.matcher.subset_size, CONF.matcher.max_attempts))
        if usable_by is not None:
            # Counted, not named: a node with no owner may be given to
            # the project, but only admin sees it (as in Ironic).
            matched = [node for node in matched
                       if usable_by in (node.owner, node.lessee)]
        nodes = selection.by_fit(spec, matched)[:limit]
    count = sum(by_partition.values())
    return Candidates(
        count=count, total=total if explain else None,
        by_partition=dict(sorted(by_partition.items(),
                                 key=lambda item: (item[0][0] or '',
                                                   item[0][1]))),
        excluded=selection.excluded(spec, eliminated, capability_values),
        nodes=nodes, promised=min(count, admission.kept_from(
            project_id, spec, context)),
        admissible=None if window is None else admission.admissible(
            project_id, request_spec, *window, shard=shard,
            conductor_group=conductor_group))
