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

"""nova-api's aggregate hook: a paste filter that mirrors host aggregate
membership into the reservation service, without patching Nova.

After Nova answers 2xx to ``POST /os-aggregates/{id}/action`` with
``add_host`` or ``remove_host``, or to ``DELETE /os-aggregates/{id}``, it
tells the service (``PUT``/``DELETE /v1/aggregates/{uuid}/hosts/{host}``,
``DELETE /v1/aggregates/{uuid}``), which puts the aggregate on (or takes
it off) every resource provider of the host. It never changes Nova's
response: the status, headers and body Nova produced go out as they
were. It makes one attempt, bounded by ``[reserveapi] aggregate_timeout``
(connecting and answering), and a failure is one WARNING line; the
service's reconcile from Nova repairs what was missed.

The aggregate's UUID is in Nova's answer from microversion 2.41; for older
callers, and for a delete (whose answer is empty, so before it), the hook
asks the Nova app it wraps with a GET at 2.41.

``api-paste.ini``, right after ``keystonecontext`` in both v2.1 pipelines
(after ``legacy_v2_compatible`` in the legacy one, which hides
microversions from what it wraps)::

    [composite:openstack_compute_api_v21]
    use = call:nova.api.auth:pipeline_factory_v21
    keystone = cors http_proxy_to_wsgi compute_req_id faultwrap request_log
        sizelimit osprofiler authtoken keystonecontext reserveapi_aggregates
        osapi_compute_app_v21

    [composite:openstack_compute_api_v21_legacy_v2_compatible]
    use = call:nova.api.auth:pipeline_factory_v21
    keystone = cors http_proxy_to_wsgi compute_req_id faultwrap request_log
        sizelimit osprofiler authtoken keystonecontext legacy_v2_compatible
        reserveapi_aggregates osapi_compute_app_v21

    [filter:reserveapi_aggregates]
    paste.filter_factory = reserveapi.nova.aggregates:filter_factory
"""

import io
import json
import re
import threading
import time
from urllib import parse

from nova.api.openstack import wsgi as nova_wsgi
import nova.conf
from oslo_log import log as logging

from reserveapi import client
from reserveapi.nova import conf as reserveapi_conf

CONF = nova.conf.CONF
reserveapi_conf.register_opts(CONF)
LOG = logging.getLogger(__name__)

# Aggregates carry their UUID in Nova's API from this microversion on.
UUID_MICROVERSION = '2.41'
ADD_HOST = 'add_host'
REMOVE_HOST = 'remove_host'
DELETE = 'delete'
# /os-aggregates/{id}[/action], after an optional project id segment.
_PATH = re.compile(r'^(?P<prefix>(?:/[^/]+)?)/os-aggregates/(?P<id>[^/]+)'
                   r'(?P<action>/action)?/?$')
# What the GET must not inherit from the request it follows.
_NOT_INHERITED = ('CONTENT_TYPE', 'CONTENT_LENGTH', 'HTTP_CONTENT_TYPE',
                  'HTTP_TRANSFER_ENCODING', 'HTTP_OPENSTACK_API_VERSION',
                  'HTTP_X_OPENSTACK_NOVA_API_VERSION',
                  nova_wsgi.ENV_LEGACY_V2)
_NOT_INHERITED_PREFIXES = ('webob.', 'routes.', 'wsgiorg.')


class _Change:
    """What a request asks Nova to change, and where."""

    def __init__(self, kind, aggregate_id, prefix, host=None):
        self.kind = kind
        self.aggregate_id = aggregate_id
        self.prefix = prefix
        self.host = host
        self.aggregate_uuid = None
        # Why the UUID could not be learned before a delete.
        self.uuid_error = None


class _NoAggregateUuid(Exception):
    """Nova did not tell us the aggregate's UUID."""


def _requested_change(environ):
    """The mirrored change ``environ`` asks for, or None."""
    match = _PATH.match(environ.get('PATH_INFO', ''))
    if match is None:
        return None
    method = environ['REQUEST_METHOD']
    aggregate_id = parse.unquote(match.group('id'))
    prefix = match.group('prefix')
    if method == 'DELETE' and not match.group('action'):
        return _Change(DELETE, aggregate_id, prefix)
    if method != 'POST' or not match.group('action'):
        return None
    try:
        body = json.loads(_read_body(environ))
    except ValueError:
        return None
    if not isinstance(body, dict) or len(body) != 1:
        return None
    ((kind, argument),) = body.items()
    if kind not in (ADD_HOST, REMOVE_HOST) or not isinstance(argument, dict):
        return None
    host = argument.get('host')
    if not isinstance(host, str):
        return None
    return _Change(kind, aggregate_id, prefix, host)


def _read_body(environ):
    """The request body, left in ``environ`` for Nova to read again."""
    length = environ.get('CONTENT_LENGTH')
    if length:
        body = environ['wsgi.input'].read(int(length))
    elif environ.get('wsgi.input_terminated'):
        body = environ['wsgi.input'].read()
    else:
        body = b''
    environ['wsgi.input'] = io.BytesIO(body)
    return body


def _call(application, environ):
    """``(status, body)`` of a WSGI call, its iterable closed."""
    statuses = []

    def start_response(status, headers, exc_info=None):
        statuses.append(status)

    app_iter = application(environ, start_response)
    try:
        body = b''.join(app_iter)
    finally:
        if hasattr(app_iter, 'close'):
            app_iter.close()
    return statuses[-1], body


