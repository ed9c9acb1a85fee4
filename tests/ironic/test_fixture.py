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

"""The Ironic fixture itself: a real service we can stop, restart, wipe."""

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid as uuidlib

from oslotest import base as oslotest_base
import requests

from reserveapi_testing import ironic as ironic_fixture
from tests.ironic import base

TOP_DIR = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def _live_group_members(group):
    """PIDs of processes in ``group`` that are not zombies."""
    members = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as stat_file:
                stat = stat_file.read()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces.
        fields = stat.rsplit(')', 1)[1].split()
        if int(fields[2]) == group and fields[0] != 'Z':
            members.append(int(entry))
    return members


def _run_python(code):
    return subprocess.run(
        [sys.executable, '-c', textwrap.dedent(code)], cwd=TOP_DIR,
        capture_output=True, text=True, timeout=120, check=True).stdout


class TestIronicService(base.IronicTestCase):

    def test_serves_its_own_database_on_loopback(self):
        root = requests.get(self.ironic.endpoint, timeout=10).json()
        node = self.ironic.create_node(name='n1')

        self.assertTrue(self.ironic.endpoint.startswith('http://127.0.0.1:'))
        self.assertEqual(ironic_fixture.API_VERSION,
                         root['default_version']['version'])
        self.assertEqual('sqlite:///' + self.ironic.db_path,
                         self.ironic.db_url)
        with sqlite3.connect(self.ironic.db_path) as conn:
            rows = conn.execute('SELECT uuid, name FROM nodes').fetchall()
        self.assertEqual([(node['uuid'], 'n1')], rows)
        self.assertIn('POST /v1/nodes', self.ironic.read_log())

    def test_restart_keeps_port_and_data(self):
        node = self.ironic.create_node(name='kept', traits=['CUSTOM_KEPT'])
        seeded = self.ironic.seed_nodes(3)
        endpoint = self.ironic.endpoint

        self.ironic.stop(kill=True)
        self.assertFalse(self.ironic.running)
        self.assertRaises(requests.ConnectionError, requests.get,
                          endpoint, timeout=10)
        self.ironic.start()

        self.assertEqual(endpoint, self.ironic.endpoint)
        self.assertEqual(['CUSTOM_KEPT'],
                         self.ironic.get_node(node)['traits'])
        self.assertEqual(sorted(seeded + [node['uuid']]), sorted(
            n['uuid'] for n in self.ironic.list_nodes()))
        # The restarted conductor takes work again.
        self.ironic.make_available([node])

    def test_graceful_stop_leaves_no_process(self):
        group = self.ironic._process.pid
        self.assertGreaterEqual(len(_live_group_members(group)), 2)

        self.ironic.stop()

        self.assertEqual([], _live_group_members(group))
        self.ironic.start()
        self.assertEqual(200, self.ironic.request('GET', '/v1/nodes')
                         .status_code)

    def test_frozen_ironic_answers_once_thawed_and_still_stops(self):
        self.ironic.freeze()
        self.addCleanup(self.ironic.thaw)
        self.assertRaises(requests.Timeout, requests.get,
                          self.ironic.endpoint + '/v1/nodes', timeout=1)
        self.ironic.thaw()
        self.assertEqual(200, self.ironic.request('GET', '/v1/nodes')
                         .status_code)

        group = self.ironic._process.pid
        self.ironic.freeze()
        started = time.monotonic()
        self.ironic.stop()

        self.assertLess(time.monotonic() - started,
                        ironic_fixture.STOP_TIMEOUT)
        self.assertEqual([], _live_group_members(group))
        self.ironic.start()

    def test_importing_the_fixture_does_not_import_ironic(self):
        loaded = _run_python('''
            import sys
            import reserveapi_testing.ironic
            print(sorted(m for m in sys.modules
                         if m == 'ironic' or m.startswith('ironic.')))
        ''')
        self.assertEqual('[]\n', loaded)


