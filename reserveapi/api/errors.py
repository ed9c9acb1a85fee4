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

"""Errors in the API-WG format, whoever raised them.

Our exceptions and pecan's routing errors are rendered by the error hook;
``ErrorFormatter`` rewrites what the middleware below it answers on its
own (auth_token's 401, the body size limiter's 413, ...), so that every
error a client sees has the same shape.
"""

import http
import json
import re

from oslo_log import log
import webob
import webob.exc

from reserveapi.api import expose
from reserveapi.api import microversion
from reserveapi.common import exception
from reserveapi.common import outages
import reserveapi.conf

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF
REQUEST_ID_KEY = 'openstack.request_id'
RETRY_AFTER_SECONDS = 2
"""Sent with every 503. A database or peer restart usually takes a few
seconds; keystoneauth1 (our client included) waits this long between its
retries of a 503."""

OUTAGES = outages.OutageLog(LOG, '%s')
"""5xx answers by route (``POST /v1/reservations``): the first logged
with its cause, then at most one line a minute, until the route answers
again. A database outage would otherwise log every request refused."""
FAILURE_KEY = 'reserveapi.failure'
"""The error a 5xx answered, for ErrorFormatter to log once the
exception is handled (oslo.log would repeat it in the line)."""


def _subject(environ):
    """``POST /v1/reservations``: the route a request took, never its
    path (one outage per route, however many paths fail)."""
    route = environ.get(expose.ROUTE_KEY)
    if route is None:
        return 'A request before routing'
    return '%s %s' % (route.method, route.template)


def _generic_code(status):
    """``reserveapi.not_found`` for a 404: a stable code for any status."""
    phrase = http.HTTPStatus(status).phrase
    return 'reserveapi.' + re.sub(r'[^a-z0-9]+', '_',
                                  phrase.lower()).strip('_')


def error_response(status, code, detail, request_id, headers=None):
    body = {'errors': [{
        'status': status,
        'code': code,
        'title': http.HTTPStatus(status).phrase,
        'detail': detail,
        'request_id': request_id,
    }]}
    response = webob.Response(status=status, json_body=body)
    response.headers.update(headers or {})
    response.headers['Vary'] = microversion.HEADER
    return response


def _response_for(exc, request_id):
    headers = ({'Retry-After': str(RETRY_AFTER_SECONDS)}
               if exc.status == 503 else None)
    return error_response(exc.status, exc.code, exc.detail, request_id,
                          headers)


def from_exception(exc, environ):
    """An API-WG response for ``exc``; unexpected exceptions become 500.

    A 503 (the database or a peer is down) says when to retry.
    """
    request_id = environ.get(REQUEST_ID_KEY)
    if isinstance(exc, exception.ReserveapiException):
        if exc.status >= 500:
            environ[FAILURE_KEY] = exc
        return _response_for(exc, request_id)
    if isinstance(exc, webob.exc.HTTPException):
        headers = {}
        if getattr(exc, 'allow', None):
            headers['Allow'] = ', '.join(exc.allow)
        detail = exc.detail or '%s.' % http.HTTPStatus(exc.code).description
        if exc.code == 413:
            detail = _too_large()
        return error_response(exc.code, _generic_code(exc.code), detail,
                              request_id, headers)
    LOG.exception('Unexpected error while serving %s %s',
                  environ.get('REQUEST_METHOD'), environ.get('PATH_INFO'))
    return error_response(500, exception.ReserveapiException.code,
                          exception.ReserveapiException.msg_fmt, request_id)


def _too_large():
    return ('The request body is larger than the %d bytes this service '
            'accepts.' % CONF.oslo_middleware.max_request_body_size)


def _is_api_wg(response):
    if response.content_type != 'application/json':
        return False
    try:
        return 'errors' in json.loads(response.body)
    except ValueError:
        return False


def _detail_of(response):
    """One readable sentence from a foreign error body (JSON, plain text
    or HTML), without the status line webob repeats in it; None when it
    says nothing more than the status.
    """
    if response.status_code == 413:
        return _too_large()
    text = response.text
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        inner = data.get('error', data)
        if isinstance(inner, dict):
            text = str(inner.get('message') or inner.get('description')
                       or inner.get('title') or '')
    text = re.sub(r'<[^>]+>', ' ', text)
    phrase = http.HTTPStatus(response.status_code).phrase
    text = re.sub(r'(%d\s+)?%s' % (response.status_code, re.escape(phrase)),
                  ' ', text)
    text = re.sub(r'\(\s*(%s)?\s*\)', ' ', text)
    text = ' '.join(text.split()).strip(' .')
    return text + '.' if text else None


class ErrorFormatter:
    """WSGI middleware: any other 4xx/5xx body becomes API-WG JSON, and
    the outages of a route are logged (``OUTAGES``)."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        request = webob.Request(environ)
        try:
            response = request.get_response(self.application)
        except Exception as exc:
            response = from_exception(exc, environ)
        failure = environ.get(FAILURE_KEY)
        if failure is not None:
            OUTAGES.failed(_subject(environ), failure)
        elif OUTAGES.active and response.status_code < 500:
            OUTAGES.succeeded(_subject(environ))
        if response.status_code >= 400 and not _is_api_wg(response):
            status = response.status_code
            headers = {name: value for name, value in response.headers.items()
                       if name.lower() in ('www-authenticate', 'allow',
                                           'retry-after')}
            response = error_response(
                status, _generic_code(status),
                _detail_of(response)
                or '%s.' % http.HTTPStatus(status).description,
                environ.get(REQUEST_ID_KEY), headers)
        return response(environ, start_response)
