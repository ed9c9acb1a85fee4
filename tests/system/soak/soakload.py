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

"""The load of a soak run: clients reserving, confirming and releasing
through ``reserveapi.client``, a client changing aggregates, and a
monitor reading the database for double holds.

Every HTTP answer any client receives, retries included, goes through a
``requests`` response hook into the ``Recorder``; keystoneauth1's own
retries (of failed connections and of 503s) are counted from its log.
"""

import collections
import functools
import logging
import random
import threading
import time
import uuid

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
import requests
import sqlalchemy as sa

from reserveapi import client
from reserveapi_testing import observer
from tests.system.soak import soakservices

OPERATION_ATTEMPTS = 15
REQUEST_TIMEOUT = 60
ALLOWED_STATUSES = frozenset(range(200, 300)) | {404, 409, 503}
SPEC = {
    'memory_mb': 1024, 'vcpus': 8, 'vcpu_weight': None, 'root_gb': 20,
    'ephemeral_gb': 10, 'swap': 2, 'rxtx_factor': 1.0,
    'extra_specs': {'resources:CUSTOM_BAREMETAL_SOAK': '1',
                    'trait:CUSTOM_RAID': 'required'},
    'image': {'id': 'b5b2e7a3-4f0c-4c9e-9d1a-3e6f8a2c1d40',
              'properties': {'hw_architecture': 'x86_64'}},
}


class GaveUp(Exception):
    """An operation still failed after OPERATION_ATTEMPTS attempts."""


class Recorder(logging.Handler):
    """Thread-safe tallies of everything the clients saw."""

    def __init__(self):
        super().__init__(level=logging.WARNING)
        # Not ``lock``: logging.Handler holds that one while emit() runs.
        self.tally_lock = threading.Lock()
        self.statuses = collections.Counter()
        self.bad_answers = []
        self.counts = collections.Counter()
        self.holds = []  # (node_uuid, reservation_uuid, start, end)
        self.anomalies = []
        self.gave_up = []
        self.max_attempts = collections.Counter()

    def response_hook(self, response, *args, **kwargs):
        with self.tally_lock:
            self.statuses[response.status_code] += 1
            if response.status_code not in ALLOWED_STATUSES:
                self.bad_answers.append({
                    'method': response.request.method,
                    'url': response.request.url,
                    'status': response.status_code,
                    'request_id': response.headers.get(
                        'x-openstack-request-id'),
                    'body': response.text[:500]})

    def emit(self, record):
        """keystoneauth1's warnings about the retries it makes."""
        message = record.getMessage()
        if message.startswith('Failure:'):
            self.count('connection retries (keystoneauth1)')
        elif message.startswith('Retriable status code'):
            self.count('503 retries (keystoneauth1)')

    def count(self, name, amount=1):
        with self.tally_lock:
            self.counts[name] += amount

    def attempts(self, operation, attempts):
        with self.tally_lock:
            self.counts['operations: %s' % operation] += 1
            if attempts > 1:
                self.counts['operation retries'] += attempts - 1
            self.max_attempts[operation] = max(
                self.max_attempts[operation], attempts)

    def anomaly(self, text):
        with self.tally_lock:
            self.anomalies.append(text)

    def hold(self, node_uuid, reservation_uuid, start, end):
        with self.tally_lock:
            self.holds.append((node_uuid, reservation_uuid, start, end))


def make_session(recorder):
    """A keystoneauth1 session with no auth (the API runs noauth) whose
    every response reaches the recorder."""
    http = requests.Session()
    http.hooks['response'].append(recorder.response_hook)
    return ks_session.Session(session=http, timeout=REQUEST_TIMEOUT)


def attempt(recorder, operation, call):
    """``call()``, repeated while the service is unavailable (503 after
    the client's own retries, or no connection), as Nova would."""
    for number in range(1, OPERATION_ATTEMPTS + 1):
        try:
            result = call()
        except client.ServiceUnavailable:
            pass  # a 502/503/504, or no connection, after the retries
        except client.ClientError:
            recorder.attempts(operation, number)
            raise
        except ks_exc.ConnectionError:
            pass
        else:
            recorder.attempts(operation, number)
            return result
        time.sleep(min(0.25 * 2 ** number, 2.0))
    recorder.attempts(operation, OPERATION_ATTEMPTS)
    raise GaveUp(operation)


