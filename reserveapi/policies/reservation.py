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

"""Policy rules for ``/v1/reservations``."""

from reserveapi.policies import base

CREATE = 'reserveapi:reservation:create'
LIST = 'reserveapi:reservation:list'
LIST_ALL = 'reserveapi:reservation:list_all'
GET = 'reserveapi:reservation:get'
UPDATE = 'reserveapi:reservation:update'
DELETE = 'reserveapi:reservation:delete'

COLLECTION = '/v1/reservations'
RESOURCE = '/v1/reservations/{reservation_uuid}'

rules = [
    base.rule(
        CREATE, base.ADMIN_OR_SERVICE,
        'Reserve a node for an instance.',
        'POST', COLLECTION),
    base.rule(
        LIST, base.ADMIN_SERVICE_OR_PROJECT_READER,
        "List reservations (a reader sees its project's).",
        'GET', COLLECTION),
    base.rule(
        LIST_ALL, base.ADMIN_OR_SERVICE,
        'List the reservations of every project.',
        'GET', COLLECTION),
    base.rule(
        GET, base.ADMIN_SERVICE_OR_PROJECT_READER,
        'Show a reservation.',
        'GET', RESOURCE),
    base.rule(
        UPDATE, base.ADMIN_OR_SERVICE,
        'Take a reservation over for another host, or mark it '
        'active once the instance is deployed.',
        'PATCH', RESOURCE),
    base.rule(
        DELETE, base.ADMIN_OR_SERVICE,
        'Release a reservation.',
        'DELETE', RESOURCE),
]


def list_rules():
    return rules
