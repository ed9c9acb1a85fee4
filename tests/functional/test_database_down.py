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

"""Database down is a 503, never a 500, and leaves nothing half-done.

With the database unreachable every route answers 503 in the API-WG
format with ``Retry-After``, and ``GET /healthcheck`` says so. Against a
private PostgreSQL or MariaDB server (``reserveapi_testing.dbservers``) that
the tests stop, or kill in the middle of a transaction, whatever was in
flight is rolled back: the data is as it was, and the API works again as
soon as the server is back.
"""

import datetime
import uuid

from oslo_db.sqlalchemy import engines
import sqlalchemy as sa

from reserveapi.api import errors
from reserveapi.db import base as db_base
from reserveapi.db import migration
from reserveapi.db import models
from reserveapi_testing import dbservers
from reserveapi_testing import examples
from reserveapi_testing import inventory
from reserveapi_testing import loopback
from tests.functional import base
from tests.functional.api import routes

NODES = ('node-1', 'node-2')
HOST = 'compute-1'


def request_for(route, reservation_uuid, aggregate_uuid):
    """``(method, path, body)`` for ``route`` with a valid body, so that
    the request gets as far as the database."""
    method, template = route.split(' ', 1)
    path = template.format(reservation_uuid=reservation_uuid,
                           aggregate_uuid=aggregate_uuid, host=HOST,
                           node_ident=NODES[0], hold_uuid=uuid.uuid4())
    start = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(
        hours=3)
    bodies = {
        'POST /v1/reservations': {
            'instance_uuid': str(uuid.uuid4()), 'host': HOST,
            'request_spec': examples.REQUEST_SPEC},
        'PATCH /v1/reservations/{reservation_uuid}': [
            {'op': 'replace', 'path': '/state', 'value': 'active'}],
        'POST /v1/aggregates/sync': {
            'aggregates': [{'uuid': aggregate_uuid, 'hosts': [HOST]}]},
        'POST /v1/candidates': {'request_spec': examples.REQUEST_SPEC},
        'POST /v1/holds': {
            'project_id': base.PROJECT_ID, 'amount': 1,
            'request_spec': examples.REQUEST_SPEC,
            'start': start.isoformat(),
            'end': (start + datetime.timedelta(hours=1)).isoformat()},
        'PATCH /v1/holds/{hold_uuid}': {'amount': 2},
    }
    return method, path, bodies.get(route)


class DatabaseDownMixin:
    """Assertions over an app whose database does not answer."""

    def assertUnavailable(self, response,
                          code='reserveapi.database_unavailable'):
        error = self.assertError(response, 503, code)
        self.assertEqual(str(errors.RETRY_AFTER_SECONDS),
                         response.headers['Retry-After'])
        return error

    def assertEveryRouteUnavailable(self, reservation_uuid, aggregate_uuid,
                                    code='reserveapi.database_unavailable'):
        wrong = []
        for route in routes.guarded_routes():
            method, path, body = request_for(route, reservation_uuid,
                                             aggregate_uuid)
            response = self.request(method, path, body, headers=dict(
                self.admin_headers, **routes.version_headers(
                    *route.split(' ', 1))))
            if response.status_int != 503:
                wrong.append((route, response.status_int, response.text))
                continue
            self.assertUnavailable(response, code)
        self.assertEqual([], wrong)
        self.assertGreaterEqual(len(routes.guarded_routes()), 14)

    def assertHealthcheckReportsIt(self):
        response = self.app.get('/healthcheck', status='*')
        self.assertEqual(503, response.status_int)
        self.assertIn('database unavailable', response.text)


class TestRefusedConnection(DatabaseDownMixin, base.APITestCase):
    """The app pointed at a port where no database listens."""

    scenarios = [
        ('postgresql', {'url': 'postgresql+psycopg2://postgres@127.0.0.1:%d'
                               '/reserveapi'}),
        ('mysql', {'url': 'mysql+pymysql://root@127.0.0.1:%d/reserveapi'}),
    ]

    def setUp(self):
        super().setUp()
        self.assertEqual(200, self.app.get('/healthcheck').status_int)
        engine = engines.create_engine(self.url % loopback.free_port(),
                                       max_retries=0)
        self.addCleanup(engine.dispose)
        self.addCleanup(db_base.main_context_manager.patch_engine(engine))

    def test_every_route_is_503(self):
        self.assertEveryRouteUnavailable(str(uuid.uuid4()),
                                         str(uuid.uuid4()))

    def test_healthcheck_reports_it(self):
        self.assertHealthcheckReportsIt()

    def test_versions_need_no_database(self):
        for path in ('/', '/v1'):
            self.assertEqual(200, self.request('GET', path).status_int)


