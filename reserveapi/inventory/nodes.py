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

"""Reading the node inventory as the service knows it."""

import re

import reserveapi.conf
from reserveapi.db import inventory as db_inventory
from reserveapi.db import nodes as db_nodes
from reserveapi.matcher import spec as spec_mod

CONF = reserveapi.conf.CONF
_REPORTED_CLASS = re.compile(r'^CUSTOM_[A-Z0-9_]+$')
# What lists may be sorted by: columns of the nodes table.
SORT_KEYS = ('uuid', 'name', 'resource_class', 'provision_state',
             'memory_mb', 'cpus', 'local_gb', 'created_at', 'updated_at',
             'synced_at')


def get_node(ident, project_id=None):
    """The node, or with ``project_id`` the node if that project owns or
    leases it: another project's is not found, so that its name does not
    tell it exists.

    :raises: NodeNotFound
    """
    return db_nodes.get_node(ident, project_id=project_id)


def list_nodes(filters=None, limit=None, marker=None, sort_key='uuid',
               sort_dir='asc', project_id=None):
    """Nodes by equality filters; with ``project_id``, only the nodes
    that project owns or leases.

    A resource class filter is the class as the listing shows it, the
    one Nova reports (``CUSTOM_BAREMETAL_GOLD``); any other spelling is
    an Ironic node's class, normalized as Nova does, so
    ``baremetal-gold`` finds ``CUSTOM_BAREMETAL_GOLD`` too.

    :raises: Invalid for an unknown marker.
    """
    filters = dict(filters or {})
    if filters.get('resource_class'):
        filters['resource_class'] = _reported_class(
            filters['resource_class'])
    return db_nodes.list_nodes(filters, limit, marker, sort_key, sort_dir,
                               project_id=project_id)


def get_sync_state():
    """When and from where the configured source was last synced, and
    whether it is unreachable now (a record), or None before any sync.

    :raises: DBError
    """
    return db_inventory.get_inventory_sync(CONF.inventory.source)


def _reported_class(name):
    if _REPORTED_CLASS.match(name):
        return name
    return spec_mod.normalize_resource_class(name)
