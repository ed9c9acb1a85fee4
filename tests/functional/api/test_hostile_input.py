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

"""A hostile client, on SQLite, PostgreSQL and MariaDB.

Every route of the API (``hostile.py`` builds the table from the route
table) gets junk paths, wrong methods, bad path parameters, unknown,
repeated and bad query parameters, unwanted and malformed bodies, wrong
media types and charsets, NUL and 4-byte text, huge and nested inputs
and bad microversions. Never a 5xx; every error in the API-WG format
with a detail that names the problem and no internal text; and the
database exactly as it was.
"""

import datetime
import re
import uuid

import microversion_parse
import sqlalchemy as sa

from reserveapi.api import microversion
from reserveapi.db import models
from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.functional import base
from tests.functional.api import hostile

HOST = 'compute-1'
VERSIONS = ('1.0', 'latest')
"""The table is sent at the first and at the newest microversion (but
the requests that send their own), so that fields and parameters a
version adds are attacked both where they are refused and where they
are taken."""
MIN_REQUESTS = 1000
"""The table must not shrink unnoticed (it sends about 1,400)."""
# What a body must never show: SQL, drivers, tracebacks, Python reprs.
INTERNAL = re.compile(
    r'Traceback|File "|sqlalchemy|psycopg|pymysql|sqlite3|\bSELECT\b|'
    r'\bINSERT\b|\bUPDATE\b|DELETE FROM|OperationalError|IntegrityError|'
    r"DataError|<class '|object at 0x|\{'|\['|\bb'|\\x[0-9a-f]{2}|Ã",
    re.IGNORECASE)


