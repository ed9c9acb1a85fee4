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


"""What every ``openstack baremetal reservation`` command shares: one-line
errors, listing options (``--long``, ``--limit``, ``--marker``,
``--sort``) and column formatting.
"""

import itertools

from keystoneauth1 import exceptions as ks_exc
from osc_lib import exceptions
from osc_lib import utils
from osc_lib.cli import pagination
from osc_lib.command import command

from reserveapi import client

SORT_DIRECTIONS = ('asc', 'desc')


def describe(exc):
    """One line with the service's own detail, status, code, request id."""
    detail = ' '.join(str(exc.detail or '').split())
    return '%s (HTTP %s %s) (Request-ID: %s)' % (
        detail, exc.status, exc.code or 'error', exc.request_id)


class OneLineErrors:
    """Refusals of the service become one line, not a traceback.

    Also catches errors raised while a lazy listing is being printed,
    since that happens inside ``run`` too.
    """

    def run(self, parsed_args):
        try:
            return super().run(parsed_args)
        except client.ClientError as exc:
            raise exceptions.CommandError(describe(exc))
        except ks_exc.ClientException as exc:
            raise exceptions.CommandError(' '.join(str(exc).split()))

    @property
    def clients(self):
        return self.app.client_manager.baremetal_reservation


class Command(OneLineErrors, command.Command):
    pass


class ShowOne(OneLineErrors, command.ShowOne):
    pass


class Lister(OneLineErrors, command.Lister):
    """A list with ``--long`` and the columns it adds."""

    columns = ()
    long_columns = ()
    formatters = {}

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        # An empty list is a table with its header, not blank lines.
        parser.set_defaults(print_empty=True)
        return parser

    def add_long_option(self, parser):
        parser.add_argument(
            '--long', action='store_true', default=False,
            help='Show more columns: %s.' % ', '.join(self.long_columns))

    def chosen_columns(self, parsed_args):
        if getattr(parsed_args, 'long', False):
            return tuple(self.columns) + tuple(self.long_columns)
        return tuple(self.columns)

    def table(self, parsed_args, items):
        """``(columns, rows)`` for cliff; rows are produced lazily."""
        columns = self.chosen_columns(parsed_args)
        return columns, (
            utils.get_dict_properties(item, columns,
                                      formatters=self.formatters)
            for item in items)


def add_partition_options(parser):
    """``--shard`` and ``--conductor-group``: an Ironic partition, as
    nova-compute's ``[ironic]`` options name it."""
    parser.add_argument('--shard', metavar='<shard>',
                        help='Only nodes of this Ironic shard.')
    parser.add_argument(
        '--conductor-group', metavar='<group>',
        help='Only nodes of this Ironic conductor group ("" is the '
             'default group).')


def add_paging_options(parser, sort_keys):
    pagination.add_marker_pagination_option_to_parser(parser)
    parser.add_argument(
        '--sort', metavar='<key>[:<direction>]',
        help='Sort by %s; direction asc (default) or desc.'
             % ', '.join(sort_keys))


def paging_query(parsed_args, sort_keys):
    """The ``limit``/``marker``/``sort_key``/``sort_dir`` query."""
    query = {'marker': parsed_args.marker}
    if parsed_args.limit:
        query['limit'] = parsed_args.limit
    if parsed_args.sort:
        key, _colon, direction = parsed_args.sort.partition(':')
        if key not in sort_keys:
            raise exceptions.CommandError(
                'Cannot sort by %r: choose one of %s.'
                % (key, ', '.join(sort_keys)))
        if direction and direction not in SORT_DIRECTIONS:
            raise exceptions.CommandError(
                'Sort direction must be asc or desc, not %r.' % direction)
        query.update(sort_key=key, sort_dir=direction or None)
    return query


def limited(items, parsed_args):
    """At most ``--limit`` items (all of them without it, or with 0).

    The service caps a page at its ``[api] max_limit``; beyond that the
    next pages are read until the limit is reached.
    """
    if parsed_args.limit:
        return itertools.islice(items, parsed_args.limit)
    return items


def show(item, formatters=None, hidden=('links',)):
    """``(names, values)`` of a ShowOne, fields in the API's order."""
    names = tuple(name for name in item if name not in hidden)
    return names, utils.get_dict_properties(item, names,
                                            formatters=formatters or {})


def key_value_pairs(values, option):
    """``KEY=VALUE`` strings into a dict; a missing ``=`` is an error."""
    pairs = {}
    for value in values or ():
        key, equals, rest = value.partition('=')
        if not equals or not key:
            raise exceptions.CommandError(
                '%s expects KEY=VALUE, got %r.' % (option, value))
        pairs[key] = rest
    return pairs
