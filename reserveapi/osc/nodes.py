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


"""``openstack baremetal reservation node list|show``: the inventory the
service matches against, with each node's reservation.
"""

from osc_lib.cli import format_columns

from reserveapi.osc import common

SORT_KEYS = ('uuid', 'name', 'resource_class', 'provision_state',
             'memory_mb', 'cpus', 'local_gb', 'created_at', 'updated_at',
             'synced_at')
FORMATTERS = {
    'capabilities': format_columns.DictColumn,
    'Capabilities': format_columns.DictColumn,
    'traits': format_columns.ListColumn,
    'Traits': format_columns.ListColumn,
    'reservation': format_columns.DictColumn,
}


def _flatten(node):
    """The node with its reservation's host and state as plain fields."""
    reservation = node.get('reservation') or {}
    return dict(node, reserved_for_host=reservation.get('host'),
                reservation_state=reservation.get('state'))


def _without_links(node):
    reservation = node.get('reservation')
    if reservation:
        node = dict(node, reservation={key: value for key, value
                                       in reservation.items()
                                       if key != 'links'})
    return node


class ListNodes(common.Lister):
    """List the nodes (all pages unless --limit says otherwise)."""

    columns = ('UUID', 'Name', 'Resource Class', 'Provision State',
               'Power State', 'Maintenance', 'Reserved For Host')
    long_columns = ('Reservation State', 'Memory MB', 'CPUs', 'Local GB',
                    'CPU Arch', 'Capabilities', 'Traits', 'Retired',
                    'Instance UUID', 'Conductor Group', 'Owner', 'Lessee',
                    'Vanished', 'Synced At')
    formatters = FORMATTERS

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--resource-class', metavar='<class>',
            help='Only nodes of this resource class (as the flavor names '
                 'it, e.g. baremetal-gold or CUSTOM_BAREMETAL_GOLD).')
        parser.add_argument('--provision-state', metavar='<state>',
                            help='Only nodes in this provision state.')
        parser.add_argument('--conductor-group', metavar='<group>',
                            help='Only nodes of this conductor group.')
        _add_boolean_filter(parser, 'maintenance', 'in maintenance')
        _add_boolean_filter(parser, 'reserved', 'reserved')
        self.add_long_option(parser)
        common.add_paging_options(parser, SORT_KEYS)
        return parser

    def take_action(self, parsed_args):
        query = common.paging_query(parsed_args, SORT_KEYS)
        query.update(resource_class=parsed_args.resource_class,
                     provision_state=parsed_args.provision_state,
                     conductor_group=parsed_args.conductor_group,
                     maintenance=_boolean(parsed_args.maintenance),
                     reserved=_boolean(parsed_args.reserved))
        nodes = (_flatten(node)
                 for node in self.clients.nodes.list(**query))
        return self.table(parsed_args, common.limited(nodes, parsed_args))


def _add_boolean_filter(parser, name, meaning):
    group = parser.add_mutually_exclusive_group()
    group.add_argument('--' + name, dest=name, action='store_true',
                       default=None, help='Only nodes %s.' % meaning)
    group.add_argument('--no-' + name, dest=name, action='store_false',
                       help='Only nodes not %s.' % meaning)


def _boolean(value):
    return None if value is None else str(value).lower()


class ShowNode(common.ShowOne):
    """Show one node, by UUID or name."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('node', metavar='<node>',
                            help='The node (UUID or name).')
        return parser

    def take_action(self, parsed_args):
        node = self.clients.nodes.get(parsed_args.node)
        return common.show(_without_links(node), formatters=FORMATTERS)
