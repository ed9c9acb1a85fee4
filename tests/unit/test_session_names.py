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

"""The name each connection carries: within PostgreSQL's 63 bytes, the
host cut first, and read back (``reserveapi.db.sessions``)."""

import os
import socket
import sys
from unittest import mock

from oslotest import base

from reserveapi import version
from reserveapi.db import sessions


class TestSessionNames(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.addCleanup(sessions.set_kind, None)
        for target, name, value in (
                (version, 'version_string', '1.1.0.dev355'),
                (socket, 'gethostname', 'ctl-1'),
                (os, 'getpid', lambda: 4711)):
            patcher = mock.patch.object(
                target, name, value if callable(value)
                else mock.Mock(return_value=value))
            patcher.start()
            self.addCleanup(patcher.stop)

    def test_the_console_script_is_the_kind(self):
        with mock.patch.object(sys, 'argv',
                               ['/usr/bin/reserveapi-worker', '--once']):
            self.assertEqual('reserveapi:worker:4711:1.1.0.dev355:ctl-1',
                             sessions.name())

    def test_a_wsgi_server_names_itself_api(self):
        sessions.set_kind('api')
        with mock.patch.object(sys, 'argv', ['/usr/bin/gunicorn']):
            self.assertEqual(sessions.ProcessName(
                kind='api', pid=4711, version='1.1.0.dev355', host='ctl-1'),
                sessions.parse(sessions.name()))

    def test_a_long_host_is_cut_to_fit(self):
        sessions.set_kind('worker')
        host = 'controller-%s.example.com' % ('x' * 60)
        with mock.patch.object(socket, 'gethostname', return_value=host):
            name = sessions.name()
        self.assertEqual(sessions.MAX_BYTES, len(name.encode()))
        named = sessions.parse(name)
        self.assertEqual(('worker', 4711, '1.1.0.dev355'),
                         (named.kind, named.pid, named.version))
        self.assertTrue(host.startswith(named.host))

    def test_what_is_not_ours(self):
        for text in ('', None, 'psql', 'pg_dump',
                     'reserveapi:worker:x:1.1.0:ctl-1',
                     'reserveapi:worker:1:not-a-version:ctl-1',
                     'nova:api:1:1.1.0:ctl-1', 'reserveapi:api:1:1.1.0'):
            self.assertIsNone(sessions.parse(text), text)