class ReservationClient(threading.Thread):
    """One compute host spawning and deleting instances in a loop, each
    with the request spec ``self.spec`` holds then."""

    def __init__(self, url, host, recorder, stop):
        super().__init__(name='client-%s' % host, daemon=True)
        self.host = host
        self.recorder = recorder
        self.stop = stop
        self.spec = SPEC
        self.client = client.ReservationClient(
            make_session(recorder), endpoint_override=url)
        self.lost_instances = []

    def run(self):
        while not self.stop.is_set():
            try:
                self.cycle(str(uuid.uuid4()))
            except GaveUp as exc:
                self.recorder.gave_up.append('%s: %s' % (self.name, exc))
            except Exception as exc:  # noqa: BLE001 - reported, not hidden
                self.recorder.anomaly('%s: %r' % (self.name, exc))
                time.sleep(0.5)

    def cycle(self, instance_uuid):
        asked = time.monotonic()
        try:
            reservation = attempt(self.recorder, 'reserve', lambda: (
                self.client.reserve(instance_uuid, self.host, self.spec)))
        except GaveUp:
            self.lost_instances.append(instance_uuid)
            raise
        except client.Conflict as exc:
            self.recorder.count('409 %s' % exc.code)
            time.sleep(0.05)
            return
        self.answered(reservation)
        start = time.monotonic()
        uuid_ = reservation['uuid']
        if random.random() < 0.3:
            again = attempt(self.recorder, 'reserve again', lambda: (
                self.client.reserve(instance_uuid, self.host, self.spec)))
            self.answered(again)
            if again['uuid'] == uuid_:
                pass
            elif self.outlived_ttl(asked):
                self.superseded(reservation)
                self.recorder.hold(reservation['node_uuid'], uuid_, start,
                                   time.monotonic())
                reservation, uuid_ = again, again['uuid']
                start = time.monotonic()
            else:
                self.recorder.anomaly('instance %s got reservations %s and '
                                      '%s' % (instance_uuid, uuid_,
                                              again['uuid']))
        if self.abandon(reservation):
            return
        kept = False
        try:
            try:
                confirmed = attempt(self.recorder, 'confirm',
                                    lambda: self.client.confirm(uuid_))
            except client.Conflict as exc:
                if not (exc.code == 'reserveapi.invalid_state'
                        and 'expired' in str(exc.detail)
                        and self.outlived_ttl(asked)):
                    raise
            else:
                if confirmed['state'] != 'active':
                    self.recorder.anomaly('confirmed %s is %s'
                                          % (uuid_, confirmed['state']))
                kept = self.keep(confirmed, start)
            time.sleep(random.random() * 0.02)
        finally:
            if not kept:
                self.recorder.hold(reservation['node_uuid'], uuid_, start,
                                   time.monotonic())
                released = attempt(self.recorder, 'release',
                                   lambda: self.client.release(uuid_))
                if not released:
                    self.recorder.count('release found it gone (retried)')

    def answered(self, reservation):
        """A reservation was answered (201, or 200 for a retry)."""

    def abandon(self, reservation):
        """True to leave the reservation as a lost build would: never
        confirmed, never released."""
        return False

    def keep(self, reservation, start):
        """True to keep the confirmed reservation, held since ``start``
        (monotonic), as an instance that goes on running: never released
        by this loop, and its hold not recorded here."""
        return False

    def outlived_ttl(self, asked):
        """Whether a reservation asked for at ``asked`` (monotonic) may
        have expired by now: an outage outlasted ``reserved_ttl`` (never
        with ``reserved_ttl = 0``). A new reservation for the instance,
        or a confirm refused as expired, is then no anomaly.
        """
        return False

    def superseded(self, reservation):
        """Asked again after ``outlived_ttl``, the instance got a new
        reservation: ``reservation`` must have expired (and is left as
        the expiry left it)."""

    def _listed(self, instance_uuid):
        return list(self.client.list(instance_uuid=instance_uuid))

    def forget_lost(self):
        """Release what a reserve that gave up may have left; the count
        of reservations found that way."""
        found = 0
        for instance_uuid in self.lost_instances:
            listed = attempt(self.recorder, 'cleanup', functools.partial(
                self._listed, instance_uuid))
            for item in listed:
                attempt(self.recorder, 'cleanup', functools.partial(
                    self.client.release, item['uuid']))
                found += 1
        return found