class TestHostileInput(base.APITestCase):
    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        self.config(inline_timeout=0, group='mirror')
        inventory.sync(self, [inventory.node('node-1'),
                              inventory.node('node-2'),
                              inventory.node('node-3')])
        response = self.request('POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'host': HOST,
            'request_spec': examples.REQUEST_SPEC})
        self.assertEqual(201, response.status_int, response.text)
        self.reservation = response.json
        self.aggregate = str(uuid.uuid4())
        response = self.request('PUT', '/v1/aggregates/%s/hosts/%s'
                                % (self.aggregate, HOST))
        self.assertEqual(202, response.status_int, response.text)
        # A hold that keeps one node: the third stays free.
        response = self.request('POST', '/v1/holds', self.hold_body(),
                                headers=dict(self.admin_headers, **{
                                    'OpenStack-API-Version':
                                        'baremetal-reservation 1.5'}))
        self.assertEqual(201, response.status_int, response.text)
        self.hold = response.json

    @staticmethod
    def hold_body():
        """A hold of one node in three days (a valid body)."""
        start = (datetime.datetime.now(datetime.timezone.utc)
                 + datetime.timedelta(days=3))
        return {'project_id': base.PROJECT_ID, 'amount': 1,
                'request_spec': examples.REQUEST_SPEC,
                'start': start.isoformat(),
                'end': (start + datetime.timedelta(hours=1)).isoformat(),
                'shard': None, 'conductor_group': ''}

    def values(self):
        return {'reservation_uuid': self.reservation['uuid'],
                'aggregate_uuid': self.aggregate, 'host': HOST,
                'node_ident': 'node-1', 'hold_uuid': self.hold['uuid']}

    def bodies(self, version):
        reservation = {
            'instance_uuid': str(uuid.uuid4()), 'host': 'compute-2',
            'request_spec': examples.REQUEST_SPEC}
        if version != '1.0':
            reservation.update(conductor_group='', shard=None)
        return {
            'POST /v1/reservations': reservation,
            'PATCH /v1/reservations/{reservation_uuid}': [
                {'op': 'replace', 'path': '/state', 'value': 'active'}],
            'POST /v1/aggregates/sync': {
                'aggregates': [{'uuid': self.aggregate,
                                'hosts': [HOST, 'compute-2']}],
                'dry_run': True},
            'POST /v1/candidates': {
                'request_spec': examples.REQUEST_SPEC, 'conductor_group': '',
                'shard': None, 'limit': 1, 'explain': True},
            'POST /v1/holds': self.hold_body(),
            'PATCH /v1/holds/{hold_uuid}': {
                'end': self.hold['end'], 'amount': 1},
        }

    def snapshot(self):
        with self.engine.connect() as connection:
            return {table.name: sorted(
                tuple(str(value) for value in row)
                for row in connection.execute(sa.select(table)))
                for table in models.Base.metadata.sorted_tables}

    def send(self, request, version):
        headers = dict(self.admin_headers)
        headers['OpenStack-API-Version'] = 'reservation ' + version
        headers.update(request.headers)
        if request.content_type is not None:
            headers['Content-Type'] = request.content_type
        return self.app.request(request.path, method=request.method,
                                body=request.body, headers=headers,
                                status='*', expect_errors=True)

    def wrong(self, request, response):
        """Why ``response`` is not an acceptable answer, or None."""
        status = response.status_int
        if status >= 500 or status not in request.statuses:
            return 'status %d' % status
        if INTERNAL.search(response.text):
            return 'internal text: %s' % response.text[:300]
        if status < 400:
            return None
        try:
            (error,) = response.json['errors']
        except (ValueError, KeyError, TypeError):
            return 'not API-WG: %s' % response.text[:300]
        detail = error.get('detail') or ''
        if (error.get('status') != status or not error.get('code')
                or not error.get('title') or not detail):
            return 'incomplete error: %s' % error
        if '\n' in detail or detail.count(error['title']) > 1:
            return 'not one sentence: %s' % detail
        if not any(name.lower() in detail.lower()
                   for name in request.names):
            return 'detail names none of %s: %s' % (request.names, detail)
        return None

    def test_hostile_requests_are_refused_and_change_nothing(self):
        before = self.snapshot()
        wrong = []
        for version in VERSIONS:
            table = hostile.requests(
                self.values(), self.bodies(version),
                microversion.MAX_VERSION if version == 'latest'
                else microversion_parse.parse_version_string(version))
            self.assertGreater(len(table), MIN_REQUESTS)
            for request in table:
                problem = self.wrong(request, self.send(request, version))
                if problem:
                    wrong.append('%s at %s: %s' % (request, version,
                                                   problem))
        self.assertEqual([], wrong)
        self.assertEqual(before, self.snapshot())

    def test_uuids_in_any_case_find_the_same_resource(self):
        reservation = self.reservation['uuid']
        node = inventory.node_uuid('node-1')
        for path in ('/v1/reservations/' + reservation.upper(),
                     '/v1/aggregates/' + self.aggregate.upper(),
                     '/v1/nodes/' + node.upper()):
            response = self.request('GET', path)
            self.assertEqual(200, response.status_int, response.text)
            self.assertIn(path.rsplit('/', 1)[1].lower(), response.text)
        listed = self.request(
            'GET', '/v1/reservations?instance_uuid=%s&node_uuid=%s' % (
                self.reservation['instance_uuid'].upper(),
                self.reservation['node_uuid'].upper())).json['reservations']
        self.assertEqual([reservation], [item['uuid'] for item in listed])
        page = self.request('GET', '/v1/reservations?marker=' +
                            reservation.upper())
        self.assertEqual((200, []), (page.status_int,
                                     page.json['reservations']))

    def test_four_byte_text_is_stored_and_read_back(self):
        host = hostile.EMOJI + '-compute'
        response = self.request('PUT', '/v1/aggregates/%s/hosts/%s' % (
            self.aggregate, hostile.quote(host)))
        self.assertEqual(202, response.status_int, response.text)
        aggregate = self.request('GET', '/v1/aggregates/' + self.aggregate)
        self.assertIn(host, [row['host'] for row in aggregate.json['hosts']])
        response = self.request('POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'host': host,
            'request_spec': examples.REQUEST_SPEC})
        self.assertEqual(201, response.status_int, response.text)
        listed = self.request('GET', '/v1/reservations?host=' +
                              hostile.quote(host)).json['reservations']
        self.assertEqual([host], [item['host'] for item in listed])
