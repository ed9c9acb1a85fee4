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


"""``openstack baremetal reservation candidates``: how many more servers
of a flavor, with an image, the cloud (or one Ironic partition) can take
now.

The flavor (with its extra specs) and the image (with its properties) are
read from the cloud's own Nova and Glance with the user's session, and
the request spec is built from them by ``reserveapi.client.request_spec``,
as nova-compute's driver builds it from the same flavor and image.
"""

from osc_lib import exceptions
import prettytable

from reserveapi.client import request_spec
from reserveapi.osc import common
from reserveapi.osc import reservations


def _image(image_proxy, name_or_id):
    """The image as Glance shows it: the SDK keeps the properties it does
    not model apart, under ``properties``."""
    image = image_proxy.find_image(name_or_id, ignore_missing=False)
    shown = image.to_dict(computed=False, ignore_none=True,
                          original_names=True, headers=False)
    shown.update(shown.pop('properties', None) or {})
    return shown


def _table(columns, rows):
    table = prettytable.PrettyTable(columns)
    table.align = 'l'
    for row in rows:
        table.add_row(row)
    return table.get_string()


class ShowCandidates(common.Command):
    """Count the nodes a server of a flavor, with an image, could get now:
    per Ironic partition, what excluded the others, the best first.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument(
            '--flavor', metavar='<flavor>',
            help='Flavor (name or ID), read from Nova with its extra '
                 'specs.')
        source.add_argument(
            '--spec', metavar='<file>',
            help='A request spec as JSON, as POST /v1/reservations takes '
                 'it, instead of a flavor and an image.')
        parser.add_argument(
            '--image', metavar='<image>',
            help='Image (name or ID), read from Glance with its properties '
                 '(with --flavor).')
        parser.add_argument('--project', metavar='<project-id>',
                            help='Count for this project (default: yours).')
        parser.add_argument('--shard', metavar='<shard>',
                            help='Only nodes of this Ironic shard.')
        parser.add_argument(
            '--conductor-group', metavar='<group>',
            help='Only nodes of this Ironic conductor group ("" is the '
                 'default group).')
        parser.add_argument(
            '--limit', metavar='<count>', type=int,
            help='Name this many of the nodes, best fit first (default '
                 '10).')
        return parser

    def request_spec(self, parsed_args):
        if parsed_args.spec:
            spec = reservations.json_argument('@' + parsed_args.spec,
                                              '--spec')
            if not isinstance(spec, dict):
                raise exceptions.CommandError(
                    '--spec must hold a JSON object.')
            return spec
        manager = self.app.client_manager
        flavor = manager.compute.find_flavor(
            parsed_args.flavor, ignore_missing=False, get_extra_specs=True)
        image = {'properties': {}}
        if parsed_args.image:
            image = request_spec.image_from_glance(
                _image(manager.image, parsed_args.image))
        return request_spec.build(request_spec.flavor_from_compute(
            flavor.to_dict(computed=False, ignore_none=True,
                           original_names=True, headers=False)), image)

    def take_action(self, parsed_args):
        if parsed_args.image and not parsed_args.flavor:
            raise exceptions.CommandError(
                '--image goes with --flavor.')
        answer = self.clients.reservations.candidates(
            self.request_spec(parsed_args), project_id=parsed_args.project,
            shard=parsed_args.shard,
            conductor_group=parsed_args.conductor_group,
            limit=parsed_args.limit)
        out = self.app.stdout
        out.write('%d of %d nodes could be reserved now.\n'
                  % (answer['count'], answer['total']))
        out.write(_table(('Shard', 'Conductor Group', 'Nodes'), [
            (row['shard'] or '', row['conductor_group'] or '(default)',
             row['count']) for row in answer['by_partition']]) + '\n')
        out.write(_table(('Excluded By', 'Item', 'Nodes', 'Values'), [
            (row['reason'], row['item'] or '', row['count'], ', '.join(
                '%s (%d)' % (value['value'], value['count'])
                for value in row['values']))
            for row in answer['excluded']]) + '\n')
        if answer['nodes']:
            out.write('Best fit first: %s\n' % ', '.join(
                node['name'] or node['uuid'] for node in answer['nodes']))
