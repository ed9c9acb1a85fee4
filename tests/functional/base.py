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

"""Database test bases on SQLite and, opportunistically, on PostgreSQL
and MariaDB/MySQL, in oslo.db's style.

The opportunistic backends need the ``openstack_citest`` user and
database oslo.db expects; without them those tests skip, unless
RESERVEAPI_TEST_REQUIRE_DB_BACKENDS is set (as .ci/run does), which
turns the skip into a failure.
"""

import json
import os
import re
import urllib.parse

import fixtures
from keystonemiddleware import auth_token
from oslo_db.sqlalchemy import provision
from oslo_db.sqlalchemy import test_fixtures
import sqlalchemy as sa
import webtest

from reserveapi.api import app
from reserveapi.common import heartbeat
from reserveapi.db import base as db_base
from reserveapi.db import migration
from reserveapi.db import models
from reserveapi.holds import admission
from tests import base

REQUIRE_BACKENDS_ENV = 'RESERVEAPI_TEST_REQUIRE_DB_BACKENDS'
PROJECT_ID = 'c0ffee00c0ffee00c0ffee00c0ffee00'
REAL_AUTH_PROTOCOL = auth_token.AuthProtocol


class _MigratedSchema(test_fixtures.GeneratesSchemaFromMigrations,
                      test_fixtures.DeletesFromSchema):
    """One schema per backend, built by our migrations, emptied per test.

    The engines are made by the service's own enginefacade, so that they
    are set up as in production (``reserveapi.db.backends``).
    """

    def get_enginefacade(self):
        return db_base.main_context_manager

    def get_per_test_enginefacade(self):
        return db_base.main_context_manager

    def generate_schema_migrations(self, engine):
        migration.upgrade(engine=engine)

    def delete_from_schema(self, engine):
        # The summary's counters last: deleting nodes adds to them.
        counters = {models.CapacityCounter.__table__,
                    models.FreeTraitCounter.__table__,
                    models.CpuArchCounter.__table__}
        tables = [table for table in reversed(
            models.Base.metadata.sorted_tables) if table not in counters]
        with engine.begin() as connection:
            for table in tables + sorted(counters, key=str):
                connection.execute(table.delete())


_WHY_UNAVAILABLE = {}


def why_unavailable(driver, reason):
    """oslo.db's skip reason ("Could not connect"), with what the server
    said: a running server that refuses the ``openstack_citest`` user is
    not a missing server. Asked once per backend and process.
    """
    if driver not in _WHY_UNAVAILABLE:
        url = provision.Backend.backends_by_database_type[driver].url
        engine = sa.create_engine(url)
        try:
            engine.connect().close()
            said = None
        except sa.exc.DBAPIError as exc:
            said = (str(exc.orig).strip().splitlines() or [''])[0]
        except ImportError as exc:
            said = 'no driver: %s' % exc
        finally:
            engine.dispose()
        _WHY_UNAVAILABLE[driver] = said
    said = _WHY_UNAVAILABLE[driver]
    return '%s (%s%s)' % (reason, 'the server said: %s; ' % said if said
                          else '', 'tools/ensure-test-databases.sh starts '
                          'the local servers and creates the '
                          'openstack_citest user and database')


class Opportunistic:
    """A fixture's mixin: the skip reason says why, and the fix."""

    def _get_db_resource_not_available_reason(self):
        return why_unavailable(
            self.DRIVER, super()._get_db_resource_not_available_reason())


class MySQLOpportunisticFixture(Opportunistic,
                                test_fixtures.MySQLOpportunisticFixture):
    pass


class PostgresqlOpportunisticFixture(
        Opportunistic, test_fixtures.PostgresqlOpportunisticFixture):
    pass


class SQLiteFixture(_MigratedSchema, test_fixtures.OpportunisticDbFixture):
    pass


class MySQLFixture(_MigratedSchema, MySQLOpportunisticFixture):
    pass


class PostgresqlFixture(_MigratedSchema, PostgresqlOpportunisticFixture):
    pass


# testscenarios variants of a DBTestCase, one per backend; the backend
# names end the test ids ("test_x(PostgreSQL)"), which .ci/run counts.
SQLITE = ('SQLite', {'FIXTURE': SQLiteFixture})
POSTGRESQL = ('PostgreSQL', {'FIXTURE': PostgresqlFixture})
MYSQL = ('MySQL', {'FIXTURE': MySQLFixture})
EVERY_BACKEND = [SQLITE, POSTGRESQL, MYSQL]
# Where several connections really race: not SQLite, whose test database
# is one shared connection.
SERVER_BACKENDS = [POSTGRESQL, MYSQL]


class _ThreadlessHeartbeat(heartbeat.Heartbeat):
    """A lease's heartbeat without its thread, for SQLite's test database:
    one connection that two threads must not write on at once. A lease
    stays held for the whole test."""

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        pass

    def held(self):
        return True


