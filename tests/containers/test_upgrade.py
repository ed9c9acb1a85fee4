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

"""The rolling upgrade by swapping images, under load: version 1.0.0's
image (commit d005916, built the same way) serves compute hosts that
never stop reserving; this checkout's image expands and migrates the
schema; its API and worker containers start beside the old ones; the old
ones stop; this image contracts. The load, the front and the checks
are ``tests/system/upgrade``'s (see its README): no 5xx, no connection
error outside an API's stop, no node held twice, every confirmed
reservation kept, every grant right, each release granting after the
expand, the counters equal to a recount, capacity as the nodes say.
"""

import logging
import os
import threading
import time

import fixtures
from keystoneauth1 import session as ks_session
import testtools
from testtools import content

from reserveapi import client
from reserveapi_testing import containers
from reserveapi_testing import dbservers
from reserveapi_testing import loopback
from reserveapi_testing import observer
from tests.system.soak import soakload
from tests.system.upgrade import checks
from tests.system.upgrade import front as front_module
from tests.system.upgrade import load
from tests.system.upgrade import run as upgrade_run

OLD_REVISION = upgrade_run.DEFAULT_FROM
OLD_VERSION = upgrade_run.DEFAULT_FROM_VERSION
NODES = 300
CLIENTS = 3
PHASE = 4.0
"""Seconds of load between two steps."""
STOP_GRACE = upgrade_run.STOP_GRACE