class TestNoSuchDatabase(DatabaseDownMixin, base.APITestCase):
    """The app pointed at a server that answers, but has no database of
    the name configured (a typo in [database] connection)."""

    scenarios = base.SERVER_BACKENDS

    def setUp(self):
        super().setUp()
        engine = engines.create_engine(
            self.engine.url.set(database='reserveapi_typo')
            .render_as_string(hide_password=False), max_retries=0)
        self.addCleanup(engine.dispose)
        self.addCleanup(db_base.main_context_manager.patch_engine(engine))

    def test_every_route_is_503_saying_so(self):
        self.assertEveryRouteUnavailable(str(uuid.uuid4()), str(uuid.uuid4()),
                                         code='reserveapi.no_database')

    def test_healthcheck_reports_it(self):
        self.assertHealthcheckReportsIt()


class TestSchemaBehind(base.APITestCase):
    """A database without the schema this code needs is no healthier
    than none: a load balancer must route elsewhere."""

    def healthcheck(self):
        response = self.app.get('/healthcheck', status='*')
        return response.status_int, response.text

    def set_revision(self, revision):
        with db_base.writer() as session:
            session.execute(sa.text('UPDATE alembic_version SET '
                                    'version_num = :revision'),
                            {'revision': revision})

    def rename(self, table, to):
        with db_base.writer() as session:
            session.execute(sa.text('ALTER TABLE %s RENAME TO %s'
                                    % (table, to)))

    def test_an_older_schema_fails_the_healthcheck(self):
        self.assertEqual((200, 'database OK'), self.healthcheck())
        every = [m.revision for m in migration.migrations()]
        # The schema is shared by the tests of this process.
        self.addCleanup(self.set_revision, migration.current())
        self.set_revision(every[every.index(migration.needed()) - 1])
        status, text = self.healthcheck()
        self.assertEqual(503, status)
        self.assertIn('run "reserveapi-dbsync upgrade"', text)
        self.set_revision(migration.head())
        self.assertEqual((200, 'database OK'), self.healthcheck())

    def test_no_schema_fails_the_healthcheck(self):
        self.rename('alembic_version', 'alembic_version_hidden')
        self.addCleanup(self.rename, 'alembic_version_hidden',
                        'alembic_version')
        status, text = self.healthcheck()
        self.assertEqual(503, status)
        self.assertIn('no schema yet', text)


