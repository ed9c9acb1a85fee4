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

import os

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


def serve_worker(host, port, collectors=()):
    """Serve this process's registry, with ``collectors`` added, on
    ``http://host:port/metrics`` from a daemon thread.

    :raises: OSError when the address cannot be bound.
    """
    for collector in collectors:
        prometheus_client.REGISTRY.register(collector)
    server, _thread = prometheus_client.start_http_server(port, addr=host)
    LOG.info('Serving metrics on http://%s:%d/metrics', host,
             server.server_port)
    return server
