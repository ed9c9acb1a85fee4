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

"""Every event, as a consumer of the real RabbitMQ receives it, driven
through the code paths that emit it (the API on SQLite, the worker's
functions, the real Placement); and a broker that is down slows no call.
"""

import collections
import datetime
import os
import queue
import socket
import time
import uuid

import fixtures
import kombu
from oslo_config import cfg
from oslo_config import fixture as config_fixture
import oslo_messaging
from oslo_messaging import opts as messaging_opts
from oslo_utils import timeutils
import testtools

from reserveapi import conf
from reserveapi import notifications
from reserveapi import reservations
from reserveapi.common import exception
from reserveapi.inventory import lifecycle
from reserveapi.inventory import sources as inventory_sources
from reserveapi.inventory import sync as inventory_sync
from reserveapi.mirror import nova as nova_peer
from reserveapi.mirror import state as mirror_state
from reserveapi_testing import examples
from reserveapi_testing import inventory
from reserveapi_testing import loopback
from tests.functional.api import reservation_base
from tests.functional.mirror import base as mirror_base

TRANSPORT_URL = os.environ.get('RESERVEAPI_TEST_TRANSPORT_URL',
                               'rabbit://guest:guest@127.0.0.1:5672/')
TIMEOUT = 30
PREFIX = 'baremetal_reservation.'
RESERVATION_FIELDS = ('uuid', 'instance_uuid', 'host', 'project_id',
                      'node_uuid', 'node_name', 'resource_class', 'state',
                      'created_at', 'updated_at')
HOLD_FIELDS = ('uuid', 'project_id', 'amount', 'request_spec',
               'resource_class', 'shard', 'conductor_group', 'start', 'end',
               'padding', 'state', 'created_at', 'updated_at', 'cancelled_at',
               'at_end', 'reclaimed', 'shortfall', 'flavor_id')
HOLD_API_ONLY = ('boot_resource_class', 'pinned', 'in_use', 'links')
"""What the API shows of a hold (from 1.6) beyond its events' payload."""
HOLDS_VERSION = {'OpenStack-API-Version': 'baremetal-reservation 1.6'}


class _Endpoint:
    """oslo.messaging calls the method named after the priority."""

    def __init__(self, received):
        self.received = received

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.received.put(('info', publisher_id, event_type, payload))

    def warn(self, ctxt, publisher_id, event_type, payload, metadata):
        self.received.put(('warn', publisher_id, event_type, payload))

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        self.received.put(('error', publisher_id, event_type, payload))


