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

"""The CADF events of keystonemiddleware's audit middleware ([audit]
enabled), as a consumer of the real RabbitMQ receives them: who wrote
what, and how it ended; and an API that cannot find its audit map does
not start.
"""

import http.client
import json
import pathlib
import queue
import shutil
import time
import uuid

import fixtures
from keystonemiddleware import audit
import oslo_messaging
from oslotest import base
import webtest

from reserveapi.api import app
from reserveapi_testing import deployment
from reserveapi_testing import inventory
from tests.functional.api import reservation_base
from tests.notifications import test_events

AUDIT_MAP = str(pathlib.Path(__file__).resolve().parents[2] / 'etc'
                / 'reserveapi' / 'api_audit_map.conf')
SERVICE = 'service/compute/baremetal-reservation'
USER = uuid.uuid4().hex
# auth_token's X-Service-Catalog: the token's catalog, in the v2 form.
CATALOG = [{'type': 'baremetal-reservation', 'name': 'reserveapi',
            'endpoints': [{'region': 'RegionOne',
                           'publicURL': 'https://reserve.example.com:6390',
                           'internalURL': 'http://controller:6390'}]}]


def audit_to(test, topic, transport_url=test_events.TRANSPORT_URL):
    """[audit] enabled, its events sent to ``topic``; each transport the
    middleware opens is closed after the test."""
    test.config(group='audit', enabled=True, audit_map_file=AUDIT_MAP)
    test.config(group=audit.AUDIT_MIDDLEWARE_GROUP,
                driver='messagingv2', transport_url=transport_url,
                topics=[topic])
    opened = oslo_messaging.get_notification_transport

    def get_notification_transport(*args, **kwargs):
        transport = opened(*args, **kwargs)
        test.addCleanup(transport.cleanup)
        return transport

    test.useFixture(fixtures.MockPatchObject(
        oslo_messaging, 'get_notification_transport',
        get_notification_transport))


def audit_events(listener, count):
    """The next ``count`` messages of the listener's topic, in the order
    sent: ``[(event_type, payload)]``."""
    events = []
    deadline = time.monotonic() + test_events.TIMEOUT
    while len(events) < count:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError('%d of %d audit events received in %d s: '
                                 '%s' % (len(events), count,
                                         test_events.TIMEOUT, events))
        try:
            priority, _publisher, event_type, payload = (
                listener.received.get(timeout=left))
        except queue.Empty:
            continue
        if priority != 'info':
            raise AssertionError('%s sent at %s' % (event_type, priority))
        events.append((event_type, payload))
    return events


class TestAuditEvents(reservation_base.ReservationTestCase):
    """The API in process, behind the test base's stand-in for auth_token
    (which passes on the identity headers auth_token sets)."""

    def setUp(self):
        super().setUp()
        self.listener = self.useFixture(test_events.RabbitListener())
        audit_to(self, self.listener.topic)
        self.app = webtest.TestApp(app.setup_app())
        self.nodes(inventory.node('node-gold-1'))

    def identity(self, roles=('admin', 'member', 'reader')):
        """auth_token's headers for a token of USER in the sample project.
        """
        headers = self.headers_for(
            roles, project_id=reservation_base.SAMPLE_PROJECT)
        headers.update({'X-User-Id': USER, 'X-User-Name': 'operator',
                        'X-Service-Catalog': json.dumps(CATALOG)})
        return headers

    def assertEvent(self, event, event_type, action, target_type, path,
                    outcome, status=None, headers=None):
        """One CADF event: the action on which target, by whom, how it
        ended (a response event only)."""
        got_type, payload = event
        self.assertEqual(event_type, got_type)
        self.assertEqual(action, payload['action'])
        self.assertEqual(outcome, payload['outcome'])
        self.assertEqual('activity', payload['eventType'])
        self.assertEqual(path, payload['requestPath'])
        self.assertEqual({'typeURI': SERVICE + target_type,
                          'id': 'reserveapi', 'name': 'reserveapi'},
                         {key: payload['target'][key]
                          for key in ('typeURI', 'id', 'name')})
        initiator = payload['initiator']
        self.assertEqual(('service/security/account/user', USER, 'operator',
                          reservation_base.SAMPLE_PROJECT, 'Confirmed'),
                         (initiator['typeURI'], initiator['id'],
                          initiator['name'], initiator['project_id'],
                          initiator['credential']['identity_status']))
        if headers is not None:
            self.assertEqual(headers['x-openstack-request-id'],
                             initiator['request_id'])
        if status is None:
            self.assertNotIn('reason', payload)
        else:
            self.assertEqual({'reasonType': 'HTTP',
                              'reasonCode': str(status)}, payload['reason'])
        return payload

    def test_reserved_read_released(self):
        created = self.reserve(headers=self.identity())
        self.assertEqual(201, created.status_int, created.text)
        reservation = created.json['uuid']
        shown = self.request('GET', '/v1/reservations/' + reservation,
                             headers=self.identity())
        self.assertEqual(200, shown.status_int, shown.text)
        released = self.request('DELETE', '/v1/reservations/' + reservation,
                                headers=self.identity())
        self.assertEqual(204, released.status_int, released.text)

        # The GET is not audited ([audit] ignore_req_list): the DELETE's
        # events follow the POST's.
        item = '/v1/reservations/' + reservation
        request, response, delete_request, delete_response = audit_events(
            self.listener, 4)
        self.assertEvent(request, 'audit.http.request', 'create',
                         '/reservations', '/v1/reservations', 'pending')
        self.assertEvent(response, 'audit.http.response', 'create',
                         '/reservations', '/v1/reservations', 'success',
                         201, created.headers)
        self.assertEqual(request[1]['id'], response[1]['id'])
        self.assertEvent(delete_request, 'audit.http.request', 'delete',
                         '/reservations/reservation', item, 'pending')
        self.assertEvent(delete_response, 'audit.http.response', 'delete',
                         '/reservations/reservation', item, 'success', 204,
                         released.headers)

    def test_refused_and_failed_writes(self):
        refused = self.reserve(headers=self.identity(roles=('reader',)))
        self.assertEqual(403, refused.status_int, refused.text)
        item = '/v1/reservations/%s' % uuid.uuid4()
        missing = self.request('DELETE', item, headers=self.identity())
        self.assertEqual(404, missing.status_int, missing.text)
        _request, response, _delete, delete_response = audit_events(
            self.listener, 4)
        self.assertEvent(response, 'audit.http.response', 'create',
                         '/reservations', '/v1/reservations', 'failure', 403,
                         refused.headers)
        self.assertEvent(delete_response, 'audit.http.response', 'delete',
                         '/reservations/reservation', item, 'failure', 404,
                         missing.headers)

    def test_taken_over(self):
        reservation = self.reserve(headers=self.identity()).json['uuid']
        moved = self.request(
            'PATCH', '/v1/reservations/' + reservation,
            [{'op': 'replace', 'path': '/host',
              'value': reservation_base.NEW_HOST}], headers=self.identity())
        self.assertEqual(200, moved.status_int, moved.text)
        self.assertEvent(audit_events(self.listener, 4)[3],
                         'audit.http.response', 'update',
                         '/reservations/reservation',
                         '/v1/reservations/' + reservation, 'success', 200,
                         moved.headers)

    def test_every_method_without_ignore_req_list(self):
        self.config(group='audit', ignore_req_list=[])
        self.app = webtest.TestApp(app.setup_app())
        self.request('GET', '/v1/nodes', headers=self.identity())
        self.assertEvent(audit_events(self.listener, 2)[1],
                         'audit.http.response', 'read/list', '/nodes',
                         '/v1/nodes', 'success', 200)