class PrivateServerMixin(DatabaseDownMixin):
    """The app on a private database server of ``SERVER``'s kind."""

    SERVER = None

    def setUp(self):
        super().setUp()
        self.server = self.useFixture(self.SERVER())
        url = self.server.create_database('reserveapi')
        self.server_engine = engines.create_engine(url, max_retries=0)
        self.addCleanup(self.server_engine.dispose)
        migration.upgrade(engine=self.server_engine)
        self.addCleanup(db_base.main_context_manager.patch_engine(
            self.server_engine))
        self.config(inline_timeout=0, group='mirror')
        inventory.sync(self, [inventory.node(name) for name in NODES])
        self.reservation = self._reserve()
        self.aggregate = str(uuid.uuid4())
        response = self.request(
            'PUT', '/v1/aggregates/%s/hosts/%s' % (self.aggregate, HOST))
        self.assertEqual(202, response.status_int, response.text)

    def _reserve(self):
        response = self.request('POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'host': HOST,
            'request_spec': examples.REQUEST_SPEC})
        self.assertEqual(201, response.status_int, response.text)
        return response.json

    def snapshot(self):
        """Every row of every table, read straight from the server."""
        with self.server_engine.connect() as connection:
            return {table.name: sorted(
                tuple(row) for row in connection.execute(sa.select(table)))
                for table in models.Base.metadata.sorted_tables}

    def _kill_server_on(self, event, when=lambda *args: True):
        """SIGKILL the server at the first ``event`` of the engine for
        which ``when`` (given the event's arguments) holds."""
        fired = []

        def before(*args):
            if not fired and when(*args):
                fired.append(args)
                self.server.kill()

        sa.event.listen(self.server_engine, event, before)
        self.addCleanup(sa.event.remove, self.server_engine, event, before)
        return fired

    def kill_server_before_commit(self):
        """SIGKILL the server just before the next COMMIT: every
        statement of that transaction ran, none is committed."""
        return self._kill_server_on('commit')

    def kill_server_where_the_reservation_ends(self):
        """SIGKILL the server at the first COMMIT after a reservation's
        INSERT was sent (reads before it, the holds', commit too)."""
        sent = []

        def insert(conn, cursor, statement, *args):
            if 'INSERT INTO reservations' in statement:
                sent.append(statement)

        sa.event.listen(self.server_engine, 'before_cursor_execute', insert)
        self.addCleanup(sa.event.remove, self.server_engine,
                        'before_cursor_execute', insert)
        return self._kill_server_on('commit', lambda *args: bool(sent))

    def kill_server_before_the_reservation_commits(self):
        """SIGKILL the server at the last moment before a reservation commits:
        on MariaDB before its COMMIT (its INSERT and flag UPDATE ran); on
        PostgreSQL, where its INSERT is one statement and its own
        transaction (db/base.one_statement), as that statement is sent.
        """
        if self.SERVER is not dbservers.PostgreSQLServer:
            return self.kill_server_where_the_reservation_ends()
        return self._kill_server_on(
            'before_cursor_execute',
            lambda conn, cursor, statement, *args: statement.startswith(
                'WITH inserted'))

    def test_stopped_server_is_503_and_nothing_changes(self):
        before = self.snapshot()
        self.server.stop()
        self.assertEveryRouteUnavailable(self.reservation['uuid'],
                                         self.aggregate)
        self.assertHealthcheckReportsIt()
        self.server.start()
        self.assertEqual(before, self.snapshot())
        self.assertEqual(200, self.app.get('/healthcheck').status_int)
        self._reserve()

    def test_killed_while_reserving_leaves_no_reservation(self):
        before = self.snapshot()
        fired = self.kill_server_before_the_reservation_commits()
        self.assertUnavailable(self.request('POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'host': HOST,
            'request_spec': examples.REQUEST_SPEC}))
        self.assertEqual(1, len(fired))
        self.server.start()
        # The reservation was never committed.
        self.assertEqual(before, self.snapshot())
        self._reserve()

    def test_the_answer_agrees_with_the_database(self):
        """A server lost where the reservation's transaction ends: on MariaDB
        before its COMMIT, so nothing is kept and the answer is a 503; on
        PostgreSQL the reservation's statement committed it already (the
        transaction's end sends nothing), so the answer is the
        reservation, kept."""
        fired = self.kill_server_where_the_reservation_ends()
        response = self.request('POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'host': HOST,
            'request_spec': examples.REQUEST_SPEC})
        self.assertEqual(1, len(fired))
        self.server.start()
        kept = [row[1] for row in self.snapshot()['reservations']]
        if self.SERVER is dbservers.PostgreSQLServer:
            self.assertEqual(201, response.status_int, response.text)
            self.assertEqual(sorted([self.reservation['uuid'],
                                     response.json['uuid']]), sorted(kept))
        else:
            self.assertUnavailable(response)
            self.assertEqual([self.reservation['uuid']], kept)

    def test_killed_while_releasing_leaves_it_reserved(self):
        before = self.snapshot()
        fired = self.kill_server_before_commit()
        path = '/v1/reservations/' + self.reservation['uuid']
        self.assertUnavailable(self.request('DELETE', path))
        self.assertEqual(1, len(fired))
        self.server.start()
        # The DELETE and the flag's UPDATE ran; neither is committed,
        # the reservation still holds its node.
        self.assertEqual(before, self.snapshot())
        self.assertEqual(204, self.request('DELETE', path).status_int)


class TestPostgreSQLServer(PrivateServerMixin, base.APITestCase):
    SERVER = dbservers.PostgreSQLServer


class TestMariaDBServer(PrivateServerMixin, base.APITestCase):
    SERVER = dbservers.MariaDBServer