class RabbitListener(fixtures.Fixture):
    """A consumer of a topic of our own on the real RabbitMQ."""

    def _setUp(self):
        self.topic = 'reserveapi-test-%s' % uuid.uuid4().hex[:12]
        self.received = queue.Queue()
        self.buffered = collections.defaultdict(list)
        transport = oslo_messaging.get_notification_transport(
            cfg.ConfigOpts(), url=TRANSPORT_URL)
        self.addCleanup(transport.cleanup)
        listener = oslo_messaging.get_notification_listener(
            transport, [oslo_messaging.Target(topic=self.topic)],
            [_Endpoint(self.received)], executor='threading')
        listener.start()
        self.addCleanup(self._delete_queues)
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)

    def _delete_queues(self):
        url = TRANSPORT_URL.replace('rabbit://', 'amqp://', 1)
        with kombu.Connection(url) as broker:
            channel = broker.channel()
            for priority in ('info', 'warn', 'error'):
                channel.queue_delete('%s.%s' % (self.topic, priority))

    def take(self, event_type, count=1):
        """``count`` events of ``event_type`` (without the prefix), in
        order: ``[(priority, publisher, payload)]``. Others are kept for
        later calls."""
        event_type = PREFIX + event_type
        deadline = time.monotonic() + TIMEOUT
        while len(self.buffered[event_type]) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError('%d of %d %s received in %d s; also '
                                     'received: %s' % (
                                         len(self.buffered[event_type]),
                                         count, event_type, TIMEOUT,
                                         sorted(self.buffered)))
            try:
                priority, publisher, got_type, payload = (
                    self.received.get(timeout=left))
            except queue.Empty:
                continue
            self.buffered[got_type].append((priority, publisher, payload))
        taken = self.buffered[event_type][:count]
        del self.buffered[event_type][:count]
        return taken

    def drain(self, seconds):
        """Keep whatever arrives within ``seconds`` for later calls
        (events are sent in order, but a threading listener may hand
        over two close ones out of order)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                priority, publisher, got_type, payload = (
                    self.received.get(timeout=left))
            except queue.Empty:
                break
            self.buffered[got_type].append((priority, publisher, payload))


def use_notifications(test, transport_url, topic='unused'):
    """Notifications on, sent to ``transport_url``, by a fresh sender."""
    for group, opts in messaging_opts.list_opts():
        if group == notifications.GROUP:
            conf.CONF.register_opts(opts, group=group)
    conf_fixture = test.useFixture(config_fixture.Config(conf.CONF))
    conf_fixture.config(group=notifications.GROUP, driver=['messagingv2'],
                        transport_url=transport_url, topics=[topic])
    test.useFixture(fixtures.MockPatchObject(notifications, '_sender',
                                             None))


def utc(value):
    return value.replace(tzinfo=datetime.timezone.utc).isoformat()


class EventAssertions:

    def event(self, event_type, priority='info'):
        ((got_priority, publisher, payload),) = self.listener.take(
            event_type)
        self.assertEqual(priority, got_priority, event_type)
        self.assertEqual('baremetal-reservation.%s' % socket.gethostname(),
                         publisher)
        return payload

    def assertReservationPayload(self, reservation, payload, **extra):
        """The payload is the reservation as the API showed it."""
        self.assertEqual(sorted(RESERVATION_FIELDS + tuple(extra)),
                         sorted(payload))
        for field in RESERVATION_FIELDS:
            self.assertEqual(reservation[field], payload[field], field)
        for field, value in extra.items():
            self.assertEqual(value, payload[field], field)


class TestReservationEvents(EventAssertions,
                            reservation_base.ReservationTestCase):

    def setUp(self):
        super().setUp()
        self.listener = self.useFixture(RabbitListener())
        use_notifications(self, TRANSPORT_URL, self.listener.topic)
        self.nodes(inventory.node('node-gold-1'),
                   inventory.node('node-gold-2'))

    def get(self, reservation_uuid):
        return self.request('GET', '/v1/reservations/' + reservation_uuid
                            ).json

    def patch(self, reservation_uuid, path, value):
        response = self.request(
            'PATCH', '/v1/reservations/' + reservation_uuid,
            [{'op': 'replace', 'path': path, 'value': value}])
        self.assertEqual(200, response.status_int, response.text)
        return response.json

    def test_inventory_sync_counts(self):
        self.assertEqual({'source': 'file', 'full': True, 'added': 2,
                          'updated': 0, 'unchanged': 0, 'removed': 0,
                          'flagged': 0},
                         self.event('inventory.sync'))

    def test_created_confirmed_taken_over_released(self):
        created = self.reserve().json
        payload = self.event('reservation.create')
        self.assertReservationPayload(created, payload)
        self.assertEqual('reserved', payload['state'])

        confirmed = self.patch(created['uuid'], '/state', 'active')
        self.assertReservationPayload(
            confirmed, self.event('reservation.confirm'))
        self.assertEqual('active', confirmed['state'])

        moved = self.patch(created['uuid'], '/host',
                           reservation_base.NEW_HOST)
        self.assertReservationPayload(
            moved, self.event('reservation.takeover'),
            previous_host=reservation_base.HOST)

        self.release(created['uuid'])
        self.assertReservationPayload(moved,
                                      self.event('reservation.release'))

    def test_a_host_taken_over(self):
        first = self.reserve().json['uuid']
        second = self.reserve().json['uuid']
        reservations.take_over(reservation_base.HOST,
                               reservation_base.NEW_HOST, force=True)
        events = self.listener.take('reservation.takeover', count=2)
        for (priority, _publisher, payload), uuid_ in zip(
                sorted(events, key=lambda event: event[2]['uuid']),
                sorted((first, second)), strict=True):
            self.assertEqual('info', priority)
            self.assertReservationPayload(
                self.get(uuid_), payload,
                previous_host=reservation_base.HOST)

    def test_expired(self):
        made = {self.reserve().json['uuid'] for _ in range(2)}
        self.config(group='reservations', reserved_ttl=60)
        now = timeutils.utcnow() + datetime.timedelta(seconds=120)
        self.assertEqual(2, reservations.expire(now=now))
        events = self.listener.take('reservation.expire', count=2)
        self.assertEqual(made, {payload['uuid'] for _p, _s, payload in events})
        for priority, _publisher, payload in events:
            self.assertEqual('info', priority)
            shown = self.get(payload['uuid'])
            self.assertEqual('expired', shown['state'])
            self.assertReservationPayload(
                shown, payload, expires_at=shown['expires_at'],
                reserved_ttl=60)

    def test_released_as_orphan(self):
        orphan = self.reserve().json

        class DeletedInNova:
            def server_uuids(self, host):
                return set()

            def deleted_at(self, instance_uuid):
                return nova_peer.LONG_AGO

        self.useFixture(fixtures.MockPatchObject(
            nova_peer, 'NovaClient', DeletedInNova))
        self.assertEqual([orphan['uuid']], [
            found.reservation.uuid for found in reservations.release_orphans(
                now=timeutils.utcnow() + datetime.timedelta(days=1))])
        self.assertReservationPayload(
            orphan, self.event('reservation.release_orphan', 'warn'))

    def test_ironic_claim_conflict(self):
        class IronicTakesTheFirstNode:
            claims = []

            def claim(self, node_uuid, instance_uuid, info):
                self.claims.append(node_uuid)
                if len(self.claims) == 1:
                    raise exception.NodeTaken('node %s is locked by '
                                              'another instance' % node_uuid)

        source = IronicTakesTheFirstNode()
        self.useFixture(fixtures.MockPatchObject(
            lifecycle, 'claiming_source', lambda: source))
        instance = str(uuid.uuid4())
        created = self.reserve(instance_uuid=instance).json
        refused = source.claims[0]
        self.assertNotEqual(refused, created['node_uuid'])
        self.assertEqual(
            {'instance_uuid': instance, 'host': reservation_base.HOST,
             'node_uuid': refused,
             'node_name': {inventory.node_uuid(name): name for name in (
                 'node-gold-1', 'node-gold-2')}[refused],
             'reason': 'node %s is locked by another instance' % refused},
            self.event('ironic.claim_conflict', 'warn'))
        self.assertReservationPayload(created,
                                      self.event('reservation.create'))


def _moment(**delta):
    """Now (UTC, to the second) moved by ``delta``, as the API takes it."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    return (now + datetime.timedelta(**delta)).isoformat()


