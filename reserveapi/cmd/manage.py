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

"""reserveapi-manage: operator commands.

Exit codes: 0 success, 1 something could not be done (the output says
what), 2 bad usage.
"""

import json
import sys

from oslo_log import log

from reserveapi import reservations
from reserveapi.common import exception
from reserveapi.common import service
import reserveapi.conf
from reserveapi.db import backends
from reserveapi.inventory import sync as inventory_sync
from reserveapi.mirror import desired as mirror_desired
from reserveapi.mirror import nova as mirror_nova
from reserveapi.mirror import state as mirror_state
from reserveapi.mirror import sync as mirror_sync
from reserveapi.peers import credentials

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF


def sync_nodes():
    """Upsert the inventory source into the database.

    Always a complete pass: nodes the source no longer lists are removed
    (or flagged while reserved).
    """
    try:
        counts = inventory_sync.sync(full=True, wait=True)
    except (exception.Invalid, exception.IronicUnavailable) as exc:
        print('Inventory not synced: %s' % exc, file=sys.stderr)
        return 1
    except exception.SyncInProgress:
        print('Inventory not synced: another process kept syncing for '
              '%d s.' % inventory_sync.WAIT_SECONDS, file=sys.stderr)
        return 1
    print('Nodes: %d added, %d updated, %d unchanged, %d removed, %d '
          'vanished but kept while reserved.' % tuple(
              counts.get(key, 0) for key in (
                  'added', 'updated', 'unchanged', 'removed', 'flagged')))
    return 0


def expire_reservations():
    """Expire reserved reservations older than [reservations]
    reserved_ttl.
    """
    if not CONF.reservations.reserved_ttl:
        print('[reservations] reserved_ttl is 0: reservations never '
              'expire.')
        return 0
    print('Expired %d reservations.' % reservations.expire())
    return 0


def _arguments(*arguments):
    """Declare a command's arguments, ``(names, add_argument kwargs)``."""
    def decorate(func):
        func.arguments = arguments
        return func
    return decorate


@_arguments(
    (('--dry-run',), {'action': 'store_true',
                      'help': 'Only report what would be released.'}),
)
def release_orphans():
    """Release reservations whose instances Nova has deleted.

    An instance deleted while its compute host was down (Nova deletes it
    locally) leaves its reservation behind; after [reservations]
    orphan_grace it is released, as reserveapi-worker's release-orphans
    job does when [reservations] orphan_interval is set.
    """
    dry_run = CONF.command.dry_run
    try:
        orphans = reservations.release_orphans(dry_run=dry_run)
    except exception.PeerError as exc:
        print('Reservations not released: %s' % exc, file=sys.stderr)
        return 1
    for orphan in orphans:
        reservation = orphan.reservation
        print('Reservation %s: instance %s of host %s on node %s, deleted '
              'in Nova %s; %s.' % (
                  reservation.uuid, reservation.instance_uuid,
                  reservation.host, reservation.node_uuid,
                  _utc(orphan.deleted_at) if orphan.deleted_at != (
                      mirror_nova.LONG_AGO) else 'long ago',
                  'would be released' if dry_run else 'released'))
    print('%d orphaned reservation%s %s.' % (
        len(orphans), '' if len(orphans) == 1 else 's',
        'found (dry run: nothing released)' if dry_run else 'released'))
    return 0