class TestRollingUpgrade(testtools.TestCase):

    def setUp(self):
        super().setUp()
        reason = containers.available()
        if reason:
            self.skipTest(reason)
        self.old_image = containers.image(OLD_REVISION, OLD_VERSION)
        self.new_image = containers.image()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.steps = []
        self.addCleanup(lambda: self.addDetail('steps', content.text_content(
            '\n'.join(self.steps))))

    def step(self, text):
        self.steps.append('%7.2f %s' % (time.monotonic() - self.started,
                                        text))

    def test_postgresql(self):
        server = self.useFixture(dbservers.PostgreSQLServer())
        self.roll(server.create_database('reserveapi'))

    def test_mysql(self):
        server = self.useFixture(dbservers.MariaDBServer())
        self.roll(server.create_database('reserveapi'))

    def schema(self, image, *command):
        result = containers.run_once(image, self.config.path, *command)
        self.addDetail(' '.join(command), content.text_content(
            result.stdout + result.stderr))
        return result.returncode

    def container(self, image, role, name, port=None):
        container = self.useFixture(containers.Container(
            image, self.config.path, role, port=port, name=name + '-'))
        self.addCleanup(self.save_log, container, name)
        return container

    def save_log(self, container, name):
        path = os.path.join(self.dir, name + '.log')
        if not os.path.exists(path):
            with open(path, 'w') as stream:
                stream.write(container.log())
        with open(path) as stream:
            self.addDetail(name, content.text_content(stream.read()))
        return path

    def roll(self, database_url):
        self.started = time.monotonic()
        inventory = os.path.join(self.dir, 'nodes.yaml')
        load.write(inventory, NODES, 0)
        self.config = self.useFixture(containers.Configuration(
            database_url, nodes=inventory))
        self.assertEqual(0, self.schema(self.old_image, 'dbsync', 'upgrade'))
        self.assertEqual(0, self.schema(self.old_image, 'manage',
                                        'sync-nodes'))
        old_api = self.container(self.old_image, 'api', 'old-api',
                                 port=loopback.free_port())
        old_worker = self.container(self.old_image, 'worker', 'old-worker')
        old_api.wait_ready(path='/v1')
        front = front_module.Front([('N-1', old_api.port)])
        self.addCleanup(front.stop)
        self.step('N-1 (%s) serves behind the front' % OLD_VERSION)

        recorder = load.Recorder()
        logger = logging.getLogger('keystoneauth.session')
        logger.addHandler(recorder)
        self.addCleanup(logger.removeHandler, recorder)
        stop = threading.Event()
        self.addCleanup(stop.set)
        clients = [load.Client(front.url, 'compute-%d' % index, recorder,
                               stop) for index in range(CLIENTS)]
        monitor = soakload.Monitor(database_url, recorder, stop)
        counter_watch = load.CounterWatch(database_url, stop, self.started)
        self.addCleanup(counter_watch.engine.dispose)
        threads = clients + [monitor, counter_watch]
        for thread in threads:
            thread.start()
        time.sleep(PHASE)

        schema_steps = {}
        self.step('expand (N)')
        expanded_at = time.monotonic()
        schema_steps['expand'] = self.schema(self.new_image, 'dbsync',
                                             'expand')
        self.step('migrate (N)')
        for _pass in range(upgrade_run.MIGRATE_PASSES):
            schema_steps['migrate'] = self.schema(
                self.new_image, 'dbsync', 'migrate', '--max-count',
                str(upgrade_run.MIGRATE_BATCH))
            if schema_steps['migrate'] != 1:
                break
        time.sleep(PHASE / 2)

        self.step("N's API and worker containers start")
        new_api = self.container(self.new_image, 'api', 'new-api',
                                 port=loopback.free_port())
        new_worker = self.container(self.new_image, 'worker', 'new-worker')
        new_api.wait_ready()
        front.set_backends([('N-1', old_api.port), ('N', new_api.port)])
        time.sleep(PHASE)

        stop_windows = []
        exits = {}
        self.step("N-1's worker stops")
        exits["N-1's worker"] = old_worker.stop()
        self.step("N-1's API stops")
        began = time.monotonic()
        exits["N-1's API"] = old_api.stop()
        front.set_backends([('N', new_api.port)])
        stop_windows.append((began, time.monotonic() + STOP_GRACE))
        old_api_log = self.save_log(old_api, 'old-api')
        self.save_log(old_worker, 'old-worker')
        time.sleep(PHASE / 2)

        self.step('contract (N)')
        schema_steps['contract'] = self.schema(self.new_image, 'dbsync',
                                               'contract')
        time.sleep(PHASE)
        self.step('load stops')
        stop.set()
        for thread in threads:
            thread.join(120)

        engine = observer.engine(database_url)
        self.addCleanup(engine.dispose)
        with engine.connect() as connection:
            live = dict(connection.execute(upgrade_run.LIVE).all())
        reader = client.ReservationClient(ks_session.Session(),
                                          endpoint_override=new_api.url)
        nodes = load.read(inventory)
        capacity = soakload.attempt(recorder, 'capacity', reader.capacity)
        final = counter_watch.compare()
        new_api_log = os.path.join(self.dir, 'new-api.log')
        with open(new_api_log, 'w') as stream:
            stream.write(new_api.log())
        grant_checks, grants = checks.grants(
            recorder, nodes, expanded_at,
            checks.reserved_in_log(old_api_log),
            checks.reserved_in_log(new_api_log))
        results = (
            checks.answers(recorder, [old_api_log, new_api_log])
            + checks.connection_errors(front, recorder, stop_windows,
                                       self.started)
            + checks.holds(recorder, monitor, clients, time.monotonic())
            + checks.kept_reservations(reader, clients, live)
            + grant_checks
            + checks.counters(counter_watch, final)
            + checks.capacity(capacity, nodes, live.values())
            + checks.graceful_stops(exits)
            + [('expand, migrate and contract exited 0',
                set(schema_steps.values()) == {0}, [schema_steps])])
        self.assertTrue(new_worker.running(), new_worker.log()[-3000:])
        self.addDetail('checks', content.text_content('\n'.join(
            '%s %s %s' % ('PASS' if ok else 'FAIL', name, problems or '')
            for name, ok, problems in results)
            + '\ngrants: %s\nanswers: %s\nfront: %s' % (
                grants, dict(recorder.statuses), dict(front.served))))
        self.assertEqual([], [(name, problems)
                              for name, ok, problems in results if not ok])