class TestHoldEvents(EventAssertions, reservation_base.ReservationTestCase):
    """``/v1/holds`` (microversion 1.6): admitted, changed, cancelled
    once."""

    def setUp(self):
        super().setUp()
        self.listener = self.useFixture(RabbitListener())
        use_notifications(self, TRANSPORT_URL, self.listener.topic)
        self.nodes(*[inventory.node('node-gold-%d' % number)
                     for number in range(1, 4)])

    def call(self, method, path, body=None, status=200):
        response = self.request(method, path, body, headers=dict(
            self.admin_headers, **HOLDS_VERSION))
        self.assertEqual(status, response.status_int, response.text)
        return response

    def admit(self, amount=2, hours=3):
        """POST a hold of the api-ref's spec, starting in ``hours``."""
        request = examples.sample('holds/create-request.json')
        return self.call('POST', '/v1/holds', {
            'project_id': request['project_id'], 'amount': amount,
            'request_spec': request['request_spec'],
            'start': _moment(hours=hours), 'end': _moment(hours=hours + 24),
        }, status=201).json

    def show(self, hold_uuid):
        return self.call('GET', '/v1/holds/' + hold_uuid).json

    def assertHoldPayload(self, hold, payload, **extra):
        """The payload is the hold as the API showed it, in its order,
        without what only the API shows; then ``extra``."""
        self.assertEqual(list(HOLD_FIELDS) + list(HOLD_API_ONLY), list(hold))
        self.assertEqual(list(HOLD_FIELDS) + list(extra), list(payload))
        self.assertEqual(
            dict({field: hold[field] for field in HOLD_FIELDS}, **extra),
            payload)

    def test_created_updated_cancelled_once(self):
        created = self.admit()
        payload = self.event('hold.create')
        self.assertHoldPayload(created, payload)
        self.assertEqual(('pending', 2, None),
                         (payload['state'], payload['amount'],
                          payload['cancelled_at']))

        path = '/v1/holds/' + created['uuid']
        new_end = _moment(hours=28)
        updated = self.call('PATCH', path, {'end': new_end, 'amount': 3}).json
        payload = self.event('hold.update')
        self.assertHoldPayload(updated, payload,
                               previous_end=created['end'],
                               previous_amount=2)
        self.assertEqual((new_end, 3), (payload['end'], payload['amount']))
        self.assertIsNotNone(payload['updated_at'])
        # A PATCH that changes nothing sends nothing.
        self.assertEqual(updated, self.call(
            'PATCH', path, {'end': new_end, 'amount': 3}).json)

        self.call('DELETE', path, status=204)
        cancelled = self.show(created['uuid'])
        self.assertEqual('cancelled', cancelled['state'])
        payload = self.event('hold.cancel')
        self.assertHoldPayload(cancelled, payload)
        self.assertEqual('cancelled', payload['state'])
        self.assertIsNotNone(payload['cancelled_at'])

        # Cancelled already: a second DELETE answers the same and sends
        # nothing. The next hold's event comes after anything it sent.
        self.call('DELETE', path, status=204)
        self.assertEqual(cancelled, self.show(created['uuid']))
        after = self.admit(amount=1, hours=40)
        self.assertEqual(after['uuid'], self.event('hold.create')['uuid'])
        self.listener.drain(1)
        for event_type in ('hold.create', 'hold.update', 'hold.cancel'):
            self.assertEqual([], self.listener.buffered[PREFIX + event_type],
                             event_type)

    def test_a_hold_not_admitted_sends_nothing(self):
        request = examples.sample('holds/create-request.json')
        refused = self.request('POST', '/v1/holds', {
            'project_id': request['project_id'], 'amount': 4,
            'request_spec': request['request_spec'],
            'start': _moment(hours=3), 'end': _moment(hours=27),
        }, headers=dict(self.admin_headers, **HOLDS_VERSION))
        self.assertError(refused, 409, 'reserveapi.hold_not_admitted')
        # Then one that fits: its event is the first of any hold's.
        admitted = self.admit(amount=3)
        self.assertEqual(admitted['uuid'],
                         self.event('hold.create')['uuid'])
        self.listener.drain(1)
        self.assertEqual([], self.listener.buffered[PREFIX + 'hold.create'])


