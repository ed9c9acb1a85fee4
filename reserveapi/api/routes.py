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

"""Every route the API serves, read from the pecan controller tree, and
the match each request must make before pecan routes it.

pecan's RestController routing is lenient: it turns extra path segments
into positional arguments (``GET /foo/v1/capacity`` was capacity for
host ``foo``), looks for children anywhere in the path
(``/v1/v1/v1/reservations``) and lets ``?_method=`` change the method.
So a request is first matched here against the route templates the
controllers declare (``expose.expose``): a path that is no template is a
404, a method the path does not take a 405; the controller method then
receives the template's parameters by name, not pecan's guesses. A
method whose path parameters are not its template's is refused when the
table is built.
"""

import dataclasses
import functools
import re
import urllib.parse

from pecan import rest
import webob.exc

from reserveapi.api import microversion

# RestController methods that act on the collection, and on one item of
# it (pecan passes the item's path segments as arguments).
_COLLECTION = {'get': 'GET', 'get_all': 'GET', 'post': 'POST'}
_ITEM = {'get_one': 'GET', 'put': 'PUT', 'patch': 'PATCH',
         'delete': 'DELETE'}
REST_OF_PATH = frozenset({'host'})
"""Path parameters that take the rest of the path. A client quotes a
host name's ``/`` as ``%2F``, which the WSGI server decodes into a
separator: the route still matches, and the host name's validator
answers 400 saying that a host name cannot contain ``/``."""


@dataclasses.dataclass(frozen=True)
class Route:
    """One method on one path template, e.g. ``PUT
    /v1/aggregates/{aggregate_uuid}/hosts/{host}``.
    """

    method: str
    template: str
    function: object
    pattern: re.Pattern = dataclasses.field(compare=False)

    @property
    def path_params(self):
        return tuple(re.findall(r'{(\w+)}', self.template))

    @property
    def query(self):
        """Query parameter name → the type that validates it."""
        return self.function.query

    @property
    def media_types(self):
        """The body's media types; empty when the route takes no body."""
        return self.function.media_types

    @property
    def min_version(self):
        """The microversion that added the route; None: every one."""
        return self.function.min_version


def routes():
    """Every exposed Route, sorted by template and method."""
    return list(_table())


@functools.lru_cache(maxsize=1)
def _table():
    from reserveapi.api.controllers import root

    found = {}
    _walk(root.RootController(), '', (), found)
    return tuple(sorted(found.values(),
                        key=lambda route: (route.template, route.method)))


def match(method, path, version_of):
    """The Route for ``method`` on ``path`` and its path parameters.

    ``version_of()`` is the request's microversion, asked for only when a
    route of the path is newer than some: a route newer than the request
    is not there.

    :raises: webob HTTPNotFound when no template matches the path,
        HTTPMethodNotAllowed (with ``allow``) when none takes the method;
        what ``version_of`` raises.
    """
    if path != '/' and path.endswith('/'):
        path = path[:-1]
    matches = [(route, found) for route in _table()
               for found in [route.pattern.fullmatch(path)] if found]
    newer = []
    if any(route.min_version for route, _found in matches):
        version = version_of()
        newer = [route for route, _found in matches
                 if route.min_version and version < route.min_version]
        matches = [(route, found) for route, found in matches
                   if route not in newer]
    for route, found in matches:
        if route.method == method:
            return route, found.groupdict()
    newer_here = [route for route in newer if route.method == method]
    if newer_here:
        raise webob.exc.HTTPNotFound(detail=_newer_than(
            newer_here[0], version))
    if not matches:
        raise webob.exc.HTTPNotFound(
            detail='No such resource: %s. GET / lists the API versions.'
            % urllib.parse.quote(path, safe='/:@,;=+'))
    allowed = sorted({route.method for route, _found in matches})
    error = webob.exc.HTTPMethodNotAllowed(
        detail='%s is not allowed on %s; it takes %s.' % (
            method if method.isalnum() else 'This method',
            matches[0][0].template, ', '.join(allowed)))
    error.allow = allowed
    raise error


def _newer_than(route, version):
    """The OpenStack answer to a route newer than the request, a 404,
    with the microversion that has it."""
    return ('%s %s needs microversion %s or later; this request asked '
            'for %s: send "%s: %s".' % (
                route.method, route.template, route.min_version, version,
                microversion.HEADER,
                microversion.header_value(route.min_version)))


def template_for(path):
    """The template of the routes ``path`` matches, whatever their
    method (``/v1/reservations/{reservation_uuid}``), or None: how a
    request that never reached a controller (a 405, a 401 from
    auth_token) is counted without its path."""
    if path != '/' and path.endswith('/'):
        path = path[:-1]
    for route in _table():
        if route.pattern.fullmatch(path):
            return route.template
    return None


def _add(found, method, template, function):
    """:raises: TypeError when the function's path parameters are not the
    template's."""
    pattern = re.compile(re.sub(
        r'\\{(\w+)\\}',
        lambda param: '(?P<%s>%s)' % (
            param.group(1),
            '.+' if param.group(1) in REST_OF_PATH else '[^/]+'),
        re.escape(template)))
    route = Route(method, template, function, pattern)
    if route.path_params != function.path_params:
        raise TypeError(
            '%s %s: %s() takes the path parameters (%s), not the '
            "template's (%s)." % (method, template, function.__qualname__,
                                  ', '.join(function.path_params),
                                  ', '.join(route.path_params)))
    found[(method, template)] = route


def _walk(controller, path, parent_args, found):
    for name, method in _COLLECTION.items():
        if _exposed(controller, name):
            _add(found, method, path or '/', _function(controller, name))
    item_args = ()
    for name, method in _ITEM.items():
        if _exposed(controller, name):
            args = _function(controller, name).path_params[
                len(parent_args):]
            _add(found, method,
                 path + ''.join('/{%s}' % arg for arg in args),
                 _function(controller, name))
            if name == 'get_one':
                item_args = tuple(args)
    for action, methods in getattr(controller, '_custom_actions',
                                   {}).items():
        for method in methods:
            _add(found, method, '%s/%s' % (path, action),
                 _function(controller, action))
    for name, child in _children(controller):
        # pecan nests a child of a REST collection under one item of it.
        prefix = path + ''.join('/{%s}' % arg for arg in item_args)
        _walk(child, '%s/%s' % (prefix, name), parent_args + item_args,
              found)


def _exposed(controller, name):
    method = getattr(controller, name, None)
    return method is not None and getattr(method, 'exposed', False)


def _function(controller, name):
    return getattr(type(controller), name)


def _children(controller):
    for name in sorted(dir(type(controller))):
        child = getattr(type(controller), name)
        if not name.startswith('_') and isinstance(child,
                                                   rest.RestController):
            yield name, child
