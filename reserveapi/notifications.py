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

"""Events on the message bus (oslo.messaging notifications).

Off unless ``[oslo_messaging_notifications] driver`` is set, as in every
OpenStack service. One function per event; callers call it once their
transaction has committed. A call only puts the event in a bounded
queue: a thread of this process sends it, so a broker that is down or
slow never fails or slows the caller. When the queue is full the event
is dropped and logged. Each payload is documented in
doc/source/admin/notifications.rst.

oslo.messaging is imported by that thread, and only when the
configuration has an ``[oslo_messaging_notifications]`` section: its
import takes over a second (it pulls in eventlet), which no command and
no request should pay for notifications that are off.
"""

import atexit
import importlib
import os
import queue
import socket
import threading
import time

from oslo_log import log

from reserveapi import rendering
import reserveapi.conf

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF

GROUP = 'oslo_messaging_notifications'
EVENT_PREFIX = 'baremetal_reservation.'
PUBLISHER = 'baremetal-reservation'
INFO, WARN, ERROR = 'info', 'warn', 'error'
DROP_LOG_INTERVAL = 60
"""Seconds between two warnings about dropped events."""

_sender = None
_sender_lock = threading.Lock()


def configured():
    """Whether notifications may be on: a driver is set, once
    oslo.messaging's options are loaded; before, whether the configuration
    files have the section at all (cheap: nothing is loaded)."""
    if GROUP in CONF:
        return bool(CONF[GROUP].driver)
    return GROUP in CONF.list_all_sections()


def load_notifier():
    """oslo.messaging's Notifier for our events, or None when
    ``[oslo_messaging_notifications] driver`` is unset (or ``noop``).
    Registers oslo.messaging's options on the way.
    """
    oslo_messaging = importlib.import_module('oslo_messaging')
    for group, opts in importlib.import_module(
            'oslo_messaging.opts').list_opts():
        if group == GROUP:
            CONF.register_opts(opts, group=GROUP)
    if not [driver for driver in CONF[GROUP].driver if driver != 'noop']:
        return None
    return oslo_messaging.Notifier(
        oslo_messaging.get_notification_transport(CONF),
        publisher_id='%s.%s' % (PUBLISHER, socket.gethostname()))


class _Sender:
    """A bounded queue and the thread that empties it into the notifier.

    The thread blocks while the broker is down (oslo.messaging retries
    as ``[oslo_messaging_notifications] retry`` says); events wait in the
    queue meanwhile, in order, up to ``[notifications] queue_size``.
    """

    def __init__(self):
        self.pid = os.getpid()
        self.queue = queue.Queue(maxsize=CONF.notifications.queue_size)
        self.dropped = 0
        self._warned_at = None
        threading.Thread(target=self._run, name='notifications',
                         daemon=True).start()
        atexit.register(self.flush, CONF.notifications.flush_timeout)

    def put(self, priority, event_type, payload):
        try:
            self.queue.put_nowait((priority, event_type, payload))
        except queue.Full:
            self.dropped += 1
            now = time.monotonic()
            if (self._warned_at is None
                    or now - self._warned_at >= DROP_LOG_INTERVAL):
                self._warned_at = now
                LOG.warning('Notification %s dropped: %d events wait for '
                            'the message bus already ([notifications] '
                            'queue_size); %d dropped so far.', event_type,
                            self.queue.maxsize, self.dropped)

    def _run(self):
        try:
            notifier = load_notifier()
        except Exception:
            LOG.exception('Notifications are off: oslo.messaging could not '
                          'be set up')
            notifier = None
        while True:
            priority, event_type, payload = self.queue.get()
            try:
                if notifier is not None:
                    getattr(notifier, priority)({}, event_type, payload)
            except Exception:
                LOG.exception('Notification %s not sent', event_type)
            finally:
                self.queue.task_done()

    def flush(self, timeout):
        """Wait up to ``timeout`` seconds for the queue to be sent; True
        when it was.
        """
        deadline = time.monotonic() + timeout
        with self.queue.all_tasks_done:
            while self.queue.unfinished_tasks:
                left = deadline - time.monotonic()
                if left <= 0:
                    LOG.warning('%d notifications not sent: the message '
                                'bus did not take them within %s s.',
                                self.queue.unfinished_tasks, timeout)
                    return False
                self.queue.all_tasks_done.wait(left)
        return True


def _get_sender():
    """This process's sender (a forked child makes its own)."""
    global _sender
    with _sender_lock:
        if _sender is None or _sender.pid != os.getpid():
            _sender = _Sender()
        return _sender


def _notify(priority, event, payload):
    if configured():
        _get_sender().put(priority, EVENT_PREFIX + event, payload)


def flush(timeout=None):
    """Wait for this process's events to be sent (tests, commands)."""
    if _sender is None:
        return True
    return _sender.flush(CONF.notifications.flush_timeout
                         if timeout is None else timeout)