class AggregateClient(threading.Thread):
    """Hosts joining and leaving aggregates, now and then an aggregate
    deleted (and never used again), as nova-api's hooks would."""

    def __init__(self, url, hosts, recorder, stop, aggregates=4):
        super().__init__(name='aggregates', daemon=True)
        self.hosts = list(hosts)
        self.recorder = recorder
        self.stop = stop
        self.client = client.AggregateMirrorClient(
            make_session(recorder), endpoint_override=url)
        self.aggregates = [str(uuid.uuid4()) for _ in range(aggregates)]
        self.used = set(self.aggregates)

    def run(self):
        while not self.stop.wait(0.1):
            try:
                self.change()
            except GaveUp as exc:
                self.recorder.gave_up.append('aggregates: %s' % exc)
            except Exception as exc:  # noqa: BLE001 - reported, not hidden
                self.recorder.anomaly('aggregates: %r' % exc)

    def change(self):
        aggregate = random.choice(self.aggregates)
        if random.random() < 0.02:
            attempt(self.recorder, 'aggregate delete',
                    lambda: self.client.delete_aggregate(aggregate))
            self.aggregates.remove(aggregate)
            self.aggregates.append(str(uuid.uuid4()))
            self.used.add(self.aggregates[-1])
            return
        host = random.choice(self.hosts)
        if random.random() < 0.6:
            attempt(self.recorder, 'aggregate join',
                    lambda: self.client.add_host(aggregate, host))
        else:
            attempt(self.recorder, 'aggregate leave',
                    lambda: self.client.remove_host(aggregate, host))


class Monitor(threading.Thread):
    """Reads the database every ``interval`` for a node or an instance
    held by two live reservations (its own connection, outside the API).
    """

    QUERIES = {
        'node': 'SELECT node_id FROM reservations WHERE state IN '
                "('reserved', 'active') GROUP BY node_id "
                'HAVING COUNT(*) > 1',
        'instance': 'SELECT instance_uuid FROM reservations WHERE state IN '
                    "('reserved', 'active') GROUP BY instance_uuid "
                    'HAVING COUNT(*) > 1',
    }

    def __init__(self, url, recorder, stop, interval=0.2):
        super().__init__(name='monitor', daemon=True)
        self.engine = observer.engine(url, pool_pre_ping=True)
        self.recorder = recorder
        self.stop = stop
        self.interval = interval
        self.doubles = []

    def run(self):
        while not self.stop.wait(self.interval):
            try:
                with self.engine.connect() as connection:
                    for kind, query in self.QUERIES.items():
                        rows = connection.execute(sa.text(query)).all()
                        if rows:
                            self.doubles.append((kind, rows))
                self.recorder.count('monitor reads')
            except sa.exc.DBAPIError:
                self.recorder.count('monitor reads missed (database down)')
        self.engine.dispose()


def overlapping_holds(holds):
    """Pairs of reservations whose holds of one node overlap in time, as
    the clients saw them: from the reserve's answer to the release's
    request."""
    by_node = collections.defaultdict(list)
    for node_uuid, reservation_uuid, start, end in holds:
        by_node[node_uuid].append((start, end, reservation_uuid))
    overlaps = []
    for node_uuid, spans in by_node.items():
        spans.sort()
        for (_s1, end1, first), (start2, _e2, second) in zip(
                spans, spans[1:], strict=False):
            if start2 < end1 and first != second:
                overlaps.append((node_uuid, first, second))
    return overlaps


# With the real Ironic (run.py --inventory ironic) ---------------------------

ABANDON_CHANCE = 0.05
"""Of the reservations a client makes, the share it abandons, as a build
that never finished would: never confirmed, never released, left to
``[reservations] reserved_ttl``."""

SHORT_GRACE = 1.0
"""Seconds a reservation that a client was answered for (or whose claim
Ironic was seen to carry) may be read without its claim in Ironic: the
reads of Ironic and of our database are not one snapshot."""

PENDING_GRACE = 15.0
"""Seconds a live reservation that no client was answered for yet may be
without its claim in Ironic: its claim PATCH may wait up to ``[ironic]
timeout`` (5 s in the soak), twice with a NodeLocked retry, before the
request gives up and undoes the reservation."""

READ_INTERVAL = 0.5