class DBTestCase(test_fixtures.OpportunisticDBTestMixin, base.TestCase):
    """Runs on SQLite; ``scenarios = EVERY_BACKEND`` (or another list of
    backends) runs a class on each.
    """

    FIXTURE = SQLiteFixture
    SKIP_ON_UNAVAILABLE_DB = not os.environ.get(REQUIRE_BACKENDS_ENV)

    def setUp(self):
        super().setUp()
        # Each test has a database of its own.
        admission.forget_quiet()
        self.addCleanup(admission.forget_quiet)
        if self.engine.dialect.name == 'sqlite':
            self.useFixture(fixtures.MockPatchObject(
                heartbeat, 'Heartbeat', _ThreadlessHeartbeat))

    @property
    def engine(self):
        return db_base.get_engine()


class APITestCase(DBTestCase):
    """The real WSGI app, middleware included, over webtest.

    ``auth_strategy`` is keystone with auth_token replaced by a pass-through
    that trusts the X-Roles/X-Project-Id headers, so that policy is really
    enforced; ``admin_headers`` and ``headers_for`` build them.
    """

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'keystonemiddleware.auth_token.AuthProtocol',
            lambda app, conf: app))
        self.app = webtest.TestApp(app.setup_app())

    @staticmethod
    def headers_for(roles, project_id=PROJECT_ID):
        return {'X-Roles': ','.join(roles), 'X-Project-Id': project_id,
                'X-User-Id': 'user', 'X-Identity-Status': 'Confirmed'}

    @property
    def admin_headers(self):
        return self.headers_for(['admin', 'member', 'reader'])

    @property
    def service_headers(self):
        return self.headers_for(['service'], project_id='service')

    def request(self, method, path, body=None, headers=None, status=None):
        headers = dict(self.admin_headers if headers is None else headers)
        kwargs = {'headers': headers, 'status': status or '*'}
        if body is not None:
            return getattr(self.app, method.lower() + '_json')(
                path, body, **kwargs)
        return getattr(self.app, method.lower())(path, **kwargs)

    def assertError(self, response, status, code):
        """The API-WG error body, with our request id and a stable code."""
        self.assertEqual(status, response.status_int, response.text)
        self.assertEqual('application/json', response.content_type)
        (error,) = response.json['errors']
        self.assertEqual(status, error['status'])
        self.assertEqual(code, error['code'])
        self.assertTrue(error['title'])
        self.assertTrue(error['detail'])
        self.assertEqual(response.headers['x-openstack-request-id'],
                         error['request_id'])
        return error

    def assertMatchesSample(self, actual, sample):
        """``actual`` has the shape and fixed values of an api-ref sample.

        Values that differ per run (uuids, timestamps, request ids, link
        hosts) must have the same form as in the sample; everything else
        must be equal.
        """
        with open(os.path.join(SAMPLES_DIR, sample)) as sample_file:
            expected = json.load(sample_file)
        _assert_same_shape(self, expected, actual, sample)


SAMPLES_DIR = os.path.join(os.path.dirname(__file__), '..', '..', 'api-ref',
                           'source', 'samples')
_VARIABLE_FORMS = (
    re.compile(r'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
               r'[0-9a-f]{12}$'),
    re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$'),
    re.compile(r'^req-[0-9a-f-]{36}$'),
    # A hold's own resource class: its uuid's hex.
    re.compile(r'^CUSTOM_HOLD_[0-9A-F]{32}$'),
)
_UUID_IN_PATH = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-'
                           r'[0-9a-f]{4}-[0-9a-f]{12}')


def _assert_same_shape(test, expected, actual, path):
    if isinstance(expected, dict):
        test.assertIsInstance(actual, dict, path)
        test.assertEqual(sorted(expected), sorted(actual), path)
        for key in expected:
            _assert_same_shape(test, expected[key], actual[key],
                               '%s.%s' % (path, key))
    elif isinstance(expected, list):
        test.assertIsInstance(actual, list, path)
        test.assertEqual(len(expected), len(actual), path)
        pairs = zip(expected, actual, strict=True)
        for index, (item, other) in enumerate(pairs):
            _assert_same_shape(test, item, other, '%s[%d]' % (path, index))
    elif isinstance(expected, str) and expected.startswith('http'):
        # Same path, but any uuid in it (a resource's own link) may vary.
        test.assertIsInstance(actual, str, path)
        test.assertEqual(
            _UUID_IN_PATH.sub('<uuid>', urllib.parse.urlsplit(expected).path),
            _UUID_IN_PATH.sub('<uuid>', urllib.parse.urlsplit(actual).path),
            path)
    elif isinstance(expected, str) and any(
            form.match(expected) for form in _VARIABLE_FORMS):
        form = next(f for f in _VARIABLE_FORMS if f.match(expected))
        test.assertIsInstance(actual, str, path)
        test.assertRegex(actual, form, path)
    else:
        test.assertEqual(expected, actual, path)
