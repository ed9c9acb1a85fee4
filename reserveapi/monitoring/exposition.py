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

"""Where the metrics are served, and which processes one scrape covers.

The API under gunicorn is several processes behind one port; a scrape
reaches one of them. With ``PROMETHEUS_MULTIPROC_DIR`` set (which
``reserveapi.wsgi.gunicorn_config`` does before any worker starts),
prometheus-client keeps each process's values in a file of that
directory, and a scrape sums the files of every process, dead ones
included, so that a counter never goes back when gunicorn replaces a
worker. Without it (the development server, one process) a scrape reads
the process's own registry, with its CPU and memory.

``reserveapi-worker`` is one process: it serves its registry on a port
of its own, with the database's gauges (``monitoring/database.py``).
"""

import contextlib
import os
import socket
import socketserver
import threading
from wsgiref import simple_server

from oslo_log import log
import prometheus_client
from prometheus_client import multiprocess

LOG = log.getLogger(__name__)

MULTIPROCESS_ENV = 'PROMETHEUS_MULTIPROC_DIR'


def multiprocess_dir():
    """The directory the processes of a WSGI server share, or None."""
    return os.environ.get(MULTIPROCESS_ENV) or None


def api_registry():
    """What a scrape of the API reads: every process's values, in a
    registry built for this scrape, or this process's own."""
    if multiprocess_dir() is None:
        return prometheus_client.REGISTRY
    registry = prometheus_client.CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return registry


SCRAPE_TIMEOUT_HEADER = 'HTTP_X_PROMETHEUS_SCRAPE_TIMEOUT_SECONDS'
"""Prometheus says, with every scrape, how long it will wait."""

SCRAPE_MARGIN = 0.5
"""Seconds kept for writing the answer before Prometheus gives up."""


class _ThreadingWSGIServer(socketserver.ThreadingMixIn,
                           simple_server.WSGIServer):
    daemon_threads = True


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        """Every scrape would be a line on stderr."""


def serve_worker(host, port, collectors=()):
    """Serve this process's registry, with ``collectors`` added, on
    ``http://host:port/metrics`` from a daemon thread.

    Each scrape's wait for the database is bounded by the scrape timeout
    Prometheus sends as well as by ``[metrics] database_timeout``: a hung
    database shows as ``reserveapi_database_up 0``, never as the worker
    target being down.

    :raises: OSError when the address cannot be bound.
    """
    for collector in collectors:
        prometheus_client.REGISTRY.register(collector)
    metrics_app = prometheus_client.make_wsgi_app()

    def app(environ, start_response):
        try:
            timeout = float(environ.get(SCRAPE_TIMEOUT_HEADER, ''))
        except ValueError:
            timeout = None
        with scrape_deadline(None if timeout is None
                             else max(timeout - SCRAPE_MARGIN, 0.1)):
            return metrics_app(environ, start_response)

    server_class = type('Server', (_ThreadingWSGIServer,), {
        'address_family': socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM)[0][0]})
    server = simple_server.make_server(host, port, app, server_class,
                                       handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    LOG.info('Serving metrics on http://%s:%d/metrics', host,
             server.server_port)
    return server


_scrape = threading.local()


@contextlib.contextmanager
def scrape_deadline(seconds):
    """Within it, ``scrape_wait(default)`` is at most ``seconds``."""
    _scrape.seconds = seconds
    try:
        yield
    finally:
        _scrape.seconds = None


def scrape_wait(default):
    """How long this scrape may wait: ``default``, or less when the
    scraper said it gives up sooner."""
    seconds = getattr(_scrape, 'seconds', None)
    return default if seconds is None else min(default, seconds)
