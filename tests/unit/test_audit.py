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

"""The audit map names every route's action and target as the admin
guide says (a new route fails here until it is mapped), and a map that
cannot be used stops the API at start-up in one line. The events
themselves are read from RabbitMQ in tests/notifications/test_audit.py.
"""

import json
import os
import pathlib

import fixtures
from keystonemiddleware import audit
import webob

from reserveapi.api import app
from reserveapi.api import routes
from reserveapi.common import exception
from tests import base

AUDIT_MAP = (pathlib.Path(__file__).resolve().parents[2] / 'etc'
             / 'reserveapi' / 'api_audit_map.conf')
SERVICE = 'service/compute/baremetal-reservation'
CATALOG = json.dumps([{'type': 'baremetal-reservation', 'name': 'reserveapi',
                       'endpoints': [{'publicURL': 'http://api:6390'}]}])
# Route: (CADF action, target typeURI after the service's).
EXPECTED = {
    ('GET', '/'): ('read', ''),
    ('GET', '/v1'): ('read', ''),
    ('GET', '/v1/aggregates'): ('read/list', '/aggregates'),
    ('POST', '/v1/aggregates/sync'): ('update/sync', '/aggregates/sync'),
    ('GET', '/v1/aggregates/{aggregate_uuid}'): (
        'read', '/aggregates/aggregate'),
    ('DELETE', '/v1/aggregates/{aggregate_uuid}'): (
        'delete', '/aggregates/aggregate'),
    ('PUT', '/v1/aggregates/{aggregate_uuid}/hosts/{host}'): (
        'update', '/aggregates/aggregate/hosts/host'),
    ('DELETE', '/v1/aggregates/{aggregate_uuid}/hosts/{host}'): (
        'delete', '/aggregates/aggregate/hosts/host'),
    ('POST', '/v1/candidates'): ('read/query', '/candidates'),
    ('GET', '/v1/capacity'): ('read/list', '/capacity'),
    ('GET', '/v1/holds'): ('read/list', '/holds'),
    ('POST', '/v1/holds'): ('create', '/holds'),
    ('GET', '/v1/holds/{hold_uuid}'): ('read', '/holds/hold'),
    ('PATCH', '/v1/holds/{hold_uuid}'): ('update', '/holds/hold'),
    ('DELETE', '/v1/holds/{hold_uuid}'): ('delete', '/holds/hold'),
    ('GET', '/v1/nodes'): ('read/list', '/nodes'),
    ('GET', '/v1/nodes/{node_ident}'): ('read', '/nodes/node'),
    ('GET', '/v1/reservations'): ('read/list', '/reservations'),
    ('POST', '/v1/reservations'): ('create', '/reservations'),
    ('GET', '/v1/reservations/{reservation_uuid}'): (
        'read', '/reservations/reservation'),
    ('PATCH', '/v1/reservations/{reservation_uuid}'): (
        'update', '/reservations/reservation'),
    ('DELETE', '/v1/reservations/{reservation_uuid}'): (
        'delete', '/reservations/reservation'),
}


class TestAuditMap(base.TestCase):

    def test_every_route_is_mapped(self):
        mapping = audit.OpenStackAuditApi(str(AUDIT_MAP))
        found = {}
        for route in routes.routes():
            path = route.template.format(
                aggregate_uuid='6a2c0e4b-3f1d-4b8a-9c7e-2d5f1a3b8e90',
                host='compute-1', node_ident='node-gold-1',
                hold_uuid='5e8a1c3f-2b4d-4f6a-8c9e-1a3b5d7f9e20',
                reservation_uuid='0b7d3c52-8e4f-4a61-b2d9-7c1e5f3a9d08')
            request = webob.Request.blank(
                path, method=route.method,
                environ={'HTTP_X_SERVICE_CATALOG': CATALOG})
            target = mapping.get_target_resource(request)
            self.assertEqual('reserveapi', target.id)
            found[(route.method, route.template)] = (
                mapping.get_action(request),
                target.typeURI.removeprefix(SERVICE))
        self.assertEqual(EXPECTED, found)


class TestAuditAtStartup(base.TestCase):

    def setUp(self):
        super().setUp()
        self.directory = self.useFixture(fixtures.TempDir()).path

    def refusal(self, audit_map_file):
        self.config(group='audit', enabled=True,
                    audit_map_file=audit_map_file)
        error = self.assertRaises(exception.ConfigurationError,
                                  app.check_audit_at_startup)
        self.assertNotIn('\n', str(error))
        return str(error)

    def test_off_by_default_needs_no_map(self):
        self.config(group='audit', audit_map_file='nowhere.conf')
        self.assertFalse(app.CONF.audit.enabled)
        self.assertEqual(['GET', 'HEAD'], app.CONF.audit.ignore_req_list)
        app.check_audit_at_startup()

    def test_the_shipped_map(self):
        self.config(group='audit', enabled=True,
                    audit_map_file=str(AUDIT_MAP))
        app.check_audit_at_startup()

    def test_found_beside_the_configuration_file(self):
        config_file = os.path.join(self.directory, 'reserveapi.conf')
        with open(config_file, 'w'):
            pass
        with open(os.path.join(self.directory, 'api_audit_map.conf'),
                  'w') as audit_map:
            audit_map.write(AUDIT_MAP.read_text())
        app.CONF(['--config-file', config_file], project='reserveapi')
        self.config(group='audit', enabled=True)
        self.assertEqual(audit_map.name, app._audit_map_file())

    def test_missing(self):
        self.assertEqual(
            '[audit] audit_map_file nowhere.conf is not found (as a path, '
            'nor beside the configuration files, nor in the configuration '
            'directories), and [audit] enabled is true. Copy '
            'etc/reserveapi/api_audit_map.conf there, or set [audit] '
            'enabled = false.', self.refusal('nowhere.conf'))

    def test_a_directory(self):
        self.assertEqual(
            '[audit] audit_map_file %s cannot be read, and [audit] enabled '
            "is true: [Errno 21] Is a directory: '%s'" % (
                self.directory, self.directory),
            self.refusal(self.directory))

    def test_not_a_map(self):
        path = os.path.join(self.directory, 'api_audit_map.conf')
        with open(path, 'w') as audit_map:
            audit_map.write('[path_keywords]\nreservations\n')
        self.assertTrue(self.refusal(path).startswith(
            '[audit] audit_map_file %s cannot be read, and [audit] enabled '
            'is true: Error parsing audit map file: ' % path))