def reservation_created(reservation):
    _notify(INFO, 'reservation.create', rendering.reservation(reservation))


def reservation_updated(before, after):
    """A PATCH: confirmed (reserved → active), taken over (new host), or
    both."""
    if after.state != before.state:
        _notify(INFO, 'reservation.confirm', rendering.reservation(after))
    if after.host != before.host:
        _notify(INFO, 'reservation.takeover',
                rendering.reservation(after, previous_host=before.host))


def reservations_taken_over(reservations, previous_host):
    """``reserveapi-manage takeover``: one event per reservation moved."""
    for reservation in reservations:
        _notify(INFO, 'reservation.takeover', rendering.reservation(
            reservation, previous_host=previous_host))


def reservation_released(reservation):
    _notify(INFO, 'reservation.release', rendering.reservation(reservation))


def reservation_expired(reservation):
    """A ``reserved`` reservation never confirmed within ``[reservations]
    reserved_ttl`` ended; its payload says so (``state``, ``expires_at``)
    with the TTL."""
    _notify(INFO, 'reservation.expire', rendering.reservation(
        reservation, expires_at=rendering.timestamp(reservation.expires_at),
        reserved_ttl=CONF.reservations.reserved_ttl))


def reservation_released_as_orphan(reservation):
    _notify(WARN, 'reservation.release_orphan',
            rendering.reservation(reservation))


def hold_created(hold, state):
    """A hold was admitted (``state``: holds/admission.py's, which this
    module may not import)."""
    _notify(INFO, 'hold.create', rendering.hold(hold, state))


def hold_updated(before, after, state):
    """A PATCH moved the end of a hold, changed its amount, or both:
    the hold after, with its end and amount before."""
    _notify(INFO, 'hold.update', rendering.hold(
        after, state, previous_end=rendering.timestamp(before.end_at),
        previous_amount=before.amount))


def hold_cancelled(hold, state):
    """A hold was cancelled (once: not again when cancelled already)."""
    _notify(INFO, 'hold.cancel', rendering.hold(hold, state))


def hold_ending(hold, state):
    """A hold ends in ``[holds] end_notice`` seconds or less: once per
    hold, so that its project can save its work."""
    _notify(INFO, 'hold.end_soon', rendering.hold(hold, state))


def hold_reclaimed(hold, state, node_uuids):
    """Pins of a hold waited ``[holds] pin_idle_time`` for a boot and
    were given back: their nodes are anyone's."""
    _notify(INFO, 'hold.reclaim', rendering.hold(
        hold, state, reclaimed_nodes=list(node_uuids)))


def hold_finished(hold, state, deleted_instances):
    """The end of an ended or cancelled hold was carried out: its pins
    freed, its flavor deleted, and its instances deleted through Nova
    (those named) or kept, as its ``at_end`` says."""
    _notify(INFO, 'hold.end', rendering.hold(
        hold, state, deleted_instances=list(deleted_instances)))


def ironic_claim_conflict(reservation, reason):
    """Ironic refused to let us claim the node we reserved; the
    reservation was undone and the next candidate is tried."""
    _notify(WARN, 'ironic.claim_conflict', {
        'instance_uuid': reservation.instance_uuid,
        'host': reservation.host,
        'node_uuid': reservation.node_uuid,
        'node_name': reservation.node_name,
        'reason': str(reason),
    })


def inventory_synced(source, full, counts):
    _notify(INFO, 'inventory.sync', {
        'source': source, 'full': full,
        **{key: counts.get(key, 0) for key in (
            'added', 'updated', 'unchanged', 'removed', 'flagged')}})


def ironic_unreachable(reason):
    """The first failure of an outage (once, whichever process saw it)."""
    _notify(ERROR, 'ironic.unreachable', {'reason': reason})


def ironic_reachable(unreachable_since):
    _notify(INFO, 'ironic.reachable', {
        'unreachable_since': rendering.timestamp(unreachable_since)})


def _membership(row, **extra):
    payload = {
        'aggregate_uuid': row.aggregate_uuid,
        'host': row.host,
        'action': 'join' if row.member else 'leave',
        'pending_since': rendering.timestamp(row.pending_since),
    }
    payload.update(extra)
    return payload


def mirror_change_applied(row, recorded):
    """Placement took a membership change (``recorded``: the row after,
    None when a newer change overtook it, which is notified instead)."""
    if recorded is not None and recorded.synced:
        _notify(INFO, 'aggregate.apply',
                _membership(row, failed_attempts=row.attempts))


def mirror_change_failed(row, error):
    """An attempt at a membership change failed; notified once, at the
    ``[notifications] mirror_pending_attempts``-th failure."""
    attempts = row.attempts + 1
    if attempts == CONF.notifications.mirror_pending_attempts:
        _notify(WARN, 'aggregate.pending',
                _membership(row, failed_attempts=attempts,
                            last_error=error))
