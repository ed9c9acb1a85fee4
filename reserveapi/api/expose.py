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

"""The one decorator every controller method uses.

It declares what a route takes besides its path: its query parameters
with the type that validates each, and whether it takes a JSON body.
``hooks.RouteHook`` checks all of it before pecan routes the request
(``api/routes.py``); the method then receives its path and query
parameters by name. Its parameters are its path's (positional, without a
default) and the query parameters it declares: any other is refused when
the method is defined, so that none becomes a path segment by mistake.
Bodies are converted by ``api.body`` with WSME types; we call it
ourselves instead of going through ``wsexpose`` because that swallows
exceptions before pecan's error hook can render them in the API-WG
format.
"""

import functools
import inspect

import pecan
import webob.exc

from reserveapi.api import body as body_mod

ROUTE_KEY = 'reserveapi.route'
ARGUMENTS_KEY = 'reserveapi.arguments'


def expose(status=200, query=None, body=False, media_types=None,
           min_version=None):
    """Expose a JSON method; ``status`` is its usual success status.

    ``query`` maps each query parameter the method takes to the type
    that validates it (``api/types.py``); ``body`` says it reads a JSON
    body, of one of ``media_types`` (JSON by default). A route new in a
    microversion names it (``min_version``): below it, the route does
    not exist. A method may still set ``pecan.response.status`` itself.

    :raises: TypeError when a parameter of the method is neither a path
        parameter nor a declared query parameter, or a declared query
        parameter is none of the method's.
    """

    def decorate(method):

        @functools.wraps(method)
        def wrapped(self, *_pecan_args, **_pecan_kwargs):
            route = pecan.request.environ.get(ROUTE_KEY)
            if route is None or route.function is not wrapped:
                # pecan chose another method than the route's: never
                # for a request RouteHook let through.
                raise webob.exc.HTTPNotFound()
            pecan.response.status = status
            result = method(self, **pecan.request.environ[ARGUMENTS_KEY])
            if result is None and pecan.response.status_int == 204:
                # Returning the response tells pecan the body is done;
                # rendering None would send "null" with a 204.
                return pecan.response
            return result

        wrapped.query = dict(query or {})
        wrapped.path_params = _path_params(method, wrapped.query)
        wrapped.media_types = tuple(
            media_types or body_mod.JSON_MEDIA_TYPES) if body else ()
        wrapped.min_version = min_version
        return pecan.expose('json', content_type='application/json')(wrapped)

    return decorate


def _path_params(method, query):
    """The names of ``method``'s path parameters, in order: after
    ``self``, those that are positional, have no default and are not
    in ``query``.

    :raises: TypeError
    """
    parameters = list(inspect.signature(method).parameters.values())[1:]
    for parameter in parameters:
        if parameter.name not in query and (
                parameter.kind is not parameter.POSITIONAL_OR_KEYWORD
                or parameter.default is not parameter.empty):
            raise TypeError(
                '%s(): parameter %s is neither a path parameter '
                '(positional, without a default) nor a query parameter '
                '(declared in expose(query=...)).'
                % (method.__qualname__, parameter.name))
    undeclared = sorted(set(query) - {parameter.name
                                      for parameter in parameters})
    if undeclared:
        raise TypeError('%s(): expose(query=...) declares %s, which it '
                        'does not take.' % (method.__qualname__,
                                            ', '.join(undeclared)))
    return tuple(parameter.name for parameter in parameters
                 if parameter.name not in query)
