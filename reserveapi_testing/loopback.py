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

"""Services on loopback, for the tests and tools: a free port, whether
a service there answers, waiting until it does, and a WSGI app served
from a thread (real or fake peer services)."""

import socket
import socketserver
import threading
import time
import urllib.request
from wsgiref import simple_server

import fixtures

_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
"""Loopback is never reached through a proxy, whatever the environment
says."""


def free_port():
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def listening(port):
    """Whether something accepts connections on 127.0.0.1:``port``."""
    try:
        socket.create_connection(('127.0.0.1', port), 1).close()
    except OSError:
        return False
    return True


def answers(url, timeout=5):
    """Whether a GET of ``url`` answers 200."""
    try:
        with _DIRECT.open(url, timeout=timeout) as response:
            return response.status == 200
    except OSError:
        # Refused, reset, timed out, or an HTTP error status.
        return False


def wait_until(ready, timeout, process=None, interval=0.1):
    """Call ``ready()`` until it is true, then True; False once
    ``timeout`` seconds have passed, or at once when ``process`` (a
    Popen, the service starting) has exited: the caller raises its own
    error, with the service's log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            return False
        if ready():
            return True
        time.sleep(interval)
    return False


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
