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

"""Every route the API serves, read from the real pecan controller tree.

The inventory comes from the controllers themselves, as Placement's
tests read its route table: a new endpoint shows up here the day it is
written, whether or not it has a policy rule or an api-ref entry, so the
tests built on it cannot be fooled by what is missing.
"""

import inspect

from pecan import rest

from reserveapi.api.controllers import root

# Routes anyone may call: version discovery.
PUBLIC = frozenset({('GET', '/'), ('GET', '/v1')})
# RestController methods that act on the collection, and on one item of
# it (pecan passes the item's path segments as arguments).
_COLLECTION = {'get': 'GET', 'get_all': 'GET', 'post': 'POST'}
_ITEM = {'get_one': 'GET', 'put': 'PUT', 'patch': 'PATCH',
         'delete': 'DELETE'}


def routes():
    """``(method, path template)`` for every exposed route, sorted.

    Templates name their parameters after the controllers' arguments,
    e.g. ``('PUT', '/v1/aggregates/{aggregate_uuid}/hosts/{host}')``.
    """
    found = set()
    _walk(root.RootController(), '', (), found)
    return sorted(found)


def guarded_routes():
    """``"METHOD /path/{param}"`` for every route behind policy (all but
    version discovery), sorted: the rows of the RBAC matrix and of the
    database-down suite.
    """
    return ['%s %s' % route for route in routes() if route not in PUBLIC]


def _walk(controller, path, parent_args, found):
    for name, method in _COLLECTION.items():
        if _exposed(controller, name):
            found.add((method, path or '/'))
    item_args = ()
    for name, method in _ITEM.items():
        if _exposed(controller, name):
            args = _arguments(controller, name)[len(parent_args):]
            found.add((method, path + ''.join('/{%s}' % arg
                                              for arg in args)))
            if name == 'get_one':
                item_args = tuple(args)
    for action, methods in getattr(controller, '_custom_actions',
                                   {}).items():
        found.update((method, '%s/%s' % (path, action))
                     for method in methods)
    for name, child in _children(controller):
        # pecan nests a child of a REST collection under one item of it.
        prefix = path + ''.join('/{%s}' % arg for arg in item_args)
        _walk(child, '%s/%s' % (prefix, name), parent_args + item_args,
              found)


def _exposed(controller, name):
    method = getattr(controller, name, None)
    return method is not None and getattr(method, 'exposed', False)


def _arguments(controller, name):
    """The method's arguments: parent items' segments, then its own."""
    function = inspect.unwrap(getattr(controller, name))
    return [parameter.name
            for parameter in inspect.signature(function).parameters.values()
            if parameter.name != 'self']


def _children(controller):
    for name in sorted(dir(type(controller))):
        child = getattr(type(controller), name)
        if not name.startswith('_') and isinstance(child,
                                                   rest.RestController):
            yield name, child
