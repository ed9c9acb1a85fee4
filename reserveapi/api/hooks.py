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

"""Pecan hooks: the route check, request context, microversion, errors."""

from pecan import hooks

from reserveapi.api import body
from reserveapi.api import errors
from reserveapi.api import expose
from reserveapi.api import microversion
from reserveapi.api import query
from reserveapi.api import routes
from reserveapi.common import context
from reserveapi.common import exception


class RouteHook(hooks.PecanHook):
    """Matches the request with a route before pecan routes it, and
    checks what the route takes: its path parameters' place, its query
    parameters and its body. Nothing a route does not document reaches a
    controller.
    """

    def on_route(self, state):
        request = state.request
        route, path_args = routes.match(
            request.method, _path(request),
            lambda: microversion.from_headers(request.headers))
        arguments = dict(path_args)
        arguments.update(query.parse(request.environ.get('QUERY_STRING', ''),
                                     route.query))
        if route.media_types:
            body.parse(request, route.media_types)
        elif request.body:
            raise exception.Invalid(reason='this request takes no body.')
        request.environ[expose.ROUTE_KEY] = route
        request.environ[expose.ARGUMENTS_KEY] = arguments


def _path(request):
    """PATH_INFO as text: WSGI hands it over as bytes read as latin-1
    (the application refused any that are not UTF-8).
    """
    raw = request.environ.get('PATH_INFO', '') or '/'
    return raw.encode('latin-1').decode('utf-8')


class ContextHook(hooks.PecanHook):
    """Builds ``request.context`` from auth_token's headers."""

    def __init__(self, auth_strategy):
        self.noauth = auth_strategy == 'noauth'

    def before(self, state):
        environ = state.request.environ
        if self.noauth:
            state.request.context = context.RequestContext.for_noauth(environ)
        else:
            state.request.context = context.RequestContext.from_environ(
                environ)


class MicroversionHook(hooks.PecanHook):
    """Parses OpenStack-API-Version and echoes it on the response."""

    def before(self, state):
        state.request.version = microversion.from_headers(
            state.request.headers)

    def after(self, state):
        version = getattr(state.request, 'version', None)
        if version is not None:
            state.response.headers[microversion.HEADER] = (
                microversion.header_value(
                    version, microversion.requested_service_type(
                        state.request.headers)))
        state.response.headers['Vary'] = microversion.HEADER


class ErrorHook(hooks.PecanHook):
    """Renders every exception, including pecan's 404/405, as API-WG."""

    def on_error(self, state, exc):
        return errors.from_exception(exc, state.request.environ)