class ClaimLedger:
    """What the clients and the foreign tool did to Ironic's claims, for
    the checks: instances used, answers and what Ironic showed for them,
    reservations abandoned, and claims another tool made behind our back.
    Times are ``time.monotonic()``.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.instances = set()
        self.answers = []
        self.first_answer = {}
        self.abandoned = []
        self.outlived = []
        self.foreign = []

    def use(self, instance_uuid):
        with self.lock:
            self.instances.add(instance_uuid)

    def answer(self, reservation, status, at, shown, waited):
        """A 201/200 received ``at``, and the ``instance_uuid`` Ironic
        showed on its node (after ``waited`` seconds of grace)."""
        with self.lock:
            self.first_answer.setdefault(reservation['uuid'], at)
            self.answers.append({
                'reservation': reservation['uuid'],
                'instance': reservation['instance_uuid'],
                'node': reservation['node_uuid'], 'status': status,
                'at': at, 'ironic_shows': shown,
                'waited_s': round(waited, 2)})

    def answered_at(self, reservation_uuid):
        with self.lock:
            return self.first_answer.get(reservation_uuid)

    def abandon(self, reservation):
        with self.lock:
            self.abandoned.append(reservation['uuid'])

    def outlive(self, reservation):
        """A client got a new reservation for the instance of
        ``reservation`` after an outage longer than ``reserved_ttl``:
        ``reservation`` must have expired, as an abandoned one."""
        with self.lock:
            self.outlived.append(reservation['uuid'])

    def foreign_claimed(self, node_uuid, instance_uuid, since):
        with self.lock:
            self.foreign.append({'node': node_uuid,
                                 'instance': instance_uuid,
                                 'since': since, 'until': None})

    def foreign_held(self):
        """The foreign claims the other tool still holds, oldest first."""
        with self.lock:
            return [claim for claim in self.foreign
                    if claim['until'] is None]

    def foreign_dropped(self, claim, until):
        with self.lock:
            claim['until'] = until

    def foreign_at(self, node_uuid, at):
        """The foreign claim on ``node_uuid`` at time ``at``, or None."""
        with self.lock:
            for claim in self.foreign:
                if (claim['node'] == node_uuid and claim['since'] <= at
                        and (claim['until'] is None or at < claim['until'])):
                    return claim
        return None


MISSING = '<no such node>'


def read_claim(ironic, node_uuid, instance_uuid, grace=SHORT_GRACE,
               outage=90.0):
    """The ``instance_uuid`` Ironic shows on the node: at once if it is
    ``instance_uuid``, else as read again until ``grace`` seconds passed
    since the first read without it. An Ironic down or hung is waited
    for, up to ``outage`` seconds (the claim must still be there once it
    is back: a killed Ironic keeps what it committed). Returns ``(shown,
    seconds waited)``; ``shown`` is None if Ironic could not be read.
    """
    began = time.monotonic()
    first_miss = None
    while True:
        try:
            shown = ironic.claim_of(node_uuid)
        except soakservices.IRONIC_READ_ERRORS as exc:
            if getattr(getattr(exc, 'response', None), 'status_code',
                       None) == 404 or 'answered 404' in str(exc):
                shown = MISSING
            elif time.monotonic() - began > outage:
                return None, time.monotonic() - began
            else:
                time.sleep(0.5)
                continue
        now = time.monotonic()
        if shown == instance_uuid:
            return shown, now - began
        if first_miss is None:
            first_miss = now
        elif now - first_miss >= grace:
            return shown, now - began
        time.sleep(0.25)


class IronicReservationClient(ReservationClient):
    """A compute host against the API with the Ironic source: every
    reservation answered is checked against Ironic right then, and now
    and then one is abandoned (at most one per ``abandon_spacing``
    seconds, so that abandoned ones do not take every node).
    """

    def __init__(self, url, host, recorder, stop, ironic, ledger,
                 reserved_ttl):
        super().__init__(url, host, recorder, stop)
        self.ironic = ironic
        self.ledger = ledger
        self.reserved_ttl = reserved_ttl
        self.abandon_spacing = reserved_ttl + 10
        self.next_abandon = 0.0
        self.last_reserve_status = None
        self.client.adapter.session.session.hooks['response'].append(
            self._seen)

    def _seen(self, response, *args, **kwargs):
        if response.request.method == 'POST':
            self.last_reserve_status = response.status_code

    def cycle(self, instance_uuid):
        self.ledger.use(instance_uuid)
        super().cycle(instance_uuid)

    def answered(self, reservation):
        status, at = self.last_reserve_status, time.monotonic()
        shown, waited = read_claim(self.ironic, reservation['node_uuid'],
                                   reservation['instance_uuid'])
        self.ledger.answer(reservation, status, at, shown, waited)

    def abandon(self, reservation):
        now = time.monotonic()
        if now < self.next_abandon or random.random() >= ABANDON_CHANCE:
            return False
        self.next_abandon = now + self.abandon_spacing
        self.ledger.abandon(reservation)
        self.recorder.count('reservations abandoned')
        return True

    def outlived_ttl(self, asked):
        if time.monotonic() - asked < self.reserved_ttl:
            return False
        self.recorder.count('reservations expired in an outage longer '
                            'than reserved_ttl')
        return True

    def superseded(self, reservation):
        self.ledger.outlive(reservation)


class ClaimMonitor(threading.Thread):
    """Every ``READ_INTERVAL``: every node's ``instance_uuid`` from
    Ironic, then our live reservations (and the sync lease) from the
    database, in that order: a release ends the reservation in the
    database before it clears the claim, so a reservation still live
    after Ironic was read must have had its claim when it was read.

    A live reservation whose node does not carry its instance is a
    violation once it is *held* (a client was answered for it before
    the read, or Ironic was seen carrying its claim) and stays so over
    at least two reads and ``SHORT_GRACE`` seconds; one never answered
    nor seen claimed (its claim PATCH may still be on its way) once it
    stays so for ``PENDING_GRACE`` seconds. Foreign claims are read
    too: each must stay on its node while the other tool holds it.
    """

    LIVE = sa.text(
        'SELECT r.uuid, r.instance_uuid, n.uuid, r.state '
        'FROM reservations r JOIN nodes n ON n.id = r.node_id '
        "WHERE r.state IN ('reserved', 'active')")
    LEASE = sa.text('SELECT leased_by, synced_at FROM inventory_syncs '
                    "WHERE source = 'ironic'")

    def __init__(self, url, ironic, ledger, recorder):
        super().__init__(name='claim-monitor', daemon=True)
        self.engine = observer.engine(url, pool_pre_ping=True)
        self.ironic = ironic
        self.ledger = ledger
        self.recorder = recorder
        self.stop = threading.Event()
        self.seen_claimed = set()
        self.missing = {}
        self.violations = {}
        self.foreign_changes = {}
        self.lease_samples = []
        self.last_read = None

    def run(self):
        while not self.stop.wait(READ_INTERVAL):
            try:
                self.read()
            except Exception as exc:  # noqa: BLE001 - reported, not hidden
                self.recorder.anomaly('claim monitor: %r' % exc)
        self.engine.dispose()

    def read(self):
        began = time.monotonic()
        try:
            shown = self.ironic.claims()
        except soakservices.IRONIC_READ_ERRORS:
            self.recorder.count('claim monitor: Ironic reads missed')
            return
        try:
            with self.engine.connect() as connection:
                live = connection.execute(self.LIVE).all()
                lease = connection.execute(self.LEASE).first()
        except sa.exc.DBAPIError:
            self.recorder.count('claim monitor: database reads missed')
            return
        self.recorder.count('claim monitor reads')
        self.last_read = began
        self._sample_lease(began, lease)
        self._check_foreign(shown, began)
        still_missing = {}
        for uuid_, instance, node, state in live:
            on_node = shown.get(node, MISSING)
            if on_node == instance:
                self.seen_claimed.add(uuid_)
                continue
            entry = self.missing.get(uuid_) or {
                'since': began, 'held_since': None, 'held_reads': 0}
            answered = self.ledger.answered_at(uuid_)
            if uuid_ in self.seen_claimed or (
                    answered is not None and answered < began):
                if entry['held_since'] is None:
                    entry['held_since'] = began
                entry['held_reads'] += 1
            entry.update(node=node, instance=instance, state=state,
                         shown=on_node, last=began)
            still_missing[uuid_] = entry
            self._judge(uuid_, entry)
        self.missing = still_missing

    def _judge(self, uuid_, entry):
        held = entry['held_since'] is not None
        if held and (entry['held_reads'] < 2
                     or entry['last'] - entry['held_since'] < SHORT_GRACE):
            return
        if not held and entry['last'] - entry['since'] < PENDING_GRACE:
            return
        foreign = self.ledger.foreign_at(entry['node'], entry['last'])
        problem = self.violations.setdefault(uuid_, {
            'reservation': uuid_, 'instance': entry['instance'],
            'node': entry['node'], 'held': held,
            'since': round(entry['since'], 1)})
        problem.update(ironic_shows=entry['shown'], state=entry['state'],
                       foreign_claim=foreign is not None,
                       last_seen=round(entry['last'], 1))

    def _check_foreign(self, shown, began):
        for claim in self.ledger.foreign_held():
            if claim['since'] >= began:
                continue
            on_node = shown.get(claim['node'], MISSING)
            if on_node != claim['instance']:
                self.foreign_changes.setdefault(
                    (claim['node'], on_node), {
                        'node': claim['node'], 'foreign': claim['instance'],
                        'ironic_shows': on_node, 'at': round(began, 1)})

    def _sample_lease(self, at, lease):
        value = tuple(lease) if lease is not None else (None, None)
        if not self.lease_samples or self.lease_samples[-1][1:] != value:
            self.lease_samples.append((at,) + value)
