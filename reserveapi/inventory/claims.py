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

"""Our claims in Ironic: made by the holder of a reservation, cleared by
one process at a time. How to make a claim and how to clear one safely;
when, and what a failure changes, ``inventory.lifecycle`` decides.

Ironic sets an instance only on a node that has none, so a claim can
never take a node from anyone. A clear can: Ironic has no conditional
PATCH, so it reads the node and removes the instance if it is ours. Two
rules make that safe:

* A claim to clear is a row in ``ironic_releases``, written in the
  transaction that ends the reservation. While it exists the node is not
  offered (it stays stale), so no claim of ours can land on it before
  the clear is done.
* Only the process holding the row's lease reads and clears, renewing
  the lease while it works; the row goes only when the clear that
  finished saw every request made for it (its ``generation``). A second
  clearer never wipes a claim made after the first one finished.

Between the read and the PATCH nobody else can claim the node, since our
instance is on it: a clear that saw our instance removes only ours.

A claim made again for a reservation others know (a retried request, a
worker's repair) may land after that reservation ended and its clear
ran. Such a claim is made under a clearing row of its own, leased to the
claiming process until it knows the reservation still stands
(``guard``): no clear runs while it is on its way, and a process that
dies in between leaves the row for a worker.
"""

import dataclasses
import datetime

from oslo_log import log
from oslo_utils import timeutils

from reserveapi.common import exception
from reserveapi.common import heartbeat
from reserveapi.common import outages
from reserveapi.common import states
from reserveapi.db import inventory as db_inventory
from reserveapi.inventory import sync as inventory_sync

LOG = log.getLogger(__name__)

UNCERTAIN_DELAY = 2 * heartbeat.SECONDS
"""Seconds before a worker clears a claim whose PATCH may still be on
its way (Ironic could not be asked, or the request failed midway): long
enough for it to have landed, so that the clear sees it."""

PER_PASS = 500
"""Claims one worker pass clears at most."""


def clear_now():
    """How a release that clears its claim itself asks for it: leased to
    this process, which clears it right after committing (or, if it
    dies, a worker once the lease lapses)."""
    return db_inventory.ClearRequest(holder=heartbeat.holder(),
                                     lease_seconds=heartbeat.SECONDS)


def clear_later(delay=0):
    """How a release leaves its claim for a worker to clear."""
    return db_inventory.ClearRequest(delay=delay)


def claim(source, node_uuid, instance_uuid, info):
    """Claim ``node_uuid`` for ``instance_uuid`` (whose live reservation
    holds that node); the node as Ironic answered, normalized.

    A claim of the instance left on another node (one whose answer was
    lost, or whose clear is still due) is cleared first, unless something
    was deployed there.

    :raises: NodeTaken; InstanceDeployed; ClaimBeingCleared when another
        process is clearing the instance's other claim; IronicUnavailable
        (the claim may have landed).
    """
    try:
        return source.claim(node_uuid, instance_uuid, info)
    except exception.InstanceClaimedElsewhere:
        pass
    _clear_elsewhere(source, instance_uuid)
    try:
        return source.claim(node_uuid, instance_uuid, info)
    except exception.InstanceClaimedElsewhere:
        found = source.find_claim(instance_uuid)
        raise exception.ClaimBeingCleared(
            instance_uuid=instance_uuid,
            node=found[0] if found else 'unknown')


@dataclasses.dataclass(frozen=True)
class Guard:
    """The clearing row that stands for a claim made again, leased to the
    claiming process (``guard``), at ``generation``."""

    node_uuid: str
    instance_uuid: str
    holder: str
    generation: int

    def leased(self):
        """A heartbeat keeping the row leased while Ironic is asked."""
        return _leased(self.node_uuid, self.instance_uuid, self.holder,
                       'ironic-claim')

    def finish(self):
        """Nothing of ours is left to clear (the claim is known to stand
        with its reservation, or never landed): the row goes, unless a
        clear was asked for meanwhile."""
        db_inventory.finish_claim_to_clear(self.node_uuid,
                                           self.instance_uuid, self.holder,
                                           self.generation)

    def postpone(self, error):
        """The claim may land still: a worker clears it once it must have
        (leaving it alone if a live reservation holds it)."""
        db_inventory.postpone_claim_to_clear(
            self.node_uuid, self.instance_uuid, self.holder,
            str(error) or type(error).__name__,
            timeutils.utcnow() + datetime.timedelta(
                seconds=UNCERTAIN_DELAY))


