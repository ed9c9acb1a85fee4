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


"""reserveapi-status: ``upgrade check`` (oslo.upgradecheck).

Run it with the new code before restarting the services. Exit codes are
oslo.upgradecheck's: 0 all checks passed, 1 a warning to look at, 2 a
failure to fix before upgrading, 255 a check itself crashed (a bug).
"""

import datetime
import functools
import sys

from oslo_policy import opts as policy_opts
from oslo_upgradecheck import common_checks
from oslo_upgradecheck import upgradecheck
from oslo_utils import timeutils

from reserveapi import fleet
from reserveapi.common import exception
from reserveapi.common import service
import reserveapi.conf
from reserveapi.db import backends
from reserveapi.db import derived
from reserveapi.db import healthcheck
from reserveapi.db import migration
from reserveapi.inventory import sources as inventory_sources
from reserveapi.inventory import sync as inventory_sync
from reserveapi.mirror import nova
from reserveapi.mirror import placement
from reserveapi.mirror import state as mirror_state
from reserveapi.peers import credentials

CONF = reserveapi.conf.CONF
SUCCESS = upgradecheck.Code.SUCCESS
WARNING = upgradecheck.Code.WARNING
FAILURE = upgradecheck.Code.FAILURE
PEER_TIMEOUT = 10
"""Seconds a check waits for Placement or Nova."""
STALE_SYNC_INTERVALS = 3
"""An inventory not synced for this many [inventory] sync_intervals is
stale: the worker is not running, or every sync fails."""
STALE_PENDING_BACKOFFS = 3
"""A change pending for this many [mirror] backoff_max has been retried
at the longest back-off several times without Placement agreeing."""

NOVA_FEATURES = (
    ('[mirror] resolve_hosts_via_nova',
     lambda: CONF.mirror.resolve_hosts_via_nova),
    ('[mirror] reconcile_from_nova_interval',
     lambda: bool(CONF.mirror.reconcile_from_nova_interval)),
    ('[reservations] orphan_interval',
     lambda: bool(CONF.reservations.orphan_interval)),
)
"""Options that make the service call Nova, and whether each is on."""


def _policy_files_found():
    """Whether a policy file or directory of ``[oslo_policy]`` exists:
    without one the rules are the defaults."""
    policy_opts.set_defaults(CONF)
    group = CONF.oslo_policy
    return any(CONF.find_file(path)
               for path in [group.policy_file] + list(group.policy_dirs))


def _result(code, details):
    return upgradecheck.Result(code, details)


def _utc(value):
    return value.strftime('%Y-%m-%d %H:%M:%S UTC')