class TestAuditMapAtStartup(base.BaseTestCase):
    """``reserveapi-api`` and the WSGI application as an operator starts
    them: no map, no API; the map beside the configuration file is found
    by its default name."""

    def setUp(self):
        super().setUp()
        self.deployment = self.useFixture(deployment.Deployment())
        self.deployment.migrate()
        self.deployment.config['audit'] = {'enabled': 'true'}
        self.deployment.write_config()
        self.missing = (
            '[audit] audit_map_file api_audit_map.conf is not found (as a '
            'path, nor beside the configuration files, nor in the '
            'configuration directories), and [audit] enabled is true. Copy '
            'etc/reserveapi/api_audit_map.conf there, or set [audit] '
            'enabled = false.')

    def test_the_api_refuses_to_start_with_one_line(self):
        process = self.deployment.run('reserveapi-api')
        self.assertEqual((2, '', [self.missing]),
                         (process.returncode, process.stdout,
                          deployment.not_logged(process.stderr)))

    def test_the_wsgi_application_refuses_to_load(self):
        process = self.deployment.load_wsgi()
        self.assertEqual(3, process.returncode, process.stderr[-2000:])
        critical = [line for line in (process.stdout + process.stderr)
                    .splitlines() if ' CRITICAL reserveapi.wsgi.api ' in line]
        self.assertEqual(1, len(critical), process.stderr[-2000:])
        self.assertTrue(critical[0].endswith(self.missing), critical[0])

    def test_the_map_beside_the_configuration_file(self):
        listener = self.useFixture(test_events.RabbitListener())
        shutil.copy(AUDIT_MAP, self.deployment.path)
        self.deployment.config[audit.AUDIT_MIDDLEWARE_GROUP] = {
            'driver': 'messagingv2',
            'transport_url': test_events.TRANSPORT_URL,
            'topics': listener.topic}
        self.deployment.write_config()
        self.deployment.start_api()
        item = '/v1/reservations/%s' % uuid.uuid4()
        connection = http.client.HTTPConnection(
            '127.0.0.1', self.deployment.port, timeout=30)
        self.addCleanup(connection.close)
        connection.request('DELETE', item, headers={
            'X-User-Id': USER,
            'X-Project-Id': reservation_base.SAMPLE_PROJECT})
        self.assertEqual(404, connection.getresponse().status)
        (_, request_event), (_, response_event) = audit_events(listener, 2)
        self.assertEqual(
            ('delete', 'failure', item, USER,
             reservation_base.SAMPLE_PROJECT),
            (response_event['action'], response_event['outcome'],
             response_event['requestPath'], response_event['initiator']['id'],
             response_event['initiator']['project_id']))
        self.assertEqual(request_event['id'], response_event['id'])
