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

"""The one free port and the one wait for a service on loopback that
the fixtures and tools share."""

import subprocess
import sys
import time

from oslotest import base

from reserveapi_testing import loopback


def _app(environ, start_response):
    status = '200 OK' if environ['PATH_INFO'] == '/ready' else '404 Not Found'
    start_response(status, [('Content-Type', 'text/plain')])
    return [b'']


class LoopbackTest(base.BaseTestCase):

    def test_a_free_port_is_free(self):
        port = loopback.free_port()
        self.assertFalse(loopback.listening(port))
        self.assertFalse(loopback.answers('http://127.0.0.1:%d/' % port))

    def test_answers_only_200(self):
        server = self.useFixture(loopback.LoopbackServer(_app))
        self.assertTrue(loopback.listening(server.port))
        self.assertTrue(loopback.answers(server.url + '/ready'))
        self.assertFalse(loopback.answers(server.url + '/other'))

    def test_wait_until_ready(self):
        ready_at = time.monotonic() + 0.2
        self.assertTrue(loopback.wait_until(
            lambda: time.monotonic() >= ready_at, 10, interval=0.01))

    def test_wait_until_gives_up_after_the_timeout(self):
        self.assertFalse(loopback.wait_until(lambda: False, 0.1,
                                             interval=0.01))

    def test_wait_until_stops_when_the_process_exits(self):
        process = subprocess.Popen([sys.executable, '-c', 'pass'])
        process.wait()
        started = time.monotonic()
        self.assertFalse(loopback.wait_until(lambda: False, 60, process))
        self.assertLess(time.monotonic() - started, 1)