class Checks(upgradecheck.UpgradeCommands):
    """Whether this deployment is ready to run this version."""

    @functools.cached_property
    def _schema(self):
        """(revision, applied, pending) migrations, or the reason this
        code cannot read the database's revision."""
        try:
            at = migration.current()
        except exception.DatabaseUnavailable as exc:
            return exc.detail
        if not migration.knows(at):
            return None
        return (at,) + tuple(migration.applied_and_pending(at))

    @functools.cached_property
    def _schema_problem(self):
        """Why this code cannot serve on the database yet, or None."""
        schema = self._schema
        if isinstance(schema, str):
            return schema
        if schema is None:
            return None
        at, _applied, pending = schema
        if at is None:
            return ('The database has no schema yet: run '
                    '"reserveapi-dbsync upgrade".')
        offline = [m.revision for m in pending if m.phase == migration.OFFLINE]
        if offline:
            return ('The database schema is at %s, older than version '
                    '1.0.0\'s: stop every service and run '
                    '"reserveapi-dbsync upgrade".' % at)
        expand = [m.revision for m in pending if m.phase == migration.EXPAND]
        if expand and pending[0].phase == migration.EXPAND:
            return ('The database schema is at %s, behind this version '
                    '(%s): run "reserveapi-dbsync expand", then '
                    '"migrate".' % (at, ', '.join(expand)))
        return None

    def _not_checked(self):
        if self._schema_problem is not None:
            return _result(WARNING, 'Not checked until the database schema '
                           'is current.')
        return None

    def _check_schema(self):
        if self._schema_problem is not None:
            return _result(FAILURE, self._schema_problem)
        if self._schema is None:
            return _result(WARNING, 'The database is at %s, newer than '
                           'this version knows (%s): a newer version '
                           'expanded it. This version serves on until that '
                           'version contracts.' % (migration.current(),
                                                   migration.head()))
        at, _applied, pending = self._schema
        if pending:
            return _result(SUCCESS, 'At %s; %d contract migrations to run '
                           'once no process of the previous version runs.'
                           % (at, len(pending)))
        return _result(SUCCESS, 'At %s.' % at)

    def _check_privileges(self):
        """What the database user lacks for the migrations still to
        run: found now, not half-way through an upgrade."""
        if isinstance(self._schema, str):
            return _result(FAILURE, self._schema)
        pending = self._schema[2] if self._schema else []
        if not pending:
            return _result(SUCCESS, 'No migration to run.')
        missing = migration.missing_privileges(pending)
        if missing:
            return _result(FAILURE, ' '.join(missing))
        return _result(SUCCESS, 'The database user may apply the %d '
                       'pending migrations.' % len(pending))

    def _check_derived_data(self):
        """Rows computed from others (node texts and flags, the summary
        counters) agree with what they are computed from."""
        skipped = self._not_checked()
        if skipped:
            return skipped
        results = derived.check_all()
        wrong = ['%d %s' % (found.found, name)
                 for name, found in results.items() if found.found]
        if wrong:
            return _result(FAILURE, 'Derived rows disagree with their '
                           'source (%s): the matcher and the capacity read '
                           'them. Run "reserveapi-dbsync migrate".'
                           % ', '.join(wrong))
        return _result(SUCCESS, 'Node texts, node flags and the summary '
                       'counters agree with their source.')

    def _check_versions(self):
        """The versions whose processes serve this database, by their
        heartbeats and the database's own sessions, against the schema:
        the mixed fleet of a rolling upgrade."""
        skipped = self._not_checked()
        if skipped or self._schema is None:
            return skipped or _result(WARNING, 'Not checked: the database '
                                      'is newer than this version.')
        _at, applied, pending = self._schema
        connected = fleet.connected()
        processes = connected.processes
        said = []
        if processes:
            said.append('Running: %s.' % fleet.describe(processes))
        if connected.unheard:
            said.append('Connected without a heartbeat: %s.'
                        % fleet.describe(connected.unheard, pids=True))
        if connected.unknown:
            said.append(fleet.describe_unknown(connected))
        running = ' '.join(said) or 'No process is connected.'
        ahead = fleet.newer_than_schema(processes, applied)
        if ahead:
            return _result(FAILURE, '%s The schema is behind the code of '
                           '%s: run "reserveapi-dbsync expand".'
                           % (running, fleet.describe(ahead)))
        broken = fleet.blocking_contract(
            processes, [m for m in applied if m.phase == migration.CONTRACT])
        if broken:
            return _result(FAILURE, '%s The database was contracted for '
                           'newer versions while %s still run: they may '
                           'fail. Upgrade or stop them now.'
                           % (running, fleet.describe(broken, pids=True)))
        contract = [m for m in pending if m.phase == migration.CONTRACT]
        waited_for = []
        older = fleet.older_than_this(processes)
        if older:
            waited_for.append(fleet.describe(older, pids=True))
        if connected.unknown:
            waited_for.append('the processes behind those sessions')
        if contract and waited_for:
            return _result(WARNING, '%s %d contract migrations are pending '
                           'and must wait until %s stop.'
                           % (running, len(contract),
                              ' and '.join(waited_for)))
        if contract:
            return _result(WARNING, '%s %d contract migrations are '
                           'pending and no older version runs: finish the '
                           'upgrade with "reserveapi-dbsync contract".'
                           % (running, len(contract)))
        contracted = [m for m in applied if m.phase == migration.CONTRACT]
        if connected.unknown and contracted and not connected.unnamed:
            return _result(WARNING, '%s If one is a process of a version '
                           'before %s, it fails on this contracted schema: '
                           'upgrade or stop it.'
                           % (running, fleet.NAMED_SINCE))
        return _result(SUCCESS, running)

    def _check_database_health(self):
        """What ``GET /healthcheck`` answers about the database: on
        Galera, whether this node is Synced and Primary."""
        healthy, reason, details = healthcheck.evaluate()
        if healthy:
            return _result(SUCCESS, reason[0].upper() + reason[1:] + '.')
        if details != reason:
            reason = '%s (%s)' % (reason, details)
        return _result(FAILURE, 'GET /healthcheck answers 503: %s.' % reason)

    def _check_inventory_source(self):
        readable, details = inventory_sources.configured().check()
        return _result(SUCCESS if readable else FAILURE, details)

    def _check_inventory_sync(self):
        skipped = self._not_checked()
        if skipped:
            return skipped
        last = inventory_sync.last_sync()
        interval = CONF.inventory.sync_interval
        source = CONF.inventory.source
        if last is None:
            return _result(WARNING, 'No complete sync of source %s is '
                           'recorded: run "reserveapi-manage sync-nodes" '
                           'or reserveapi-worker.' % source)
        synced = 'Last complete sync of source %s at %s, %d nodes' % (
            source, _utc(last.synced_at), last.nodes)
        if last.outage_since is not None:
            return _result(WARNING, synced + '; unreachable since %s: %s'
                           % (_utc(last.outage_since), last.last_error))
        if not interval:
            return _result(SUCCESS, synced + '; [inventory] sync_interval '
                           'is 0, so only reserveapi-manage sync-nodes '
                           'syncs.')
        stale = datetime.timedelta(seconds=STALE_SYNC_INTERVALS * interval)
        if timeutils.utcnow() - last.synced_at > stale:
            return _result(WARNING, synced + ': more than %d × '
                           '[inventory] sync_interval ago. Is '
                           'reserveapi-worker running, and does its sync '
                           'succeed?' % STALE_SYNC_INTERVALS)
        return _result(SUCCESS, synced + '.')

    def _check_placement(self):
        """``[placement]`` is complete and accepted once the mirror is
        used: a membership was ever recorded, or ``[placement]`` names an
        auth_type (someone meant to configure it).
        """
        skipped = self._not_checked()
        if skipped:
            return skipped
        counts = mirror_state.get_status()
        recorded = counts['synced'] + counts['pending']
        missing = credentials.missing_options('placement')
        if not recorded and 'auth_type' in missing:
            return _result(SUCCESS, 'The aggregate mirror is not used yet '
                           '(no membership recorded) and [placement] is '
                           'not configured.')
        if missing:
            return _result(FAILURE, '%s %d aggregate memberships are '
                           'recorded and cannot reach Placement.' % (
                               credentials.describe_missing(
                                   'placement', missing), recorded))
        client = placement.PlacementClient(timeout=PEER_TIMEOUT)
        return _try_peer('Placement', lambda: client.providers_named(
            'reserveapi-status-check'))

    def _check_nova(self):
        features = [name for name, enabled in NOVA_FEATURES
                    if enabled()]
        if not features:
            return _result(SUCCESS, 'No enabled feature calls Nova.')
        missing = credentials.missing_options('nova')
        if missing:
            return _result(FAILURE, '%s It is needed by %s.' % (
                credentials.describe_missing('nova', missing),
                ', '.join(features)))
        client = nova.NovaClient(timeout=PEER_TIMEOUT)
        return _try_peer('Nova', client.aggregates)

    def _check_mirror_backlog(self):
        skipped = self._not_checked()
        if skipped:
            return skipped
        status = mirror_state.get_status()
        oldest = status['oldest_pending']
        if oldest is None:
            return _result(SUCCESS, '%d memberships, none pending.'
                           % status['synced'])
        limit = datetime.timedelta(
            seconds=STALE_PENDING_BACKOFFS * CONF.mirror.backoff_max)
        since = 'pending since %s' % _utc(oldest.pending_since)
        if timeutils.utcnow() - oldest.pending_since <= limit:
            return _result(SUCCESS, '%d memberships pending, the oldest %s.'
                           % (status['pending'], since))
        return _result(WARNING, (
            '%d memberships pending; the oldest, host %s %s aggregate %s, '
            'is %s (more than %d × [mirror] backoff_max) after %d failed '
            'attempts; last error: %s. Is reserveapi-worker running? See '
            '"reserveapi-manage mirror-status".') % (
                status['pending'], oldest.host,
                'joining' if oldest.member else 'leaving',
                oldest.aggregate_uuid, since, STALE_PENDING_BACKOFFS,
                oldest.attempts, oldest.last_error or 'none'))

    def _check_project_views(self):
        """Microversion 1.4 keeps the whole inventory and capacity to
        admin and service; a policy file may open them again."""
        closed = _result(SUCCESS, 'A project sees only the nodes it owns '
                         'or leases; capacity is admin\'s and service\'s.')
        if not _policy_files_found():
            return closed
        # Imported only for a policy file: building the rules loads
        # oslo.policy's check plugins, whose entry-point cache a command
        # that only reads should not write into the user's home.
        from reserveapi import policy
        from reserveapi.policies import capacity as capacity_policy
        from reserveapi.policies import node as node_policy
        opened = policy.opened_to_readers((node_policy.LIST_ALL,
                                           capacity_policy.GET))
        if not opened:
            return closed
        return _result(WARNING, 'The policy file lets every reader of any '
                       'project use %s: each project sees every node, '
                       'with its capabilities, partition and reservations, '
                       'as before microversion 1.4. Remove these rules '
                       'from the policy file unless every project may see '
                       'the whole cloud.' % ', '.join(opened))

    _upgrade_checks = (
        ('Database schema', _check_schema),
        ('Database privileges', _check_privileges),
        ('Derived data', _check_derived_data),
        # The check keeps its published name (release notes, --json).
        ('Running releases', _check_versions),
        ('Database health', _check_database_health),
        ('Inventory source', _check_inventory_source),
        ('Inventory sync', _check_inventory_sync),
        ('Placement credentials', _check_placement),
        ('Nova credentials', _check_nova),
        ('Aggregate mirror backlog', _check_mirror_backlog),
        ('Project views', _check_project_views),
        ('Policy file JSON to YAML migration',
         (common_checks.check_policy_json, {'conf': CONF})),
    )