def _uuid_in(body):
    """The aggregate UUID in Nova's JSON answer (2.41 and later)."""
    try:
        return json.loads(body)['aggregate']['uuid']
    except (ValueError, KeyError, TypeError):
        return None


class AggregateMirror:
    """The paste filter; see the module's docstring."""

    def __init__(self, application, conf=CONF):
        self.application = application
        self.conf = conf
        self._client = None
        self._client_lock = threading.Lock()

    def __call__(self, environ, start_response):
        change = _requested_change(environ)
        if change is None:
            return self.application(environ, start_response)
        # The app changes environ as it routes; the GET starts from this.
        before = dict(environ)
        if change.kind == DELETE:
            # The answer to a delete is empty, and afterwards there is
            # nothing left to ask: learn the UUID now.
            try:
                change.aggregate_uuid = self._ask_nova_uuid(before, change)
            except _NoAggregateUuid as error:
                change.uuid_error = error
        statuses = []

        def capture_status(status, headers, exc_info=None):
            statuses.append(status)
            return start_response(status, headers, exc_info)

        app_iter = self.application(environ, capture_status)
        try:
            body = list(app_iter)
        finally:
            if hasattr(app_iter, 'close'):
                app_iter.close()
        if statuses and statuses[-1].startswith('2'):
            self._mirror(change, before, b''.join(body))
        return body

    def _mirror(self, change, environ, body):
        """One bounded attempt; never raises, warns once on failure."""
        try:
            if change.uuid_error is not None:
                raise change.uuid_error
            if change.aggregate_uuid is None:
                change.aggregate_uuid = (_uuid_in(body)
                                         or self._ask_nova_uuid(environ,
                                                                change))
            answer = self._call_service(change)
        except client.ClientError as error:
            self._warn(change, error.detail or str(error))
        except Exception as error:
            # Whatever it is (a bug included), Nova's answer must go out.
            self._warn(change, '%s: %s' % (type(error).__name__, error))
        else:
            LOG.debug('Mirrored: %s; aggregate %s, host %s: %s',
                      _what(change), change.aggregate_uuid,
                      change.host or '-',
                      (answer or {}).get('state', 'done'))

    def _call_service(self, change):
        """The service's answer, within ``[reserveapi] aggregate_timeout``
        however long the version negotiation (once per process) took.
        """
        timeout = self.conf.reserveapi.aggregate_timeout
        deadline = time.monotonic() + timeout
        mirror = self._mirror_client(timeout)
        # Negotiated once per process (bounded by the session's timeout,
        # which is ours); afterwards this costs nothing.
        mirror.api_version  # noqa: B018
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError('no time left after the version negotiation '
                               '(%.1f s)' % timeout)
        if change.kind == ADD_HOST:
            return mirror.add_host(change.aggregate_uuid, change.host,
                                   timeout=left)
        if change.kind == REMOVE_HOST:
            return mirror.remove_host(change.aggregate_uuid, change.host,
                                      timeout=left)
        return mirror.delete_aggregate(change.aggregate_uuid, timeout=left)

    def _mirror_client(self, timeout):
        """One client per process: its token and connections are reused."""
        with self._client_lock:
            if self._client is None:
                adapter = reserveapi_conf.load_adapter(self.conf,
                                                       timeout=timeout)
                self._client = client.AggregateMirrorClient(adapter,
                                                            retries=0)
            return self._client

    def _ask_nova_uuid(self, environ, change):
        """The aggregate's UUID from ``GET /os-aggregates/{id}`` at 2.41,
        asked of the app this filter wraps with the caller's context.
        """
        environ = {key: value for key, value in environ.items()
                   if key not in _NOT_INHERITED
                   and not key.startswith(_NOT_INHERITED_PREFIXES)}
        environ.update({
            'REQUEST_METHOD': 'GET',
            'PATH_INFO': '%s/os-aggregates/%s' % (
                change.prefix, parse.quote(change.aggregate_id, safe='')),
            'QUERY_STRING': '',
            'CONTENT_LENGTH': '0',
            'wsgi.input': io.BytesIO(),
            'HTTP_ACCEPT': 'application/json',
            'HTTP_OPENSTACK_API_VERSION': 'compute %s' % UUID_MICROVERSION,
        })
        try:
            status, body = _call(self.application, environ)
        except Exception as error:
            # Nova's own request must still go on.
            raise _NoAggregateUuid('GET of aggregate %s failed: %s'
                                   % (change.aggregate_id, error))
        uuid = _uuid_in(body) if status.startswith('200') else None
        if uuid is None:
            raise _NoAggregateUuid('GET of aggregate %s at microversion %s '
                                   'answered %s' % (change.aggregate_id,
                                                    UUID_MICROVERSION,
                                                    status))
        return uuid

    def _warn(self, change, reason):
        uuid = change.aggregate_uuid or 'unknown (Nova id %s)' % (
            change.aggregate_id)
        LOG.warning('Reservation service not told that %s; aggregate %s, '
                    'host %s: %s. Nova\'s change stands; the service\'s '
                    'reconcile from Nova repairs the mirror.',
                    _what(change), uuid, change.host or '-',
                    ' '.join(str(reason).split()))


def _what(change):
    return {ADD_HOST: 'a host joined an aggregate',
            REMOVE_HOST: 'a host left an aggregate',
            DELETE: 'an aggregate was deleted'}[change.kind]


def filter_factory(global_conf, **local_conf):
    """paste.deploy: ``paste.filter_factory =
    reserveapi.nova.aggregates:filter_factory``.
    """
    def make_filter(application):
        return AggregateMirror(application)
    return make_filter
