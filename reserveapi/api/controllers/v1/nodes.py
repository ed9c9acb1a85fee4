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

"""``/v1/nodes``: the inventory, with each node's live reservation."""

import pecan
from pecan import rest

from reserveapi import policy
from reserveapi.api import body as body_mod
from reserveapi.api import expose
from reserveapi.api import types
from reserveapi.api.controllers import link
from reserveapi.api.controllers.v1 import collection
from reserveapi.api.controllers.v1 import fields
from reserveapi.inventory import nodes
from reserveapi.policies import node as node_policy


def render(node):
    reservation = node.reservation
    return {
        'uuid': node.uuid,
        'name': node.name,
        'resource_class': node.resource_class,
        'memory_mb': node.memory_mb,
        'cpus': node.cpus,
        'local_gb': node.local_gb,
        'cpu_arch': node.cpu_arch,
        'capabilities': dict(sorted(node.capabilities.items())),
        'traits': sorted(node.traits),
        'provision_state': node.provision_state,
        'power_state': node.power_state,
        'maintenance': node.maintenance,
        'retired': node.retired,
        'instance_uuid': node.instance_uuid,
        'conductor_group': node.conductor_group,
        'owner': node.owner,
        'lessee': node.lessee,
        'vanished': node.vanished,
        'reservation': None if reservation is None else {
            'uuid': reservation.uuid,
            'instance_uuid': reservation.instance_uuid,
            'host': reservation.host,
            'state': reservation.state,
            'links': [link.make('v1/reservations/%s' % reservation.uuid)],
        },
        'synced_at': fields.timestamp(node.synced_at),
        'created_at': fields.timestamp(node.created_at),
        'updated_at': fields.timestamp(node.updated_at),
        'links': [link.make('v1/nodes/%s' % node.uuid)],
    }


class NodesController(rest.RestController):

    @expose.expose(query=dict(
        collection.page_query(nodes.SORT_KEYS),
        resource_class=types.name, provision_state=types.name,
        conductor_group=types.text, maintenance=types.boolean,
        reserved=types.boolean))
    def get_all(self, resource_class=None, provision_state=None,
                conductor_group=None, maintenance=None, reserved=None,
                limit=None, marker=None, sort_key=None, sort_dir=None):
        policy.authorize(node_policy.LIST, pecan.request.context)
        limit, marker, sort_key, sort_dir = collection.page_args(
            limit, marker, sort_key, sort_dir, 'uuid')
        filters = {key: value for key, value in (
            ('resource_class', resource_class),
            ('provision_state', provision_state),
            ('conductor_group', conductor_group),
            ('maintenance', maintenance),
            ('reserved', reserved)) if value is not None}
        items = nodes.list_nodes(filters, limit + 1, marker, sort_key,
                                 sort_dir)
        return collection.render('nodes', [render(item) for item in items],
                                 limit, 'v1/nodes',
                                 lambda item: item['uuid'])

    @expose.expose()
    def get_one(self, node_ident):
        policy.authorize(node_policy.GET, pecan.request.context)
        return render(nodes.get_node(
            body_mod.path_arg(types.node_ident, node_ident, 'node_ident')))
