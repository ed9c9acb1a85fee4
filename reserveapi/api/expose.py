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
parameters by name. Bodies are converted by ``api.body`` with WSME
types; we call it ourselves instead of going through ``wsexpose``
because that swallows exceptions before pecan's error hook can render
them in the API-WG format.
"""

import functools

import pecan
from pecan import util as pecan_util
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
        wrapped.media_types = tuple(
            media_types or body_mod.JSON_MEDIA_TYPES) if body else ()
        wrapped.min_version = min_version
        wrapped.signature_of = method
        return pecan.expose('json', content_type='application/json')(wrapped)

    return decorate


def remember_argspecs():
    """Have pecan look at each controller's signature once, not per call.

    pecan (1.8) routes every request through ``pecan.util.getargspec``
    several times, and its ``getargspec`` builds a new namedtuple class
    on every call: about 1.4 ms of CPU per POST. A function's signature
    never changes, so the answer is remembered per function (a bound
    method and its function have the same one). Safe to call again.
    """
    original = getattr(pecan_util, '_getargspec', None)
    if original is None or getattr(original, 'remembers', False):
        return

    @functools.cache
    def of_function(function):
        return original(function)

    def getargspec(method):
        return of_function(getattr(method, '__func__', method))

    getargspec.remembers = True
    pecan_util._getargspec = getargspec