def _try_peer(name, call):
    """One authenticated request: are the credentials accepted?"""
    try:
        call()
    except exception.PeerError as exc:
        return _result(FAILURE, '%s refused or did not answer our '
                       'request: %s' % (name, exc.detail))
    return _result(SUCCESS, '%s accepted our credentials.' % name)


USAGE = service.usage(
    '[--config-file PATH] upgrade check [--json]',
    'Checks whether this deployment is ready to run this version: the '
    'database schema, the inventory source and its last sync, the '
    'Placement and Nova credentials, the aggregate mirror backlog. Run '
    'it with the new code before restarting the services. Exit codes: 0 '
    'all passed, 1 a warning to look at, 2 a failure to fix first, 255 a '
    'check crashed (a bug).',
    commands=(('upgrade check', 'Run every check; --json for a JSON '
                                'report.'),))


def _add_commands(subparsers):
    """oslo.upgradecheck's ``upgrade check [--json]``, with a ``prog`` of
    its own."""
    parser = subparsers.add_parser('upgrade', prog='reserveapi-status '
                                   'upgrade')
    parser.add_argument('check', choices=('check',))
    parser.add_argument('--json', action='store_true',
                        help='Print the results as JSON.')
    parser.set_defaults(action_fn=Checks().check)


@service.console_script
def main(argv=None):
    # upgradecheck.main, with our usage and the options every command
    # takes accepted after "upgrade check" too.
    CONF.register_cli_opt(service.sub_commands(_add_commands))
    service.prepare_service(sys.argv[1:] if argv is None else argv,
                            usage=USAGE,
                            checks=(backends.check_connection_url,))
    upgradecheck.CONF = CONF
    return upgradecheck.run(CONF)