@_arguments(
    (('--from',), {'dest': 'source', 'metavar': 'HOST', 'required': True,
                   'help': 'The dead compute host.'}),
    (('--to',), {'dest': 'destination', 'metavar': 'HOST', 'required': True,
                 'help': 'The compute host that takes its reservations.'}),
    (('--force',), {'action': 'store_true',
                    'help': 'Move them even though Nova reports the source '
                            'up, does not know the destination, or cannot '
                            'be asked.'}),
)
def takeover():
    """Give every live reservation of a dead compute host to another.

    One transaction; refused while Nova's os-services reports the source's
    nova-compute up, unless --force.
    """
    args = CONF.command
    try:
        moved = reservations.take_over(args.source, args.destination,
                                       force=args.force)
    except exception.Invalid as exc:
        print('Nothing moved: %s' % exc, file=sys.stderr)
        return 2
    except (exception.HostStillUp, exception.PeerError) as exc:
        print('Nothing moved: %s Use --force only if you are sure it is '
              'down.' % exc, file=sys.stderr)
        return 1
    for reservation in moved:
        print('Reservation %s (instance %s, node %s, %s) now held by %s.' % (
            reservation.uuid, reservation.instance_uuid,
            reservation.node_uuid, reservation.state, reservation.host))
    print('Moved %d reservation%s from %s to %s.' % (
        len(moved), '' if len(moved) == 1 else 's', args.source,
        args.destination))
    return 0


@_arguments(
    (('--dry-run',), {'action': 'store_true',
                      'help': 'Only report the differences.'}),
    (('--prune',), {'action': 'store_true',
                    'help': 'Also remove extra memberships of aggregates '
                            'the mirror owns.'}),
    (('--from-nova',), {'action': 'store_true',
                        'help': "The desired state is Nova's host "
                                'aggregates.'}),
    (('--file',), {'metavar': 'F',
                   'help': 'The desired state is this JSON file: a list '
                           'of {"uuid": ..., "hosts": [...]}.'}),
)
def sync_aggregates():
    """Compare Placement with the desired aggregates and fix it.

    Without --from-nova or --file the desired state is the one the API
    recorded.
    """
    args = CONF.command
    if args.from_nova and args.file:
        print('Use either --from-nova or --file, not both.',
              file=sys.stderr)
        return 2
    try:
        if args.from_nova:
            desired = mirror_sync.desired_from_nova()
        elif args.file:
            desired = _read_desired_file(args.file)
        else:
            desired = None
        report = mirror_sync.sync(desired, dry_run=args.dry_run,
                                       prune=args.prune)
    except (exception.Invalid, exception.PeerError) as exc:
        print('Aggregates not synced: %s' % exc, file=sys.stderr)
        return 1
    _print_sync_report(report)
    return 0 if report.in_sync else 1


def _read_desired_file(path):
    """The desired state in a JSON file, as the sync body has it."""
    try:
        with open(path) as desired_file:
            document = json.load(desired_file)
    except OSError as exc:
        raise exception.Invalid(reason='cannot read %s: %s'
                                % (path, exc.strerror))
    except ValueError as exc:
        raise exception.Invalid(reason='%s is not JSON: %s' % (path, exc))
    try:
        return mirror_desired.parse(document)
    except ValueError as exc:
        raise exception.Invalid(reason='%s: %s' % (path, exc))


_DIFFERENCES = {
    mirror_sync.MISSING: 'provider %s lacks the aggregate',
    mirror_sync.EXTRA: 'provider %s has the aggregate but should not',
}


def _print_sync_report(report):
    aggregate_uuid = None
    for item in report.differences:
        if item.aggregate_uuid != aggregate_uuid:
            aggregate_uuid = item.aggregate_uuid
            print('Aggregate %s:' % aggregate_uuid)
        if item.difference == mirror_sync.UNVERIFIED:
            text = 'not verified: %s' % item.detail
        else:
            text = _DIFFERENCES[item.difference] % item.provider_uuid
        if not report.dry_run:
            text += '; ' + mirror_sync.ACTIONS[item.action]
            if item.detail and item.difference != (
                    mirror_sync.UNVERIFIED):
                text += ' (%s)' % item.detail
        print('  %s: %s' % (item.host or 'no known host', text))
    counts = ', '.join(
        '%d %s' % (report.count(action), action)
        for action in (mirror_sync.ADDED, mirror_sync.REMOVED,
                       mirror_sync.KEPT, mirror_sync.PENDING,
                       mirror_sync.FAILED)
        if report.count(action))
    if report.dry_run:
        outcome = ' (dry run: nothing changed)'
    else:
        outcome = ': ' + counts if counts else ''
    found = len(report.differences)
    print('Compared %d aggregates and %d hosts: %d difference%s%s.' % (
        report.aggregates, report.hosts, found, '' if found == 1 else 's',
        outcome))
    if report.in_sync:
        print('Placement matches the desired state.')
    elif report.count(mirror_sync.KEPT):
        print('Placement does not match the desired state; --prune '
              'removes the extra memberships.')
    else:
        print('Placement does not match the desired state yet.')


