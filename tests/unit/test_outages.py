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

"""A lasting failure is logged when it begins, with its cause in one
line, at most once a minute while it lasts, and when it ends."""

import logging

import fixtures
from keystoneauth1 import exceptions as ks_exc
from oslo_db import exception as db_exc
from oslotest import base

from reserveapi.common import exception
from reserveapi.common import outages
from reserveapi.peers import clients as peers

LOGGER = 'reserveapi.test.outages'


def database_down():
    return exception.DatabaseUnavailable(
        cause='OperationalError connection to server at "127.0.0.1", port '
              '5999 failed: Connection refused',
        server='postgresql 127.0.0.1:5999')


def ironic_down():
    try:
        try:
            raise ks_exc.ConnectFailure(
                'Unable to establish connection to http://10.0.0.5:6385/v1/'
                'nodes/abc: Connection refused')
        except ks_exc.ConnectFailure as error:
            raise peers.ironic_unavailable(error)
    except exception.IronicUnavailable as error:
        return error


class TestCause(base.BaseTestCase):

    def test_database(self):
        key, text = outages.cause(database_down())
        self.assertEqual(('database', 'postgresql 127.0.0.1:5999',
                          'OperationalError'), key)
        self.assertEqual('database postgresql 127.0.0.1:5999: '
                         'OperationalError: connection to server at '
                         '"127.0.0.1", port 5999 failed: Connection refused',
                         text)

    def test_a_peer_is_named_with_its_address_and_first_error(self):
        key, text = outages.cause(ironic_down())
        self.assertEqual(('ironic', '10.0.0.5:6385', 'ConnectFailure'), key)
        self.assertEqual('ironic 10.0.0.5:6385: ConnectFailure: Unable to '
                         'establish connection to http://10.0.0.5:6385/v1/'
                         'nodes/abc: Connection refused', text)

    def test_oslo_db_errors_are_the_database(self):
        self.assertEqual('database', outages.peer(db_exc.DBError('gone')))

    def test_anything_else(self):
        key, text = outages.cause(RuntimeError('inventory file is\ngone'))
        self.assertEqual(('other', None, 'RuntimeError'), key)
        self.assertEqual('RuntimeError: inventory file is gone', text)

    def test_long_messages_are_cut(self):
        _key, text = outages.cause(RuntimeError('x' * 1000))
        self.assertEqual(len('RuntimeError: ') + outages.MESSAGE_LENGTH,
                         len(text))

    def test_every_peer_is_a_label_value(self):
        for error in (database_down(), ironic_down(), RuntimeError(),
                      exception.PlacementUnavailable(reason='down'),
                      exception.NovaUnavailable(reason='down')):
            self.assertIn(outages.peer(error), outages.PEERS)


class TestOutageLog(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name=LOGGER, level=logging.INFO,
            format='%(levelname)s %(message)s'))
        self.now = 1000.0
        self.outages = outages.OutageLog(logging.getLogger(LOGGER), 'Job %s',
                                         clock=lambda: self.now)

    def lines(self):
        return self.log.output.splitlines()

    def test_one_line_a_minute_while_it_lasts_and_one_when_it_ends(self):
        for _second in range(0, 150, 10):
            self.outages.failed('mirror-retry', database_down())
            self.now += 10
        self.outages.succeeded('mirror-retry')
        cause = ('database postgresql 127.0.0.1:5999: OperationalError: '
                 'connection to server at "127.0.0.1", port 5999 failed: '
                 'Connection refused')
        self.assertEqual([
            'WARNING Job mirror-retry failed: ' + cause,
            'WARNING Job mirror-retry still failing after 60 s (7 '
            'failures): ' + cause,
            'WARNING Job mirror-retry still failing after 2 min (13 '
            'failures): ' + cause,
            'INFO Job mirror-retry works again after 2 min (15 failures); '
            'it failed with ' + cause], self.lines())

    def test_another_cause_is_another_outage(self):
        self.outages.failed('inventory-sync', database_down())
        self.now += 5
        self.outages.failed('inventory-sync', ironic_down())
        self.assertEqual(2, len(self.lines()))
        self.assertIn('failed: ironic 10.0.0.5:6385', self.lines()[1])

    def test_subjects_are_apart(self):
        self.outages.failed('inventory-sync', database_down())
        self.outages.failed('mirror-retry', database_down())
        self.outages.succeeded('inventory-sync')
        self.assertEqual(['WARNING Job inventory-sync failed',
                          'WARNING Job mirror-retry failed',
                          'INFO Job inventory-sync works again'],
                         [line.partition(':')[0].split(' after')[0]
                          for line in self.lines()])
        self.assertTrue(self.outages.active)

    def test_success_without_failure_says_nothing(self):
        self.outages.succeeded('inventory-sync')
        self.assertEqual([], self.lines())
        self.assertFalse(self.outages.active)

    def test_the_traceback_is_at_debug_only(self):
        debug = self.useFixture(fixtures.FakeLogger(
            name=LOGGER, level=logging.DEBUG,
            format='%(levelname)s %(message)s'))
        try:
            raise RuntimeError('broken')
        except RuntimeError as error:
            self.outages.failed('expire-reservations', error)
        self.assertNotIn('Traceback', self.log.output)
        self.assertIn('DEBUG Job expire-reservations failed\nTraceback',
                      debug.output)


class TestLogFailure(base.BaseTestCase):
    """A failure outside a job's outage log: one line for a peer, the
    traceback only for a bug."""

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name=LOGGER, level=logging.INFO,
            format='%(levelname)s %(message)s'))

    def fail_with(self, error):
        try:
            raise error
        except Exception as raised:
            outages.log_failure(logging.getLogger(LOGGER), 'Could not do it',
                                raised)
        return self.log.output.splitlines()

    def test_a_lost_database_connection_is_one_warning(self):
        lost = db_exc.DBConnectionError(
            'server closed the connection unexpectedly\n\tThis probably '
            'means the server terminated abnormally')
        self.assertEqual(
            ['WARNING Could not do it: database: DBConnectionError: server '
             'closed the connection unexpectedly This probably means the '
             'server terminated abnormally'], self.fail_with(lost))

    def test_a_bug_keeps_its_traceback(self):
        lines = self.fail_with(KeyError('node'))
        self.assertEqual('ERROR Could not do it', lines[0])
        self.assertIn('Traceback (most recent call last):', lines)
        self.assertEqual("KeyError: 'node'", lines[-1])
