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

"""Make our reservations and Ironic agree again, and say what was done.

Two kinds of work, both for the Ironic source only:

* Claims left to clear (``ironic_releases``): an expiry, a release
  whose process could not reach Ironic or died, a claim whose answer
  was lost. Each is cleared (``inventory.claims``) once Ironic is back,
  by one process at a time, if Ironic still shows that instance on that
  node and nothing was deployed.
* Reservations the synced inventory contradicts, re-read in Ironic one
  by one: a node gone from Ironic, another instance on our node, or (we
  claimed it, or Nova deployed it) no instance at all. A ``reserved``
  reservation is repaired (``inventory.lifecycle``: claimed again, or
  ended and its node left for a sync); an ``active`` one belongs to a
  deployed instance and is only reported. A repair never outlives its
  reservation (one released meanwhile has the claim it just made
  cleared again) and never ends a reservation whose node carries its
  instance. Every disagreement is logged, at every pass, until it is
  gone.
* Claims of ours (``ironic.CLAIMED_BY``) on available nodes that no
  reservation holds and no clearing row stands for, older than
  ``[ironic] orphan_claim_grace``: none should exist, but each would
  keep its node from every scheduler for good. Each is logged, counted
  and cleared the way a release clears its claim.
"""

import datetime

from oslo_log import log
from oslo_utils import timeutils

from reserveapi.common import exception
from reserveapi.common import metrics
from reserveapi.common import states
import reserveapi.conf
from reserveapi.db import inventory as db_inventory
from reserveapi.db import reservations as db_reservations
from reserveapi.inventory import claims
from reserveapi.inventory import lifecycle
from reserveapi.inventory import sources
from reserveapi.inventory import sync as inventory_sync

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF

PER_PASS = 500
"""Claims to clear, and disagreements, handled by one pass at most."""


def reconcile():
    """One pass; returns counts of what was done.

    Ironic unreachable ends the pass early (noted, logged once per
    outage); the next pass carries on.
    """
    counts = {'cleared': 0, 'repaired': 0, 'reported': 0, 'orphaned': 0}
    if not sources.configured().reconciled:
        return counts
    source = sources.ironic_source()
    try:
        counts['cleared'] = claims.clear_due(source)
        last = inventory_sync.last_sync()
        if last is not None:
            _check_reservations(source, last.synced_at, counts)
        if sources.configured().claims_in_ironic:
            counts['orphaned'] = _clear_orphans(source)
    except exception.IronicUnavailable as error:
        inventory_sync.note_outage(error)
    if any(counts.values()):
        LOG.info('Ironic reconcile: %s', ', '.join(
            '%s %d' % item for item in sorted(counts.items())))
    return counts


def _check_reservations(source, synced_at, counts):
    """Re-read each node the last sync says we disagree on, then act."""
    for reservation, _instance, _vanished in (
            db_reservations.list_disagreements(
                synced_at, sources.configured().claims_in_ironic,
                PER_PASS)):
        page = source.get_node(reservation.node_uuid)
        inventory_sync.write(page)
        node = page.nodes[0] if page.nodes else None
        if node is not None and node['instance_uuid'] == (
                reservation.instance_uuid):
            continue  # the sync was behind; Ironic agrees
        if reservation.state == states.ACTIVE:
            _report(reservation, node)
            counts['reported'] += 1
        else:
            _repair(source, reservation, node)
            counts['repaired'] += 1


def _clear_orphans(source):
    """Clear our claims that nothing of ours stands for; how many."""
    grace = datetime.timedelta(seconds=CONF.ironic.orphan_claim_grace)
    now = timeutils.utcnow()
    found = 0
    for node_uuid, instance_uuid, changed in (
            source.our_claims_on_available_nodes()[:PER_PASS]):
        if changed is not None and now - changed < grace:
            continue  # on its way: its reservation may not be written yet
        if not db_inventory.claim_is_orphaned(node_uuid, instance_uuid):
            continue
        LOG.warning('Ironic node %s carries a claim of ours for instance %s '
                    'that no reservation holds and no clear stands for; '
                    'clearing it.', node_uuid, instance_uuid)
        metrics.IRONIC_ORPHAN_CLAIMS.inc()
        db_inventory.request_claim_to_clear(node_uuid, instance_uuid,
                                            claims.clear_now())
        claims.clear_quietly(source, node_uuid, instance_uuid)
        found += 1
    return found


def _report(reservation, node):
    LOG.error('Reservation %s (active) holds node %s for instance %s, but '
              'Ironic %s. Left for an operator: the instance was deployed.',
              reservation.uuid, reservation.node_uuid,
              reservation.instance_uuid, _what_ironic_says(node))


def _repair(source, reservation, node):
    """Claim the node again if Ironic left it free; otherwise end the
    reservation (its host gets 404 and reserves again)."""
    if (node is not None and node['instance_uuid'] is None
            and sources.configured().claims_in_ironic):
        lifecycle.reclaim(source, reservation)
    else:
        lifecycle.end_contradicted(reservation,
                                   'Ironic %s' % _what_ironic_says(node))


def _what_ironic_says(node):
    if node is None:
        return 'no longer has that node'
    if node['instance_uuid'] is None:
        return 'shows no instance on it (%s)' % node['provision_state']
    return 'shows instance %s on it (%s)' % (node['instance_uuid'],
                                             node['provision_state'])
