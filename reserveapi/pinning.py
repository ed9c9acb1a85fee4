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

"""What the worker does for each hold over its life, a round at a time:
create its private flavor in Nova, pin its nodes from its start, give
back pins left idle, warn before its end, and carry the end out.

Each step reads what is stored and is safe to repeat, so a round that
stops part-way (Nova down, the worker killed) is finished by the next,
and workers may tend the same hold at once: nothing is lost or done
twice. A hold's end is done once ``finished_at`` is set; its events go
out once, from the worker that marks it.
"""

import datetime

from oslo_log import log
from oslo_utils import timeutils

from reserveapi import notifications
from reserveapi import reservations
from reserveapi.common import exception
import reserveapi.conf
from reserveapi.db import holds as db_holds
from reserveapi.db import reservations as db_reservations
from reserveapi.holds import admission
from reserveapi.mirror import nova as nova_peer

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF

FLAVOR_PREFIX = 'reserveapi-hold-'
"""A hold's flavor is named this and the hold's uuid."""


def flavor_name(hold):
    return FLAVOR_PREFIX + hold.uuid


def flavor_extra_specs(hold):
    """The hold's flavor asks Placement for one unit of the hold's own
    resource class and nothing else (the node was matched when pinned);
    the spec's ``capabilities:`` go along, for Ironic's deploy."""
    extra_specs = {
        'resources:' + admission.boot_resource_class(hold.uuid): '1',
        'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
        'resources:DISK_GB': '0'}
    for key, value in (hold.request_spec.get('extra_specs') or {}).items():
        if key.startswith('capabilities:'):
            extra_specs[key] = value
    return extra_specs


def tend(now=None):
    """One round over every hold whose end is not carried out yet. A
    failure with one hold (Nova unreachable) does not keep the others
    waiting; the first is raised once all had their turn.

    :raises: NovaUnavailable, NovaError; DBError
    """
    now = now or timeutils.utcnow()
    failures = []
    # Nodes of the projects' ordinary reservations counted for a hold
    # this round: each fills one hold.
    filled = set()
    for hold in db_holds.unfinished_holds():
        failures.extend(_tend(hold, now, filled))
    if failures:
        raise failures[0]


def _tend(hold, now, filled):
    """The steps due for ``hold``; the Nova failures met."""
    state = admission.state(hold, now)
    if state in (admission.CANCELLED, admission.ENDED):
        return _attempt(_finish, hold, now)
    failures = []
    if hold.flavor_id is None:
        failures += _attempt(_create_flavor, hold)
    if state == admission.PENDING:
        return failures
    _warn(hold, now)
    _pin_missing(_reclaim_idle(hold, now), filled)
    return failures


def _attempt(step, *args):
    try:
        step(*args)
    except (exception.NovaUnavailable, exception.NovaError) as error:
        LOG.warning('Hold %s: Nova could not be asked (%s); the next round '
                    'tries again.', args[0].uuid, error)
        return [error]
    return []


def _create_flavor(hold):
    counts = hold.request_spec
    flavor_id = nova_peer.NovaClient().ensure_private_flavor(
        flavor_name(hold), vcpus=max(int(counts.get('vcpus') or 1), 1),
        ram=max(int(counts.get('memory_mb') or 1), 1),
        disk=int(counts.get('root_gb') or 0),
        extra_specs=flavor_extra_specs(hold), project_id=hold.project_id)
    db_holds.set_hold_fields(hold.uuid, {'flavor_id': flavor_id})
    LOG.info('Hold %s: created its flavor %s for project %s', hold.uuid,
             flavor_id, hold.project_id)


def _warn(hold, now):
    notice = CONF.holds.end_notice
    if not notice or hold.warned_at is not None:
        return
    if now < hold.end_at - datetime.timedelta(seconds=notice):
        return
    # Marked first: a worker killed in between sends none rather than
    # two, and of workers at once only the one that marks it sends it.
    if db_holds.mark(hold.uuid, 'warned_at', now):
        notifications.hold_ending(hold, admission.state(hold, now))


def _reclaim_idle(hold, now):
    """Give back the pins idle for ``[holds] pin_idle_time``; the hold as
    it now is (it keeps that many fewer)."""
    idle_time = CONF.holds.pin_idle_time
    if not idle_time:
        return hold
    idle = db_reservations.list_pins(
        hold.id, created_before=now - datetime.timedelta(seconds=idle_time))
    freed = reservations.unpin(idle, reclaimed_from=hold.id)
    if not freed:
        return hold
    LOG.info('Hold %s: gave back %d pins unused for %d s', hold.uuid,
             len(freed), idle_time)
    after = db_holds.get_hold(hold.uuid)
    notifications.hold_reclaimed(after, admission.state(after, now),
                                 [pin.node_uuid for pin in freed])
    return after


def _pin_missing(hold, filled):
    """Pin what the hold keeps beyond its boots and its project's
    ordinary reservations that fill it (admission.ordinary_fill); record
    how many could not be found (``degraded`` while any). Pins beyond
    that (a boot pinned for itself while a round did, or the project
    reserved through its usual flavor since) are freed."""
    usage = admission.usage([hold])[hold.uuid]
    wanted = hold.kept - usage.in_use
    wanted -= admission.ordinary_fill(hold, wanted, filled)
    missing = wanted - usage.pinned
    shortfall = 0
    if missing > 0:
        shortfall = missing - reservations.pin(hold, missing)
    elif missing < 0:
        reservations.unpin(
            db_reservations.list_pins(hold.id)[:-missing])
    if shortfall != hold.shortfall:
        db_holds.set_hold_fields(hold.uuid, {'shortfall': shortfall})


def _finish(hold, now):
    """Carry out the end of an ended or cancelled hold: its pins go at
    once, its instances are deleted through Nova or kept (``at_end``),
    its flavor goes."""
    cancel_pins(hold)
    deleted = []
    if hold.at_end == 'delete':
        nova = nova_peer.NovaClient()
        for boot in db_reservations.list_hold_boots(hold.id):
            if nova.delete_server(boot.instance_uuid):
                deleted.append(boot.instance_uuid)
    if hold.flavor_id is not None:
        nova_peer.NovaClient().delete_flavor(hold.flavor_id)
    if not db_holds.mark(hold.uuid, 'finished_at', now):
        return  # another worker carried it out at the same time
    LOG.info('Hold %s %s: %s', hold.uuid, admission.state(hold, now),
             'deleted %d instances through Nova' % len(deleted)
             if hold.at_end == 'delete' else 'its instances are kept')
    notifications.hold_finished(hold, admission.state(hold, now), deleted)


def cancel_pins(hold):
    """Free every pin of ``hold`` at once.

    :raises: DBError
    """
    freed = reservations.unpin(db_reservations.list_pins(hold.id))
    if freed:
        LOG.info('Hold %s: freed its %d pins', hold.uuid, len(freed))
    return freed


def cancel_hold(uuid):
    """Cancel the hold ``uuid`` (admission.cancel_hold) and free its pins
    at once; the worker carries out the rest of its end.

    :raises: HoldNotFound
    """
    hold = admission.cancel_hold(uuid)
    cancel_pins(hold)
    return hold