class TestNoProcessLeftBehind(oslotest_base.BaseTestCase):

    def test_after_cleanup_or_when_the_test_process_is_killed(self):
        # A process that cleans one fixture up, then dies with another
        # still running, before any cleanup or atexit can run.
        output = subprocess.run([sys.executable, '-c', textwrap.dedent("""
            import os, signal
            from reserveapi_testing import ironic
            cleaned = ironic.IronicFixture()
            cleaned.setUp()
            print(cleaned._process.pid, cleaned.base_dir)
            cleaned.cleanUp()
            orphan = ironic.IronicFixture()
            orphan.setUp()
            print(orphan._process.pid, orphan.base_dir, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        """)], cwd=TOP_DIR, capture_output=True, text=True, timeout=180)
        first, second = output.stdout.split('\n')[:2]
        cleaned_group, cleaned_dir = first.split()
        orphan_group, orphan_dir = second.split()
        orphan_group = int(orphan_group)
        # Nothing could remove it: the process died first.
        self.addCleanup(shutil.rmtree, orphan_dir, ignore_errors=True)

        self.assertEqual(-9, output.returncode, output.stderr)
        self.assertEqual([], _live_group_members(int(cleaned_group)))
        self.assertFalse(os.path.exists(cleaned_dir))
        deadline = time.monotonic() + 60
        while (_live_group_members(orphan_group)
               and time.monotonic() < deadline):
            time.sleep(0.1)
        self.assertEqual([], _live_group_members(orphan_group))


class TestOwnIronic(oslotest_base.BaseTestCase):

    def test_keeps_its_files_in_the_test_temporary_directory(self):
        # oslotest gives each test a temporary directory of its own and
        # removes it after; an Ironic a test owns lives there, not in the
        # directory current when the module was imported (which may be an
        # earlier test's, already gone: the install guide's second cloud).
        test_dir = tempfile.gettempdir()
        self.assertNotEqual(ironic_fixture._PROCESS_TEMP_ROOT, test_dir)
        ironic = self.useFixture(ironic_fixture.IronicFixture())
        self.assertEqual(test_dir, os.path.dirname(ironic.base_dir))
        self.assertTrue(os.path.exists(ironic.db_path))
        self.assertIn(ironic_fixture.DRIVER, requests.get(
            ironic.endpoint + '/v1/drivers', timeout=10).text)


class TestReset(base.IronicTestCase):

    def _count(self, table):
        with sqlite3.connect(self.ironic.db_path) as conn:
            return conn.execute(
                'SELECT count(*) FROM %s' % table  # noqa: S608 - constant
            ).fetchone()[0]

    def test_reset_deletes_every_node_and_its_rows(self):
        node = self.ironic.create_node(traits=['CUSTOM_A'])
        self.ironic.request('POST', '/v1/ports', expected=(201,), json={
            'node_uuid': node['uuid'], 'address': '52:54:00:12:34:56'})
        self.ironic.seed_nodes(20, traits=['CUSTOM_B', 'CUSTOM_C'])
        self.assertEqual(21, self._count('nodes'))
        self.assertEqual(41, self._count('node_traits'))
        self.assertEqual(1, self._count('ports'))

        self.assertEqual(0, self.ironic.reset())

        self.assertEqual([], self.ironic.list_nodes())
        for table in ('nodes', 'node_traits', 'ports'):
            self.assertEqual(0, self._count(table), table)
        # Ironic goes on as before.
        node = self.ironic.create_node(traits=['CUSTOM_A'])
        self.ironic.make_available([node])

    def test_reset_while_a_node_cleans_restarts_ironic(self):
        node = self.ironic.create_node(automated_clean=True)
        self.ironic.make_available([node])
        self.ironic.deploy(node, str(uuidlib.uuid4()))
        self.ironic.set_provision_state(node, 'deleted')
        self.ironic.wait_for([node], provision_state='cleaning',
                             settled=False, timeout=10)
        ironic_pid = self.ironic._process.pid

        self.assertEqual(1, self.ironic.reset(settle_timeout=0))

        self.assertNotEqual(ironic_pid, self.ironic._process.pid)
        self.assertEqual([], _live_group_members(ironic_pid))
        self.assertEqual([], self.ironic.list_nodes())
        node = self.ironic.create_node()
        self.ironic.make_available([node])

    def test_reset_waits_for_cleaning_to_end(self):
        node, = self.ironic.seed_nodes(1, automated_clean=True)
        self.ironic.deploy(node, str(uuidlib.uuid4()))
        self.ironic.set_provision_state(node, 'deleted')
        self.ironic.wait_for([node], provision_state='cleaning',
                             settled=False, timeout=10)
        ironic_pid = self.ironic._process.pid
        since = self.ironic.log_position()

        self.assertEqual(0, self.ironic.reset())

        self.assertEqual(ironic_pid, self.ironic._process.pid)
        self.assertIn('moved to provision state "available" from state '
                      '"cleaning"', self.ironic.read_log(since))
        self.assertEqual([], self.ironic.list_nodes())
