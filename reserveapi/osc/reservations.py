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


"""``openstack baremetal reservation
create|list|show|delete|confirm|takeover``.
"""

import json

from osc_lib import exceptions

from reserveapi import client
from reserveapi.osc import common

SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'host', 'instance_uuid',
             'state', 'expires_at')
SIZES = ('memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb', 'swap')


def request_spec_from(parsed_args):
    """The spec from ``--request-spec`` with the other options on top."""
    spec = {}
    if parsed_args.request_spec:
        spec = json_argument(parsed_args.request_spec, '--request-spec')
        if not isinstance(spec, dict):
            raise exceptions.CommandError(
                '--request-spec must be a JSON object.')
    for size in SIZES:
        value = getattr(parsed_args, size)
        if value is not None:
            spec[size] = value
    extra_specs = common.key_value_pairs(parsed_args.extra_spec,
                                         '--extra-spec')
    if extra_specs:
        spec.setdefault('extra_specs', {}).update(extra_specs)
    properties = common.key_value_pairs(parsed_args.image_property,
                                        '--image-property')
    if properties:
        spec.setdefault('image', {}).setdefault(
            'properties', {}).update(properties)
    return spec


def add_request_spec_options(parser):
    """``--request-spec`` and the options that override it, which
    request_spec_from() reads."""
    parser.add_argument(
        '--request-spec', metavar='<json>|@<file>',
        help='The whole request spec as JSON (flavor sizes, '
             'extra_specs, image); the options below override it.')
    for size in SIZES:
        parser.add_argument(
            '--' + size.replace('_', '-'), metavar='<int>', type=int,
            help='Flavor %s.' % size)
    parser.add_argument(
        '--extra-spec', metavar='<key=value>', action='append',
        help='A flavor extra spec, e.g. resources:CUSTOM_GOLD=1 or '
             'trait:CUSTOM_RAID=required (repeatable).')
    parser.add_argument(
        '--image-property', metavar='<key=value>', action='append',
        help='An image property, e.g. hw_architecture=x86_64 '
             '(repeatable).')


def json_argument(value, option):
    """Inline JSON, or ``@path`` of a JSON file."""
    try:
        if value.startswith('@'):
            with open(value[1:]) as stream:
                return json.load(stream)
        return json.loads(value)
    except OSError as exc:
        raise exceptions.CommandError('%s: cannot read %s: %s'
                                      % (option, value[1:], exc.strerror))
    except ValueError as exc:
        raise exceptions.CommandError('%s is not valid JSON: %s'
                                      % (option, exc))


class CreateReservation(common.ShowOne):
    """Reserve a node for an instance on a compute host.

    Asking again for the same instance and host returns the same
    reservation, as nova-compute's retries do.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--instance-uuid', metavar='<uuid>',
                            required=True, help='The instance to deploy.')
        parser.add_argument('--host', metavar='<host>', required=True,
                            help='The compute host that deploys it.')
        parser.add_argument('--project', metavar='<project-id>',
                            help="The instance's project (default: yours).")
        parser.add_argument(
            '--candidate-node', metavar='<node>', action='append',
            dest='candidate_nodes',
            help='Consider only these nodes (UUID or name; repeatable).')
        add_request_spec_options(parser)
        return parser

    def take_action(self, parsed_args):
        reservation = self.clients.reservations.reserve(
            parsed_args.instance_uuid, parsed_args.host,
            request_spec_from(parsed_args), project_id=parsed_args.project,
            candidate_nodes=parsed_args.candidate_nodes)
        return common.show(reservation)


class ListReservations(common.Lister):
    """List reservations (all pages unless --limit says otherwise)."""

    columns = ('UUID', 'Instance UUID', 'Host', 'Node Name', 'State')
    long_columns = ('Node UUID', 'Resource Class', 'Project ID',
                    'Created At', 'Updated At', 'Expires At')
    filters = ('host', 'instance_uuid', 'node_uuid', 'state')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--host', metavar='<host>',
                            help='Only reservations of this compute host.')
        parser.add_argument('--instance-uuid', metavar='<uuid>',
                            help='Only the reservation of this instance.')
        parser.add_argument('--node-uuid', metavar='<uuid>',
                            help='Only reservations of this node.')
        parser.add_argument('--state', metavar='<state>',
                            choices=('reserved', 'active', 'expired'),
                            help='Only reservations in this state '
                                 '(reserved, active or expired).')
        parser.add_argument('--project', metavar='<project-id>',
                            help="Only this project's reservations.")
        self.add_long_option(parser)
        common.add_paging_options(parser, SORT_KEYS)
        return parser

    def take_action(self, parsed_args):
        query = common.paging_query(parsed_args, SORT_KEYS)
        query.update({name: getattr(parsed_args, name)
                      for name in self.filters})
        query['project_id'] = parsed_args.project
        query = {key: value for key, value in query.items()
                 if value is not None}
        items = self.clients.reservations.list(**query)
        return self.table(parsed_args, common.limited(items, parsed_args))


class ShowReservation(common.ShowOne):
    """Show one reservation."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('reservation', metavar='<uuid>',
                            help='The reservation.')
        return parser

    def take_action(self, parsed_args):
        return common.show(
            self.clients.reservations.get(parsed_args.reservation))


class DeleteReservation(common.Command):
    """Release reservations: their nodes are free at once."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('reservations', metavar='<uuid>', nargs='+',
                            help='The reservations to release.')
        return parser

    def take_action(self, parsed_args):
        failed = 0
        for uuid in parsed_args.reservations:
            try:
                released = self.clients.reservations.release(uuid)
                reason = 'no such reservation'
            except client.ClientError as exc:
                released, reason = False, common.describe(exc)
            if released:
                self.app.stdout.write('Released reservation %s.\n' % uuid)
            else:
                self.log.error('Reservation %s not released: %s',
                               uuid, reason)
                failed += 1
        if failed:
            raise exceptions.CommandError(
                '%d of %d reservations could not be released.'
                % (failed, len(parsed_args.reservations)))


class ConfirmReservation(common.ShowOne):
    """Mark a reservation active: its instance is deployed."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('reservation', metavar='<uuid>',
                            help='The reservation.')
        return parser

    def take_action(self, parsed_args):
        return common.show(
            self.clients.reservations.confirm(parsed_args.reservation))


class TakeOverReservation(common.ShowOne):
    """Move a reservation to another compute host (its host died)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('reservation', metavar='<uuid>',
                            help='The reservation.')
        parser.add_argument('--host', metavar='<host>', required=True,
                            help='The compute host that takes it over.')
        return parser

    def take_action(self, parsed_args):
        return common.show(self.clients.reservations.take_over(
            parsed_args.reservation, parsed_args.host))
