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


"""``openstack baremetal reservation aggregate list|show|sync``: Nova host
aggregates as the mirror into Placement knows them.
"""

import json

from cliff import columns
from osc_lib import exceptions
from osc_lib.cli import format_columns

from reserveapi.osc import common

SORT_KEYS = ('uuid', 'created_at', 'updated_at')


def _summarize(aggregate):
    """Member hosts and hosts still pending, as plain lists."""
    hosts = aggregate.get('hosts') or []
    return dict(aggregate,
                member_hosts=[row['host'] for row in hosts if row['member']],
                pending_hosts=[row['host'] for row in hosts
                               if row['state'] == 'pending'])


class HostsColumn(columns.FormattableColumn):
    """One line per host in tables; the API's list of objects in JSON."""

    def human_readable(self):
        return '\n'.join(_describe_host(row) for row in self._value or ())

    def machine_readable(self):
        return self._value


def _describe_host(row):
    role = ('member' if row['state'] == 'synced' else 'joining') \
        if row['member'] else 'leaving'
    if row['state'] == 'synced':
        return '%s: %s, synced' % (row['host'], role)
    text = '%s: %s, pending since %s' % (row['host'], role,
                                         row['pending_since'])
    if row['attempts']:
        text += ', %d failed attempts, next at %s: %s' % (
            row['attempts'], row['next_attempt_at'], row['last_error'])
    return text


class ListAggregates(common.Lister):
    """List the mirrored aggregates and whether Placement agrees."""

    columns = ('UUID', 'State', 'Member Hosts', 'Pending Hosts')
    long_columns = ('Deleted', 'Created At', 'Updated At')
    formatters = {'Member Hosts': format_columns.ListColumn,
                  'Pending Hosts': format_columns.ListColumn}

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        self.add_long_option(parser)
        common.add_paging_options(parser, SORT_KEYS)
        return parser

    def take_action(self, parsed_args):
        query = common.paging_query(parsed_args, SORT_KEYS)
        aggregates = (_summarize(aggregate) for aggregate
                      in self.clients.aggregates.list(**query))
        return self.table(parsed_args,
                          common.limited(aggregates, parsed_args))


class ShowAggregate(common.ShowOne):
    """Show an aggregate: each host's membership and its sync state."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('aggregate', metavar='<aggregate-uuid>',
                            help="The aggregate's UUID (as in Nova).")
        return parser

    def take_action(self, parsed_args):
        aggregate = self.clients.aggregates.get(parsed_args.aggregate)
        return common.show(aggregate, formatters={
            'hosts': HostsColumn})


def _desired(parsed_args):
    """``[{"uuid", "hosts"}]`` from ``--file`` and ``--aggregate``."""
    desired = []
    if parsed_args.file:
        desired = _read_file(parsed_args.file)
    for value in parsed_args.aggregates or ():
        uuid, _equals, hosts = value.partition('=')
        desired.append({'uuid': uuid,
                        'hosts': [host for host in hosts.split(',') if host]})
    if not desired:
        raise exceptions.CommandError(
            'Name the desired aggregates with --aggregate or --file.')
    return desired


def _read_file(path):
    try:
        with open(path) as stream:
            desired = json.load(stream)
    except OSError as exc:
        raise exceptions.CommandError('Cannot read %s: %s'
                                      % (path, exc.strerror))
    except ValueError as exc:
        raise exceptions.CommandError('%s is not JSON: %s' % (path, exc))
    if not isinstance(desired, list):
        raise exceptions.CommandError(
            '%s must hold a JSON list of {"uuid": ..., "hosts": [...]}.'
            % path)
    return desired


class SyncAggregates(common.Lister):
    """Compare Placement with the desired aggregates, and fix it.

    Lists every difference and what was done about it; with --dry-run
    nothing changes. Extra memberships are removed only with --prune,
    and only for aggregates the mirror owns.
    """

    columns = ('Aggregate UUID', 'Host', 'Provider UUID', 'Difference',
               'Action', 'Detail')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--aggregate', metavar='<uuid>=<host>[,<host>...]',
            action='append', dest='aggregates',
            help='A desired aggregate and its hosts (repeatable); '
                 '"<uuid>=" for an aggregate with no host.')
        parser.add_argument(
            '--file', metavar='<path>',
            help='The desired aggregates as a JSON list of '
                 '{"uuid": ..., "hosts": [...]}, as reserveapi-manage '
                 'sync-aggregates --file reads it.')
        parser.add_argument('--dry-run', action='store_true',
                            help='Only report the differences.')
        parser.add_argument(
            '--prune', action='store_true',
            help='Also remove extra memberships of aggregates the mirror '
                 'owns.')
        return parser

    def take_action(self, parsed_args):
        report = self.clients.aggregates.sync(
            _desired(parsed_args), dry_run=parsed_args.dry_run,
            prune=parsed_args.prune)
        return self.table(parsed_args, report['differences'])
