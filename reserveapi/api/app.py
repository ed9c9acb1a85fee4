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

"""Builds the WSGI application: pecan app plus middleware, in code."""

import importlib
import logging

from keystonemiddleware import auth_token
from oslo_log import log
from oslo_middleware import cors
from oslo_middleware import healthcheck
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id
from oslo_middleware import sizelimit
import pecan

from reserveapi import compat
from reserveapi.api import errors
from reserveapi.api import hooks
from reserveapi.api import metrics
from reserveapi.api import service_token
from reserveapi.common import context
from reserveapi.common import exception
import reserveapi.conf
from reserveapi.peers import credentials

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF


HEALTHCHECK_PATH = '/healthcheck'
PUBLIC_PATHS = ('/', '/v1')
"""Version discovery, which needs no token, as in other OpenStack
services: a client reads it to find the microversions before it
authenticates."""


def _utf8_path(app):
    """A path that is not UTF-8 is no route: answer 404 before pecan,
    which would fail decoding it.
    """

    def dispatch(environ, start_response):
        try:
            environ.get('PATH_INFO', '').encode('latin-1').decode('utf-8')
        except UnicodeError:
            raise exception.NotFound('No such resource: the path is not '
                                     'valid UTF-8.')
        return app(environ, start_response)

    return dispatch


def _with_healthcheck(app, healthcheck_app):
    """oslo.middleware's healthcheck is an app: give it its own path."""

    def dispatch(environ, start_response):
        if environ.get('PATH_INFO', '').rstrip('/') == HEALTHCHECK_PATH:
            return healthcheck_app(environ, start_response)
        return app(environ, start_response)

    return dispatch


def _own_request_context(app):
    """Every log line of a request carries that request's id, whichever
    code logs it: the healthcheck and the middleware too, which run
    before (or without) the context the hooks build. Otherwise a line
    would carry the id the thread's previous request left behind.
    """

    def dispatch(environ, start_response):
        context.RequestContext(
            request_id=environ.get(request_id.ENV_REQUEST_ID),
            overwrite=True)
        return app(environ, start_response)

    return dispatch


def check_auth_at_startup():
    """With ``[api] auth_strategy = keystone``, auth_token needs a service
    user in ``[keystone_authtoken]`` (or the section its auth_section
    names) to validate tokens; without one every request would be a 500.

    :raises: exception.MissingCredentials naming the missing options.
    """
    if CONF.api.auth_strategy != 'keystone':
        return
    group = CONF.keystone_authtoken.auth_section or 'keystone_authtoken'
    missing = credentials.missing_options(group)
    if missing:
        raise exception.MissingCredentials(
            '%s [api] auth_strategy is keystone, and auth_token needs them '
            'to validate tokens (or set [api] auth_strategy = noauth, for '
            'development only).' % credentials.describe_missing(group,
                                                                 missing))


def _audit_map_file():
    """The audit map's path, read once to know it parses: the middleware
    would otherwise fail on the first request, or log its error and
    audit nothing.

    :raises: exception.ConfigurationError saying why it cannot be used.
    """
    audit = importlib.import_module('keystonemiddleware.audit')
    name = CONF.audit.audit_map_file
    path = CONF.find_file(name)
    if path is None:
        raise exception.ConfigurationError(
            reason='[audit] audit_map_file %s is not found (as a path, nor '
                   'beside the configuration files, nor in the '
                   'configuration directories), and [audit] enabled is '
                   'true. Copy etc/reserveapi/api_audit_map.conf there, or '
                   'set [audit] enabled = false.' % name)
    try:
        audit.OpenStackAuditApi(path)
    except (OSError, audit.PycadfAuditApiConfigError) as exc:
        raise exception.ConfigurationError(
            reason='[audit] audit_map_file %s cannot be read, and [audit] '
                   'enabled is true: %s' % (path, ' '.join(str(exc).split())))
    return path


def check_audit_at_startup():
    """With ``[audit] enabled``, the API does not start without a map.

    :raises: exception.ConfigurationError naming the file and why.
    """
    if CONF.audit.enabled:
        _audit_map_file()


def _audited(app):
    """With ``[audit] enabled``, keystonemiddleware's audit middleware,
    which sends a CADF event before and after each request it does not
    ignore; imported only then, since it loads oslo.messaging.
    """
    if not CONF.audit.enabled:
        return app
    audit = importlib.import_module('keystonemiddleware.audit')
    return audit.AuditMiddleware(
        app, audit_map_file=_audit_map_file(),
        ignore_req_list=','.join(CONF.audit.ignore_req_list),
        oslo_config_config=CONF)


def _public_version_discovery(app, authenticated_app):
    """``GET /`` and ``GET /v1`` skip auth_token; every other request
    goes through it.
    """

    def dispatch(environ, start_response):
        path = environ.get('PATH_INFO', '') or '/'
        if path != '/':
            path = path.rstrip('/') or '/'
        if environ.get('REQUEST_METHOD') == 'GET' and path in PUBLIC_PATHS:
            return app(environ, start_response)
        return authenticated_app(environ, start_response)

    return dispatch


def setup_app(loopback_only=False):
    """The pecan app wrapped, outermost first, in proxy-header handling,
    request ids, the request's own logging context, (with [metrics]
    enabled) the metrics endpoint and request timing, CORS, healthcheck,
    error formatting, body size limit, (with auth_strategy = keystone)
    auth_token, (with [audit] enabled) the audit middleware, and the
    service token check: the audit sees the user auth_token validated,
    and the requests the service token check refuses.

    ``loopback_only``: the caller serves on a loopback address only (the
    development server, the demo), so noauth is no open door to warn of.
    """
    compat.remember_pecan_argspecs()
    app = pecan.make_app(
        'reserveapi.api.controllers.root.RootController',
        hooks=[hooks.RouteHook(),
               hooks.ContextHook(CONF.api.auth_strategy),
               hooks.MicroversionHook(),
               hooks.ErrorHook()],
        force_canonical=False,
        guess_content_type_from_ext=False,
        debug=False,
    )
    app = _utf8_path(app)
    if CONF.api.auth_strategy == 'keystone':
        app = _public_version_discovery(app, auth_token.AuthProtocol(
            _audited(service_token.ServiceTokenCheck(app)),
            {'oslo_config_config': CONF}))
    else:
        LOG.log(logging.INFO if loopback_only else logging.WARNING,
                'auth_strategy is noauth: every caller is an admin.')
        app = _audited(app)
    app = sizelimit.RequestBodySizeLimiter(app, CONF)
    app = errors.ErrorFormatter(app)
    app = _with_healthcheck(app, healthcheck.Healthcheck(None, CONF))
    app = cors.CORS(app, CONF)
    if CONF.metrics.enabled:
        app = metrics.RequestMetrics(app, fixed_paths=(HEALTHCHECK_PATH,))
        app = metrics.MetricsEndpoint(app, CONF.metrics.path,
                                      CONF.metrics.allowed_networks)
    app = _own_request_context(app)
    app = request_id.RequestId(app)
    return http_proxy_to_wsgi.HTTPProxyToWSGI(app, CONF)
