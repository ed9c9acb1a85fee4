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

Bodies are converted by ``api.body`` with WSME types; we call it
ourselves instead of going through ``wsexpose`` because that swallows
exceptions before pecan's error hook can render them in the API-WG
format.
"""

import functools
import inspect

import pecan
from pecan import util as pecan_util
import webob.exc

from reserveapi.common import exception


def _query_arguments(signature, controller, path_args, kwargs):
    """The query parameters to pass on; a 404 or 400 if they do not fit.

    pecan also hands over the fields of a JSON body as keyword arguments;
    only the query string's are wanted. Path segments the method does not
    take mean no such resource.
    """
    query = {key: value for key, value in kwargs.items()
             if key in pecan.request.GET}
    unknown = sorted(set(query) - set(signature.parameters))
    if unknown:
        raise exception.Invalid(reason='unknown query parameter(s) %s.'
                                % ', '.join(unknown))
    try:
        signature.bind(controller, *path_args, **query)
    except TypeError:
        raise webob.exc.HTTPNotFound()
    return query


def expose(status=200):
    """Expose a JSON method; ``status`` is its usual success status.

    A method may still set ``pecan.response.status`` itself.
    """

    def decorate(method):
        signature = inspect.signature(method)

        @functools.wraps(method)
        def wrapped(self, *args, **kwargs):
            query = _query_arguments(signature, self, args, kwargs)
            pecan.response.status = status
            result = method(self, *args, **query)
            if result is None and pecan.response.status_int == 204:
                # Returning the response tells pecan the body is done;
                # rendering None would send "null" with a 204.
                return pecan.response
            return result

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
