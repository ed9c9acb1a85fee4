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

"""reserveapi-dbsync: create or upgrade the database schema.

For a stopped cloud, ``upgrade`` does everything. For a rolling upgrade,
with the previous version serving: ``expand`` (adds only), ``migrate``
(data, in batches, while both versions serve; run again until it says
nothing is left), then, once no process of the previous version runs,
``contract``. See doc/source/admin/upgrade.rst.
"""

import sys

from oslo_log import log

from reserveapi import fleet
from reserveapi import version
from reserveapi.common import exception
from reserveapi.common import service
import reserveapi.conf
from reserveapi.db import backends
from reserveapi.db import derived
from reserveapi.db import migration

CONF = reserveapi.conf.CONF
LOG = log.getLogger(__name__)

COMMANDS = ('upgrade', 'expand', 'migrate', 'contract', 'current',
            'revision')


def _at():
    print('Database is at revision %s.' % migration.current())


def _applied(migrations, phase):
    if not migrations:
        print('No %s migration to apply.' % phase)
    for applied in migrations:
        print('Applied %s (%s).' % (applied.revision, applied.phase))


def _upgrade():
    migration.upgrade(CONF.command.revision)
    _at()
    if CONF.command.revision == 'head':
        return _migrate()
    return 0


def _expand():
    _applied(migration.expand(), migration.EXPAND)
    _at()
    return 0


def _migrate(max_count=None):
    """Nova's ``online_data_migrations`` way: each pass reports what it
    found and did; exit 1 while something may be left."""
    contract, expand_first = migration.pending_contract()
    if expand_first:
        raise exception.UpgradeRefused(
            'Expand first: run "reserveapi-dbsync expand", then migrate.')
    results = derived.check_all(repair=True, max_count=max_count)
    print('%-20s %8s %8s' % ('Migration', 'Found', 'Done'))
    for name, found in results.items():
        print('%-20s %8d %8d' % (name, found.found, found.fixed))
    left = any(found.found > found.fixed for found in results.values())
    cut = bool(max_count) and sum(
        found.found for name, found in results.items()
        if name != 'summary counters') >= max_count
    if left or cut:
        print('More may be left: run "reserveapi-dbsync migrate" again.')
        return 1
    print('Nothing left to migrate.%s' % (
        ' Contract when no process of the previous version runs: '
        '"reserveapi-dbsync contract".' if contract else ''))
    return 0


def _contract():
    pending, _expand_first = migration.pending_contract()
    connected = fleet.connected()
    blocking = fleet.blocking_contract(connected.processes, pending)
    floors = [m.oldest_version for m in pending if m.oldest_version]
    if blocking:
        raise exception.UpgradeRefused(
            'Refusing to contract: processes of a version older than '
            '%s still run against this database: %s. Stop or upgrade '
            'them first (a killed process counts as stopped %d heartbeat '
            'intervals after its last).' % (
                max(floors, key=version.version_tuple),
                fleet.describe(blocking, pids=True), fleet.MISSED_BEATS))
    if floors and connected.unknown and connected.unnamed:
        # Refusing on every blind server would make --force a habit.
        LOG.warning('%s Contracting anyway.',
                    fleet.describe_unknown(connected))
    elif floors and connected.unknown and not CONF.command.force:
        raise exception.UpgradeRefused(
            'Refusing to contract: %s Stop or upgrade any that is a '
            'process of a version older than %s; once none is, run '
            '"reserveapi-dbsync contract --force".' % (
                fleet.describe_unknown(connected),
                max(floors, key=version.version_tuple)))
    _applied(migration.contract(), migration.CONTRACT)
    _at()
    return 0


def _current():
    at = migration.current()
    if at is None:
        print('The database has no schema yet.')
        return 0
    if not migration.knows(at):
        print('%s (newer than this version knows: %s)' % (
            at, migration.head()))
        return 0
    _applied_, pending = migration.applied_and_pending(at)
    phases = [m.phase for m in pending]
    print(at + ('' if not pending else ' (pending: %s)' % ', '.join(
        '%d %s' % (phases.count(phase), phase)
        for phase in (migration.OFFLINE, migration.EXPAND,
                      migration.CONTRACT) if phase in phases)))
    return 0


def _revision():
    migration.revision(CONF.command.message,
                       autogenerate=CONF.command.autogenerate)
    return 0


def _add_commands(subparsers):
    parser = subparsers.add_parser(
        'upgrade', help='Every step at once, for a stopped cloud.',
        prog='reserveapi-dbsync upgrade')
    parser.add_argument('--revision', default='head')
    parser.set_defaults(func=_upgrade)

    parser = subparsers.add_parser(
        'expand', help='Add what this version needs; safe while the '
                       'previous version serves.',
        prog='reserveapi-dbsync expand')
    parser.set_defaults(func=_expand)

    parser = subparsers.add_parser(
        'migrate', help='Repair and move data in batches while both '
                        'versions serve; exit 1 while work is left.',
        prog='reserveapi-dbsync migrate')
    parser.add_argument('--max-count', type=int, default=None,
                        help='Stop after this many rows found.')
    parser.set_defaults(func=lambda: _migrate(CONF.command.max_count))

    parser = subparsers.add_parser(
        'contract', help='Remove what no supported version reads; refused '
                         'while older versions run.',
        prog='reserveapi-dbsync contract')
    parser.add_argument(
        '--force', action='store_true',
        help='Contract although sessions that name no process are '
             'connected, once you made sure that none is of an older '
             'version. A process known to be older still refuses.')
    parser.set_defaults(func=_contract)

    parser = subparsers.add_parser(
        'current', help='Print the revision the database is at.',
        prog='reserveapi-dbsync current')
    parser.set_defaults(func=_current)

    parser = subparsers.add_parser(
        'revision', help='Create a new migration script (developers).',
        prog='reserveapi-dbsync revision')
    parser.add_argument('-m', '--message', required=True)
    parser.add_argument('--autogenerate', action='store_true')
    parser.set_defaults(func=_revision)


COMMAND_OPT = service.sub_commands(_add_commands)


USAGE = service.usage(
    '[--config-file PATH] [COMMAND [ARGS]]',
    'Creates or upgrades the database schema ([database] connection). A '
    'rolling upgrade runs expand, migrate, then (once the previous '
    'version is gone) contract; a stopped cloud runs upgrade.',
    commands=(('upgrade', 'Every step (the default), to the newest or to '
                          '--revision.'),
              ('expand', 'Add what this version needs, while the previous '
                         'version serves.'),
              ('migrate', 'Repair and move data in batches while both '
                          'versions serve [--max-count N].'),
              ('contract', 'Remove what no running version reads '
                           '[--force].'),
              ('current', 'Print the revision the database is at.'),
              ('revision', 'Create a new migration script (developers).')))


@service.console_script
def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not any(arg in COMMANDS + ('-h', '--help') for arg in argv):
        argv = argv + ['upgrade']
    CONF.register_cli_opt(COMMAND_OPT)
    service.prepare_service(argv, usage=USAGE,
                            checks=(backends.check_connection_url,))
    try:
        return CONF.command.func()
    except exception.UpgradeRefused as exc:
        sys.exit(exc.detail)
