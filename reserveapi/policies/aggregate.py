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

"""Policy rules for ``/v1/aggregates``, the aggregate mirror."""

from reserveapi.policies import base

LIST = 'reserveapi:aggregate:list'
GET = 'reserveapi:aggregate:get'
ADD_HOST = 'reserveapi:aggregate:add_host'
REMOVE_HOST = 'reserveapi:aggregate:remove_host'
DELETE = 'reserveapi:aggregate:delete'
SYNC = 'reserveapi:aggregate:sync'

COLLECTION = '/v1/aggregates'
RESOURCE = '/v1/aggregates/{aggregate_uuid}'
HOST = '/v1/aggregates/{aggregate_uuid}/hosts/{host}'

rules = [
    base.rule(
        LIST, base.ADMIN_OR_SERVICE,
        'List mirrored aggregates and their sync state.',
        'GET', COLLECTION),
    base.rule(
        GET, base.ADMIN_OR_SERVICE,
        'Show a mirrored aggregate and its sync state.',
        'GET', RESOURCE),
    base.rule(
        ADD_HOST, base.ADMIN_OR_SERVICE,
        "Add a host to an aggregate: every resource provider "
        "of the host joins it in Placement.",
        'PUT', HOST),
    base.rule(
        REMOVE_HOST, base.ADMIN_OR_SERVICE,
        "Remove a host from an aggregate: every resource "
        "provider of the host leaves it in Placement.",
        'DELETE', HOST),
    base.rule(
        DELETE, base.ADMIN_OR_SERVICE,
        'Delete an aggregate: every resource provider leaves '
        'it in Placement.',
        'DELETE', RESOURCE),
    base.rule(
        SYNC, base.ADMIN_OR_SERVICE,
        'Compare Placement with a desired state of the '
        'aggregates and fix the differences.',
        'POST', COLLECTION + '/sync'),
]


def list_rules():
    return rules