class TestIronicEvents(EventAssertions, reservation_base.ReservationTestCase):

    def setUp(self):
        super().setUp()
        self.listener = self.useFixture(RabbitListener())
        use_notifications(self, TRANSPORT_URL, self.listener.topic)

    def test_unreachable_then_back(self):
        inventory_sync.note_outage(exception.IronicUnavailable(
            reason='connection refused'))
        self.assertEqual({'reason': 'Ironic is unavailable: connection '
                                    'refused'},
                         self.event('ironic.unreachable', 'error'))
        # Once per outage.
        inventory_sync.note_outage(exception.IronicUnavailable(
            reason='connection refused'))

        class IronicBack:
            location = 'http://ironic.example.com:6385'

            def newest_change(self):
                return timeutils.utcnow()

            def full_pages(self):
                return iter(())

        self.config(group='inventory', source='ironic')
        self.useFixture(fixtures.MockPatchObject(
            inventory_sources, 'ironic_source', IronicBack))
        inventory_sync.sync(full=True)
        back = self.event('ironic.reachable')
        self.assertEqual(['unreachable_since'], list(back))
        self.assertLess(timeutils.parse_isotime(back['unreachable_since']),
                        timeutils.utcnow(True))
        self.assertEqual({'source': 'ironic', 'full': True, 'added': 0,
                          'updated': 0, 'unchanged': 0, 'removed': 0,
                          'flagged': 0}, self.event('inventory.sync'))
        self.assertEqual([], self.listener.buffered[
            PREFIX + 'ironic.unreachable'])