def mirror_status():
    """Count synced and pending memberships; show the oldest pending."""
    status = mirror_state.get_status()
    print('Memberships: %(synced)d synced, %(pending)d pending.' % status)
    oldest = status['oldest_pending']
    if oldest is not None:
        print('Oldest pending: host %s %s aggregate %s, pending since %s, '
              'failed attempts: %d, next attempt %s.' % (
                  oldest.host, 'joining' if oldest.member else 'leaving',
                  oldest.aggregate_uuid, _utc(oldest.pending_since),
                  oldest.attempts, _utc(oldest.next_attempt_at) or 'now'))
        if oldest.last_error:
            print('Last error: %s' % oldest.last_error)
    return 0


def _utc(value):
    return value.strftime('%Y-%m-%d %H:%M:%S UTC') if value else None


COMMANDS = {
    'sync-nodes': sync_nodes,
    'expire-reservations': expire_reservations,
    'sync-aggregates': sync_aggregates,
    'mirror-status': mirror_status,
    'release-orphans': release_orphans,
    'takeover': takeover,
}

DEPRECATED_ALIASES = {
    # Until version 2027.1; the worker always called it
    # release-orphans.
    'reconcile-reservations': 'release-orphans',
}


def _summary(func):
    """A command's docstring up to its first blank line, as one line."""
    return ' '.join(func.__doc__.split('\n\n')[0].split())


def _deprecated(alias, name):
    """``name``'s command, warning first that ``alias`` is going."""
    func = COMMANDS[name]

    def run():
        LOG.warning('"reserveapi-manage %(alias)s" is deprecated and will '
                    'be removed: use "reserveapi-manage %(name)s".',
                    {'alias': alias, 'name': name})
        return func()

    run.__doc__ = 'Deprecated alias of %s.' % name
    run.arguments = getattr(func, 'arguments', ())
    return run


def _add_commands(subparsers):
    commands = dict(COMMANDS, **{
        alias: _deprecated(alias, name)
        for alias, name in DEPRECATED_ALIASES.items()})
    for name, func in sorted(commands.items()):
        parser = subparsers.add_parser(
            name, help=_summary(func), description=_summary(func),
            prog='reserveapi-manage %s' % name)
        for names, kwargs in getattr(func, 'arguments', ()):
            parser.add_argument(*names, **kwargs)
        parser.set_defaults(func=func)


COMMAND_OPT = service.sub_commands(_add_commands)


USAGE = service.usage(
    '[--config-file PATH] [--debug] COMMAND [ARGS]',
    'Operator commands. "reserveapi-manage COMMAND --help" shows a '
    "command's options. Exit codes: 0 done, 1 not done (the output says "
    'why), 2 bad usage.',
    commands=[(name, _summary(func)) for name, func in COMMANDS.items()])


def _check_ironic_for_a_sync():
    """sync-nodes from Ironic without [ironic] is a configuration mistake
    (exit 2), not Ironic being down."""
    if CONF.command.name == 'sync-nodes':
        credentials.check_ironic_at_startup()


@service.console_script
def main(argv=None):
    CONF.register_cli_opt(COMMAND_OPT)
    service.prepare_service(sys.argv[1:] if argv is None else argv,
                            usage=USAGE,
                            checks=(backends.check_connection_url,
                                    _check_ironic_for_a_sync))
    return CONF.command.func()
