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

"""Policy rules for ``/v1/nodes``, the inventory."""

from reserveapi.policies import base

LIST = 'reserveapi:node:list'
LIST_ALL = 'reserveapi:node:list_all'
GET = 'reserveapi:node:get'
GET_OWNER_LESSEE = 'reserveapi:node:get:owner_lessee'
"""Checked per node, the node's ``owner`` and ``lessee`` as target: who
may see them; everyone else reads both as null."""

COLLECTION = '/v1/nodes'
RESOURCE = '/v1/nodes/{node_ident}'

rules = [
    base.rule(
        LIST, base.ADMIN_SERVICE_OR_READER,
        'List the nodes (a reader of a project: those its project owns '
        'or leases, as Ironic shows them).',
        'GET', COLLECTION),
    base.rule(
        LIST_ALL, base.ADMIN_OR_SERVICE,
        'See every node of the inventory: who the rule refuses sees only '
        'the nodes its project owns or leases, and any other is a 404. '
        'Set it to "role:reader" for the view before microversion 1.4: '
        'the whole inventory to every reader.',
        'GET', COLLECTION, ('GET', RESOURCE)),
    base.rule(
        GET, base.ADMIN_SERVICE_OR_READER,
        'Show a node (a reader of a project: one its project owns or '
        'leases).',
        'GET', RESOURCE),
    base.rule(
        GET_OWNER_LESSEE, base.ADMIN_SERVICE_OR_NODE_PROJECT,
        "See a node's owner and lessee, checked per node: a caller the "
        "rule refuses reads both as null. Which project owns or leases a "
        "node, and so whose reservation holds it, is that project's "
        "business.",
        'GET', COLLECTION, ('GET', RESOURCE)),
]


def list_rules():
    return rules
