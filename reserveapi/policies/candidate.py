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

"""Policy rules for ``/v1/candidates``, capacity planning."""

from reserveapi.policies import base

LIST = 'reserveapi:candidate:list'
LIST_ALL = 'reserveapi:candidate:list_all'

COLLECTION = '/v1/candidates'

rules = [
    base.rule(
        LIST, base.ADMIN_SERVICE_OR_READER,
        'Count the nodes a reservation with a request spec could get now '
        '(a reader: of the nodes its project may use).',
        'POST', COLLECTION),
    base.rule(
        LIST_ALL, base.ADMIN_OR_SERVICE,
        'Count over every node, for any project, and name any node: who '
        'the rule refuses counts only the nodes its own project may use '
        '(no owner or lessee, or its project as one), so that another '
        "project's nodes are neither named nor counted.",
        'POST', COLLECTION),
]


def list_rules():
    return rules
