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

"""Real or fake peer services on loopback, for functional tests."""

import socketserver
import threading
from wsgiref import simple_server

import fixtures


class _ThreadingWSGIServer(socketserver.ThreadingMixIn,
                           simple_server.WSGIServer):
    daemon_threads = True


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, format, *args):
        """Keep the access log out of the test output."""


class LoopbackServer(fixtures.Fixture):
    """Serve a WSGI app on 127.0.0.1 from a background thread.

    ``stop()`` closes the listening socket, so clients get "connection
    refused"; ``start()`` serves the same app again on the same port.
    """

    def __init__(self, app):
        super().__init__()
        self.app = app
        self.port = 0
        self._server = None
        self._thread = None

    def _setUp(self):
        self.start()
        self.addCleanup(self.stop)

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    @property
    def running(self):
        return self._server is not None

    def start(self):
        if self.running:
            return
        self._server = simple_server.make_server(
            '127.0.0.1', self.port, self.app,
            server_class=_ThreadingWSGIServer, handler_class=_QuietHandler)
        self.port = self._server.server_port
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={'poll_interval': 0.05},
            name='loopback-%d' % self.port, daemon=True)
        self._thread.start()

    def stop(self):
        if not self.running:
            return
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self._server = self._thread = None
