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

"""The API's part of the metrics (``[metrics] enabled``): every request
timed under its route template, and the scrape endpoint.

A request is labelled with the template ``hooks.RouteHook`` matched
(``/v1/reservations/{reservation_uuid}``), never its path: a path holds
UUIDs and host names, one series each, and a client could make up as
many as it likes. Methods outside HTTP's usual ones count as ``other``
for the same reason.
"""

import ipaddress
import time

from oslo_log import log
import prometheus_client

from reserveapi.api import expose
from reserveapi.api import routes
from reserveapi.common import metrics
from reserveapi.monitoring import exposition

LOG = log.getLogger(__name__)

METHODS = frozenset(('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE',
                     'OPTIONS'))
UNMATCHED = 'unmatched'
"""The route label of a request whose path is no route's."""


def route_of(environ, fixed_paths=()):
    """The route template of a request: the one RouteHook matched, else
    the one its path matches (``fixed_paths``, like the healthcheck's,
    are their own), else ``unmatched``."""
    route = environ.get(expose.ROUTE_KEY)
    if route is not None:
        return route.template
    raw = environ.get('PATH_INFO', '') or '/'
    try:
        path = raw.encode('latin-1').decode('utf-8')
    except UnicodeError:
        return UNMATCHED
    if path.rstrip('/') in fixed_paths:
        return path.rstrip('/')
    return routes.template_for(path) or UNMATCHED


class RequestMetrics:
    """WSGI middleware: observes every request in
    ``reserveapi_api_request_duration_seconds`` by route template,
    method and status, once the application has answered."""

    def __init__(self, application, fixed_paths=()):
        self.application = application
        self.fixed_paths = frozenset(fixed_paths)

    def __call__(self, environ, start_response):
        started = time.perf_counter()
        statuses = []

        def remember_status(status, headers, exc_info=None):
            statuses.append(status)
            return start_response(status, headers, exc_info)

        try:
            return self.application(environ, remember_status)
        finally:
            method = environ.get('REQUEST_METHOD')
            metrics.API_REQUEST_DURATION.labels(
                route=route_of(environ, self.fixed_paths),
                method=method if method in METHODS else 'other',
                status=statuses[-1][:3] if statuses else '500',
            ).observe(time.perf_counter() - started)


class MetricsEndpoint:
    """WSGI middleware: ``path`` answers with the metrics (to addresses
    of ``allowed_networks``, when any are given); anything else goes on
    to ``application``."""

    def __init__(self, application, path, allowed_networks=()):
        self.application = application
        self.path = path.rstrip('/') or '/'
        try:
            self.networks = [ipaddress.ip_network(network, strict=False)
                             for network in allowed_networks]
        except ValueError as exc:
            raise ValueError('[metrics] allowed_networks: %s' % exc) from exc
        self._warned = False

    def __call__(self, environ, start_response):
        if (environ.get('PATH_INFO', '').rstrip('/') or '/') != self.path:
            return self.application(environ, start_response)
        if not self._allowed(environ.get('REMOTE_ADDR')):
            start_response('403 Forbidden',
                           [('Content-Type', 'text/plain; charset=utf-8')])
            return [b'Metrics are not served to this address ([metrics] '
                    b'allowed_networks).\n']
        if (environ.get('wsgi.multiprocess') and not self._warned
                and not exposition.multiprocess_dir()):
            self._warned = True
            LOG.warning('This WSGI server runs several processes but %s is '
                        'not set: each scrape shows the counters of the '
                        'one process that answers it. Under gunicorn, add '
                        '"-c python:reserveapi.wsgi.gunicorn_config".',
                        exposition.MULTIPROCESS_ENV)
        return prometheus_client.make_wsgi_app(exposition.api_registry())(
            environ, start_response)

    def _allowed(self, address):
        if not self.networks:
            return True
        try:
            address = ipaddress.ip_address(address or '')
        except ValueError:
            return False
        return any(address in network for network in self.networks)