def guard(node_uuid, instance_uuid):
    """Before claiming the pair again for a reservation other requests
    know and may end meanwhile (a retried request, a worker's repair): a
    clearing row leased to this process stands for the claim until the
    claimer knows whether the reservation still stands. Should it end
    meanwhile and this process die between the PATCH and that answer, a
    worker clears the claim once the lease lapses (one a live
    reservation holds, it leaves alone). A clear under way meanwhile
    waits for the row's lease, so it cannot read Ironic before the claim
    lands and miss it.

    :raises: ClaimBeingCleared when another process is clearing (or
        claiming) this very claim: nothing was written.
    """
    holder = heartbeat.holder()
    generation = db_inventory.guard_ironic_claim(
        node_uuid, instance_uuid, holder, heartbeat.SECONDS, UNCERTAIN_DELAY)
    if generation is None:
        raise exception.ClaimBeingCleared(instance_uuid=instance_uuid,
                                          node=node_uuid)
    return Guard(node_uuid, instance_uuid, holder, generation)


def _leased(node_uuid, instance_uuid, holder, name):
    """A heartbeat keeping ``holder``'s lease on the pair's clearing row
    while Ironic is asked."""
    return heartbeat.Heartbeat(
        lambda: db_inventory.renew_claim_to_clear(
            node_uuid, instance_uuid, holder, heartbeat.SECONDS), name=name)


def _clear_elsewhere(source, instance_uuid):
    found = source.find_claim(instance_uuid)
    if found is None:
        return  # cleared meanwhile: the retried claim will tell
    node_uuid, state = found
    if state not in states.UNDEPLOYED:
        raise exception.InstanceDeployed(instance_uuid=instance_uuid,
                                         node=node_uuid, state=state)
    LOG.warning('Ironic has instance %s on node %s too, which it does not '
                'hold here; clearing that claim.', instance_uuid, node_uuid)
    db_inventory.request_claim_to_clear(node_uuid, instance_uuid,
                                        clear_now())
    if clear(source, node_uuid, instance_uuid) is None:
        raise exception.ClaimBeingCleared(instance_uuid=instance_uuid,
                                          node=node_uuid)


def clear(source, node_uuid, instance_uuid):
    """Clear a claim asked to be cleared (``ironic_releases``) if this
    process can lease it; returns what was done, in words, or None when
    another process is clearing it.

    :raises: ClaimNotCleared, IronicUnavailable (noted, logged once per
        outage): the row stays, due again at the worker's next pass.
    """
    holder = heartbeat.holder()
    generation = db_inventory.take_claim_to_clear(
        node_uuid, instance_uuid, holder, heartbeat.SECONDS)
    if generation is None:
        return None
    page = None
    if db_inventory.holds_live(node_uuid, instance_uuid):
        # Cannot happen while the node is not offered; never clear a
        # claim a live reservation stands on.
        outcome = 'held by a live reservation, left alone'
    else:
        keeper = _leased(node_uuid, instance_uuid, holder, 'claim-clear')
        try:
            with keeper:
                outcome, page = source.clear_claim(
                    node_uuid, instance_uuid, keeper.held)
        except exception.ServiceUnavailable as error:
            db_inventory.postpone_claim_to_clear(
                node_uuid, instance_uuid, holder, error.detail,
                timeutils.utcnow())
            if isinstance(error, exception.IronicUnavailable):
                inventory_sync.note_outage(error)
            else:
                LOG.warning('Claim of instance %s on Ironic node %s: %s; '
                            'trying again later.', instance_uuid,
                            node_uuid, error.detail)
            raise
    if not db_inventory.finish_claim_to_clear(node_uuid, instance_uuid,
                                              holder, generation):
        outcome += '; asked again meanwhile, so cleared again later'
    LOG.info('Claim of instance %s on Ironic node %s: %s.', instance_uuid,
             node_uuid, outcome)
    if page is not None:
        # Ironic's answer is a fresh read: no need to wait for a sync.
        inventory_sync.write(page)
    return outcome


def clear_quietly(source, node_uuid, instance_uuid):
    """``clear`` for a caller whose own work is committed and must not
    fail for it: what cannot be cleared now, a worker clears later (the
    row stays; a lease this process took lapses)."""
    try:
        clear(source, node_uuid, instance_uuid)
    except exception.ServiceUnavailable:
        pass  # postponed and logged: the worker clears it
    except Exception as error:
        outages.log_failure(
            LOG, 'Could not clear the claim of instance %s on Ironic node '
            '%s now; a worker will' % (instance_uuid, node_uuid), error)


def clear_due(source):
    """The worker's part: clear every claim due; returns how many were
    dealt with. Ironic unreachable ends the pass (raised)."""
    cleared = 0
    for due in db_inventory.due_claims_to_clear(PER_PASS):
        try:
            outcome = clear(source, due.node_uuid, due.instance_uuid)
        except exception.ClaimNotCleared:
            continue  # due again later; the others may go through
        if outcome is not None:
            cleared += 1
    return cleared