class TestMirrorEvents(EventAssertions, mirror_base.MirrorAPITestCase):

    def setUp(self):
        super().setUp()
        self.listener = self.useFixture(RabbitListener())
        use_notifications(self, TRANSPORT_URL, self.listener.topic)
        self.config(group='notifications', mirror_pending_attempts=2)

    def test_applied_at_once(self):
        self.placement.create_provider('compute-1')
        self.assertEqual(200, self.add_host('compute-1').status_int)
        self.assertEqual(
            {'aggregate_uuid': self.aggregate, 'host': 'compute-1',
             'action': 'join', 'failed_attempts': 0,
             'pending_since': utc(self.now())},
            self.event('aggregate.apply'))

    def test_pending_after_attempts_then_applied(self):
        self.assertEqual(202, self.add_host('compute-2').status_int)
        self.time.advance_time_seconds(3600)
        self.assertEqual((0, 1), mirror_state.retry_pending())
        pending = self.event('aggregate.pending', 'warn')
        self.assertEqual(
            {'aggregate_uuid': self.aggregate, 'host': 'compute-2',
             'action': 'join', 'failed_attempts': 2},
            {key: pending[key] for key in (
                'aggregate_uuid', 'host', 'action', 'failed_attempts')})
        self.assertIn('compute-2', pending['last_error'])
        # Once: not again at the third failure.
        self.time.advance_time_seconds(3600)
        self.assertEqual((0, 1), mirror_state.retry_pending())
        self.placement.create_provider('compute-2')
        self.time.advance_time_seconds(3600)
        self.assertEqual((1, 0), mirror_state.retry_pending())
        applied = self.event('aggregate.apply')
        self.assertEqual(('join', 3), (applied['action'],
                                       applied['failed_attempts']))
        self.assertEqual([], self.listener.buffered[
            PREFIX + 'aggregate.pending'])


def _median(values):
    values = sorted(values)
    return values[len(values) // 2]


class TestBrokerDown(reservation_base.ReservationTestCase):
    """The API answers as fast with the broker down or hung as with
    notifications off: events wait in the bounded queue, then are
    dropped."""

    ROUNDS = 15

    def setUp(self):
        super().setUp()
        self.nodes(*[inventory.node('node-gold-%d' % index)
                     for index in range(3)])

    def timed_rounds(self):
        """Seconds each POST + DELETE took."""
        took = []
        for _round in range(self.ROUNDS):
            started = time.monotonic()
            response = self.reserve()
            self.assertEqual(201, response.status_int, response.text)
            self.release(response.json['uuid'])
            took.append(time.monotonic() - started)
        return took

    def hung_broker(self):
        """A port that accepts connections and never answers."""
        server = socket.socket()
        self.addCleanup(server.close)
        server.bind(('127.0.0.1', 0))
        server.listen(16)
        return server.getsockname()[1]

    def assertNotSlower(self, port):
        """The POSTs and DELETEs with the broker at ``port``, against
        notifications off; the sender."""
        baseline = self.timed_rounds()
        use_notifications(self, 'rabbit://guest:guest@127.0.0.1:%d/' % port)
        self.config(group='notifications', queue_size=4)
        down = self.timed_rounds()
        self.addDetail('timings', testtools.content.text_content(
            'POST + DELETE, median of %d: %.3f s notifications off, %.3f s '
            'broker not answering; slowest %.3f s' % (
                self.ROUNDS, _median(baseline), _median(down), max(down))))
        self.assertLess(_median(down), 2 * _median(baseline) + 0.1)
        self.assertLess(max(down), max(baseline) + 1.0)
        return notifications._sender

    def test_broker_down(self):
        # oslo.messaging gives up on a refused connection at once (and
        # logs the event it could not send): nothing piles up. On a busy
        # machine the small queue may still drop one now and then: never
        # waited for.
        sender = self.assertNotSlower(loopback.free_port())
        self.assertTrue(sender.flush(timeout=TIMEOUT))

    def test_broker_hung(self):
        # A broker that accepts and never answers holds the sender: the
        # queue fills (4) and the rest of the events (2 a round) are
        # dropped, never waited for.
        sender = self.assertNotSlower(self.hung_broker())
        self.assertEqual(4, sender.queue.maxsize)
        self.assertGreaterEqual(sender.dropped, 2 * self.ROUNDS - 4 - 1)
        self.assertFalse(sender.flush(timeout=0.5))
