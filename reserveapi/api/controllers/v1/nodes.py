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
from reserveapi import rendering
from reserveapi.api import body as body_mod
from reserveapi.api import expose
from reserveapi.api import microversion
from reserveapi.api import types
from reserveapi.api.controllers import link
from reserveapi.api.controllers.v1 import collection
from reserveapi.common import exception
import reserveapi.conf
from reserveapi.inventory import nodes
from reserveapi.policies import node as node_policy
from reserveapi.policies import reservation as reservation_policy

CONF = reserveapi.conf.CONF


def _memoized_check(context, rule, target_of):
    """``allowed(key)``: whether ``rule`` lets the caller act on
    ``target_of(key)``; policy is asked once per key in a request.
    """
    answers = {}

    def allowed(key):
        if key not in answers:
            try:
                policy.authorize(rule, context, target_of(key))
                answers[key] = True
            except exception.Forbidden:
                answers[key] = False
        return answers[key]

    return allowed


def _owner_lessee_target(pair):
    """Only what is set: a missing key never matches a check."""
    owner, lessee = pair
    return {key: value for key, value in (('node.owner', owner),
                                          ('node.lessee', lessee))
            if value is not None}


class _Visibility:
    """What the caller may see of the nodes it reads."""

    def __init__(self, context):
        # A reservation of a project, as GET /v1/reservations/{uuid}
        # would allow.
        self.reservation = _memoized_check(
            context, reservation_policy.GET,
            lambda project_id: {'project_id': project_id})
        # A node's owner and lessee, keyed by the pair.
        self.owner_lessee = _memoized_check(
            context, node_policy.GET_OWNER_LESSEE, _owner_lessee_target)


def _render_reservation(reservation, visible):
    """The node's live reservation; one the caller may not read shows
    only that the node is held (its state), nothing of whose it is.
    """
    if reservation is None:
        return None
    if not visible:
        return {'uuid': None, 'instance_uuid': None, 'host': None,
                'state': reservation.state, 'links': []}
    return {
        'uuid': reservation.uuid,
        'instance_uuid': reservation.instance_uuid,
        'host': reservation.host,
        'state': reservation.state,
        'links': [link.make('v1/reservations/%s' % reservation.uuid)],
    }


def render(node, visible, version):
    """``visible``: a _Visibility of the caller; ``version``: the
    request's microversion. A node's owner and lessee are null to a
    caller who may not see them, whether the node is free or held.
    """
    reservation = node.reservation
    shown = (reservation is None
             or visible.reservation(reservation.project_id))
    owner_lessee_shown = visible.owner_lessee((node.owner, node.lessee))
    instance_uuid = node.instance_uuid
    if not shown and instance_uuid == reservation.instance_uuid:
        # Ironic's copy of the claim names the same instance.
        instance_uuid = None
    body = {
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
        'instance_uuid': instance_uuid,
        'conductor_group': node.conductor_group,
        'owner': node.owner if owner_lessee_shown else None,
        'lessee': node.lessee if owner_lessee_shown else None,
        'vanished': node.vanished,
        'reservation': _render_reservation(reservation, shown),
        'synced_at': rendering.timestamp(node.synced_at),
        'created_at': rendering.timestamp(node.created_at),
        'updated_at': rendering.timestamp(node.updated_at),
        'links': [link.make('v1/nodes/%s' % node.uuid)],
    }
    if version >= microversion.PARTITIONS:
        body['shard'] = node.shard
        body['stale_since'] = rendering.timestamp(node.stale_since)
    return body


def render_inventory(state):
    """When and from where the inventory was last synced, and whether its
    source can be read now."""
    return {
        'source': CONF.inventory.source,
        'location': state.location if state else None,
        'synced_at': rendering.timestamp(state.synced_at if state else None),
        'full_synced_at': rendering.timestamp(
            state.full_synced_at if state else None),
        'unreachable_since': rendering.timestamp(
            state.outage_since if state else None),
        'last_error': state.last_error if state else None,
    }


NO_PROJECT = ''
"""What a caller with no project may see the nodes of: no owner or
lessee is ever '' (a missing project matches nothing, not a node with
no owner)."""


def _project_view(context):
    """None when the caller may see every node, else the project whose
    owned and leased nodes it sees."""
    try:
        policy.authorize(node_policy.LIST_ALL, context)
        return None
    except exception.Forbidden:
        return context.project_id or NO_PROJECT


class NodesController(rest.RestController):

    @expose.expose(query=dict(
        collection.page_query(nodes.SORT_KEYS),
        resource_class=types.name, provision_state=types.name,
        conductor_group=types.text, shard=types.name,
        maintenance=types.boolean, reserved=types.boolean))
    def get_all(self, resource_class=None, provision_state=None,
                conductor_group=None, shard=None, maintenance=None,
                reserved=None, limit=None, marker=None, sort_key=None,
                sort_dir=None):
        policy.authorize(node_policy.LIST, pecan.request.context)
        version = pecan.request.version
        microversion.require_for_query(version, microversion.PARTITIONS,
                                       shard=shard)
        limit, marker, sort_key, sort_dir = collection.page_args(
            limit, marker, sort_key, sort_dir, 'uuid')
        filters = {key: value for key, value in (
            ('resource_class', resource_class),
            ('provision_state', provision_state),
            ('conductor_group', conductor_group),
            ('shard', shard),
            ('maintenance', maintenance),
            ('reserved', reserved)) if value is not None}
        items = nodes.list_nodes(filters, limit + 1, marker, sort_key,
                                 sort_dir, project_id=_project_view(
                                     pecan.request.context))
        visible = _Visibility(pecan.request.context)
        body = collection.render(
            'nodes', [render(item, visible, version) for item in items],
            limit, 'v1/nodes', lambda item: item['uuid'])
        if version >= microversion.PARTITIONS:
            body['inventory'] = render_inventory(nodes.get_sync_state())
        return body

    @expose.expose()
    def get_one(self, node_ident):
        context = pecan.request.context
        policy.authorize(node_policy.GET, context)
        return render(nodes.get_node(
            body_mod.path_arg(types.node_ident, node_ident, 'node_ident'),
            project_id=_project_view(context)),
            _Visibility(context), pecan.request.version)
