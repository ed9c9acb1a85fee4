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

The inventory comes from the controllers themselves
(``reserveapi.api.routes``, which the API also matches every request
against), as Placement's tests read its route table: a new endpoint
shows up here the day it is written, whether or not it has a policy
rule or an api-ref entry, so the tests built on it cannot be fooled by
what is missing.
"""

from reserveapi.api import routes as api_routes

# Routes anyone may call: version discovery.
PUBLIC = frozenset({('GET', '/'), ('GET', '/v1')})


def routes():
    """``(method, path template)`` for every exposed route, sorted.

    Templates name their parameters after the controllers' arguments,
    e.g. ``('PUT', '/v1/aggregates/{aggregate_uuid}/hosts/{host}')``.
    """
    return sorted((route.method, route.template)
                  for route in api_routes.routes())


def guarded_routes():
    """``"METHOD /path/{param}"`` for every route behind policy (all but
    version discovery), sorted: the rows of the RBAC matrix and of the
    database-down suite.
    """
    return ['%s %s' % route for route in routes() if route not in PUBLIC]


def takes_body(method, template):
    """Whether the route reads a JSON body."""
    return any(route.media_types for route in api_routes.routes()
               if (route.method, route.template) == (method, template))


def version_headers(method, template):
    """The microversion header a route newer than 1.0 needs to exist:
    its own version; no header for the others."""
    for route in api_routes.routes():
        if ((route.method, route.template) == (method, template)
                and route.min_version is not None):
            return {'OpenStack-API-Version': 'baremetal-reservation %s'
                    % (route.min_version,)}
    return {}
