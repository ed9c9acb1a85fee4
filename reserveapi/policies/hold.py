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

"""Policy rules for ``/v1/holds``: nodes promised to a project over a
window of time."""

from reserveapi.policies import base

CREATE = 'reserveapi:hold:create'
LIST = 'reserveapi:hold:list'
LIST_ALL = 'reserveapi:hold:list_all'
GET = 'reserveapi:hold:get'
UPDATE = 'reserveapi:hold:update'
CANCEL = 'reserveapi:hold:cancel'

COLLECTION = '/v1/holds'
RESOURCE = '/v1/holds/{hold_uuid}'

rules = [
    base.rule(
        CREATE, base.ADMIN_OR_SERVICE,
        'Hold nodes for a project from a start to an end: checked on the '
        "caller's project, then on the hold's.",
        'POST', COLLECTION),
    base.rule(
        LIST, base.ADMIN_SERVICE_OR_PROJECT_READER,
        "List holds (a reader sees its project's).",
        'GET', COLLECTION),
    base.rule(
        LIST_ALL, base.ADMIN_OR_SERVICE,
        'List the holds of every project: who the rule refuses sees only '
        "its own project's, whatever project_id it asks for.",
        'GET', COLLECTION),
    base.rule(
        GET, base.ADMIN_SERVICE_OR_PROJECT_READER,
        "Show a hold (a reader: its project's; another is a 404).",
        'GET', RESOURCE),
    base.rule(
        UPDATE, base.ADMIN_OR_SERVICE,
        "Move a hold's end or change its amount: a hold that grows is "
        'admitted again.',
        'PATCH', RESOURCE),
    base.rule(
        CANCEL, base.ADMIN_SERVICE_OR_PROJECT_MANAGER,
        "Cancel a hold: its nodes are free at once (a manager: its "
        "project's).",
        'DELETE', RESOURCE),
]


def list_rules():
    return rules
