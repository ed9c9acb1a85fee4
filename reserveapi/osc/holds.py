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


"""``openstack baremetal reservation hold create|list|show|set|delete``:
nodes promised to a project from a start to an end (microversion 1.5);
from 1.6, what each pinned and what becomes of its instances at its end.
"""

from osc_lib import exceptions
from osc_lib.cli import format_columns

from reserveapi import client
from reserveapi.osc import common
from reserveapi.osc import reservations

SORT_KEYS = ('created_at', 'start', 'end', 'uuid')
TIME_HELP = ('ISO 8601 with its UTC offset, e.g. 2030-01-31T08:00:00+00:00 '
             'or 2030-01-31T09:00:00+01:00')
FORMATTERS = {'request_spec': format_columns.DictColumn}
AT_END = ('keep', 'delete')
"""What may become of a hold's instances at its end, as the service
takes it (from microversion 1.6)."""


class CreateHold(common.ShowOne):
    """Hold nodes matching a request spec for a project, from a start to
    an end.

    The service admits the hold only if, at every instant of its window
    (padded by the cleaning time), it fits beside the other holds.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--project', metavar='<project-id>',
                            required=True,
                            help='The project the nodes are held for.')
        parser.add_argument('--amount', metavar='<count>', type=int,
                            required=True, help='How many nodes.')
        parser.add_argument('--start', metavar='<time>', required=True,
                            help='When the hold begins: %s.' % TIME_HELP)
        parser.add_argument('--end', metavar='<time>', required=True,
                            help='When the hold ends: %s.' % TIME_HELP)
        parser.add_argument(
            '--at-end', choices=AT_END, default=None,
            help="What becomes of the instances booted on the hold at its "
                 "end: kept (the service's default) or deleted. Needs "
                 "microversion 1.6.")
        common.add_partition_options(parser)
        reservations.add_request_spec_options(parser)
        return parser

    def take_action(self, parsed_args):
        hold = self.clients.holds.create(
            parsed_args.project, parsed_args.amount,
            reservations.request_spec_from(parsed_args), parsed_args.start,
            parsed_args.end, shard=parsed_args.shard,
            conductor_group=parsed_args.conductor_group,
            at_end=parsed_args.at_end)
        return common.show(hold, formatters=FORMATTERS)


class ListHolds(common.Lister):
    """List holds (all pages unless --limit says otherwise)."""

    columns = ('UUID', 'Project ID', 'Amount', 'Resource Class', 'Start',
               'End', 'State', 'Pinned', 'In Use')
    long_columns = ('Shard', 'Conductor Group', 'Padding', 'At End',
                    'Reclaimed', 'Shortfall', 'Flavor ID',
                    'Boot Resource Class', 'Created At', 'Updated At',
                    'Cancelled At')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--project', metavar='<project-id>',
                            help="Only this project's holds.")
        parser.add_argument(
            '--resource-class', metavar='<class>',
            help='Only holds of this resource class, as a hold shows it '
                 '(e.g. CUSTOM_BAREMETAL_GOLD).')
        self.add_long_option(parser)
        common.add_paging_options(parser, SORT_KEYS)
        return parser

    def take_action(self, parsed_args):
        query = common.paging_query(parsed_args, SORT_KEYS)
        query.update(project_id=parsed_args.project,
                     resource_class=parsed_args.resource_class)
        items = self.clients.holds.list(**query)
        return self.table(parsed_args, common.limited(items, parsed_args))


class ShowHold(common.ShowOne):
    """Show one hold."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('hold', metavar='<uuid>', help='The hold.')
        return parser

    def take_action(self, parsed_args):
        return common.show(self.clients.holds.get(parsed_args.hold),
                           formatters=FORMATTERS)


class SetHold(common.ShowOne):
    """Move a hold's end or change its amount.

    A hold that grows (a later end, more nodes) is admitted again.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('hold', metavar='<uuid>', help='The hold.')
        parser.add_argument('--end', metavar='<time>',
                            help='The new end: %s.' % TIME_HELP)
        parser.add_argument('--amount', metavar='<count>', type=int,
                            help='The new number of nodes.')
        return parser

    def take_action(self, parsed_args):
        if parsed_args.end is None and parsed_args.amount is None:
            raise exceptions.CommandError('Give --end, --amount or both.')
        return common.show(self.clients.holds.update(
            parsed_args.hold, end=parsed_args.end,
            amount=parsed_args.amount), formatters=FORMATTERS)


class DeleteHold(common.Command):
    """Cancel holds: their nodes are free at once."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('holds', metavar='<uuid>', nargs='+',
                            help='The holds to cancel.')
        return parser

    def take_action(self, parsed_args):
        failed = 0
        for uuid in parsed_args.holds:
            try:
                self.clients.holds.cancel(uuid)
            except client.ClientError as exc:
                self.log.error('Hold %s not cancelled: %s', uuid,
                               common.describe(exc))
                failed += 1
            else:
                self.app.stdout.write('Cancelled hold %s.\n' % uuid)
        if failed:
            raise exceptions.CommandError(
                '%d of %d holds could not be cancelled.'
                % (failed, len(parsed_args.holds)))
