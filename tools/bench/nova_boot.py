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

"""A boot storm through real Nova: the stock Ironic driver on one compute
service against ours on ``--hosts``, in one run; then, with
``--kill-host-after N``, ours again with one host killed mid-storm.

The harness is the Nova functional suite's
(``reserveapi_testing/nova/base.py``): real nova-api, conductor,
scheduler and Placement in this process, the real Ironic and the
reservation service beside it. Each scenario POSTs ``--servers`` servers
at once and reports, per driver: boots per minute (ACTIVE servers over
the time from the first POST to the last ACTIVE), median and p95 time
from each POST to ACTIVE, how many ended in ERROR, the reschedules (an
instance whose ``create`` action has more than one
``compute__do_build_and_run_instance`` event: it was built on more than
one host) and how many of them followed a 409 from ``POST
/v1/reservations``, and nodes given twice: every reservation the service
granted during the run (the ``reserve()`` calls, timed) against the
releases, and at the end the live reservations against Ironic's
``instance_uuid``. Then what the reservation calls add to a spawn.

With ``--kill-host-after N``, once N servers are ACTIVE the host with the
most unfinished builds dies: its driver stops answering (every call into
Ironic or the reservation service blocks, as in a dead process) and its
nova-compute is stopped and forced down (``stop_compute``). Every boot
not sent to it must still go ACTIVE. Then the documented path for its
unfinished builds (doc/source/nova.rst, "When a compute host dies"):
delete the instances, ``reserveapi-manage release-orphans``
releases their reservations as orphans, nodes Ironic still shows holding
a deleted instance are undeployed; the bench checks the nodes came back.

Usage (from the top of the tree)::

    tox -e nova-bench -- [--servers 10] [--hosts 3] [--nodes N]
                         [--kill-host-after 0] [--unshuffled]
"""

import argparse
import collections
import functools
import math
import os
import shlex
import statistics
import sys
import time
import unittest

from nova.virt.ironic import driver as stock_driver

from reserveapi import client
from reserveapi.nova import driver as our_driver
from reserveapi_testing.nova import base

TIMINGS = collections.defaultdict(list)
# Every reservation the service granted in the scenario: its UUID, node,
# instance, and when the reserve() call that got it was made and answered.
GRANTS = []
# Reservation UUID: when its release was first asked for.
RELEASES = {}
# Instance UUID: how many reserve() calls for it were answered 409.
CONFLICTS = collections.Counter()
# Instance UUID: [(when, host)] for every build the conductor cast.
CASTS = collections.defaultdict(list)
# Why builds failed on a host (rescheduled or ERROR): how many each.
BUILD_FAILURES = collections.Counter()
# Placement PUTs by what they wrote and their status: ('inventories',
# 200), ('allocations', 409), ...
PLACEMENT_PUTS = collections.Counter()
BUILD_EVENT = 'compute__do_build_and_run_instance'
POLL = 0.2
LIVE = ('reserved', 'active')


def _timed(name, function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        started = time.monotonic()
        try:
            return function(*args, **kwargs)
        finally:
            TIMINGS[name].append(time.monotonic() - started)
    return wrapper


def _recorded_reserve(function):
    @functools.wraps(function)
    def wrapper(self, instance_uuid, *args, **kwargs):
        asked = time.monotonic()
        try:
            reservation = function(self, instance_uuid, *args, **kwargs)
        except client.Conflict:
            CONFLICTS[instance_uuid] += 1
            raise
        GRANTS.append({'uuid': reservation['uuid'],
                       'node': reservation['node_uuid'],
                       'instance': instance_uuid, 'asked': asked,
                       'answered': time.monotonic()})
        return reservation
    return wrapper


def _recorded_release(function):
    @functools.wraps(function)
    def wrapper(self, uuid, *args, **kwargs):
        RELEASES.setdefault(uuid, time.monotonic())
        return function(self, uuid, *args, **kwargs)
    return wrapper


def _recorded_cast(function):
    # The conductor passes everything by keyword.
    @functools.wraps(function)
    def wrapper(self, ctxt, *args, **kwargs):
        instance = kwargs['instance'] if 'instance' in kwargs else args[0]
        host = kwargs['host'] if 'host' in kwargs else args[1]
        CASTS[instance.uuid].append((time.monotonic(), host))
        return function(self, ctxt, *args, **kwargs)
    return wrapper


def _recorded_build(function):
    @functools.wraps(function)
    def wrapper(self, *args, **kwargs):
        try:
            return function(self, *args, **kwargs)
        except Exception as error:
            BUILD_FAILURES['%s: %s' % (type(error).__name__,
                                       str(error)[:300])] += 1
            raise
    return wrapper


def _recorded_put(function):
    @functools.wraps(function)
    def wrapper(self, url, *args, **kwargs):
        response = function(self, url, *args, **kwargs)
        PLACEMENT_PUTS[url.rstrip('/').rsplit('/', 1)[-1]
                       if '/inventories' in url else
                       'allocations' if url.startswith('/allocations')
                       else 'other', response.status_code] += 1
        return response
    return wrapper


def _instrument():
    # Imported here: only this bench needs the compute RPC API and
    # manager.
    from nova.compute import manager
    from nova.compute import rpcapi
    from nova.scheduler.client import report
    reservations = client.ReservationClient
    reservations.reserve = _timed(
        'reserve', _recorded_reserve(reservations.reserve))
    reservations.release = _recorded_release(reservations.release)
    reservations.confirm = _timed('confirm', reservations.confirm)
    # Ours reserves, then marks the node in Ironic as the stock one does.
    our_driver.IronicDriver.prepare_for_spawn = _timed(
        'prepare_for_spawn', our_driver.IronicDriver.prepare_for_spawn)
    stock_driver.IronicDriver.prepare_for_spawn = _timed(
        'stock_prepare_for_spawn',
        stock_driver.IronicDriver.prepare_for_spawn)
    report.SchedulerReportClient.put = _recorded_put(
        report.SchedulerReportClient.put)
    rpcapi.ComputeAPI.build_and_run_instance = _recorded_cast(
        rpcapi.ComputeAPI.build_and_run_instance)
    manager.ComputeManager._build_and_run_instance = _recorded_build(
        manager.ComputeManager._build_and_run_instance)


def _reset_records():
    for record in (TIMINGS, GRANTS, RELEASES, CONFLICTS, CASTS,
                   BUILD_FAILURES, PLACEMENT_PUTS):
        record.clear()


class _HostDied(Exception):
    """Ends a dead host's stuck threads once the scenario is over (their
    instances are deleted by then): Nova's own error handling lets every
    thread it started finish, which its test cleanup waits for."""


class _DeadClient:
    """A dead host's Ironic and reservation clients: every call blocks,
    as a peer of a process that is gone never hears from it again. At the
    end of the scenario the blocked threads end (:class:`_HostDied`)."""

    def __init__(self):
        self.dead = True

    def __getattr__(self, name):
        def call(*args, **kwargs):
            while self.dead:
                time.sleep(POLL)
            raise _HostDied(name)
        return call

    def bury(self):
        self.dead = False


def _nearest_rank(values, fraction):
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


class _Boot:
    """Mixed into a harness: boot ``servers`` at once, time each; with
    ``kill_after``, kill a host once that many are ACTIVE."""

    servers = 10
    kill_after = 0

    def runTest(self):
        if self.kill_after:
            # Imported here: only the scenario with a dead host needs the
            # service to ask Nova (orphan cleanup).
            from reserveapi_testing.nova import nova_api
            self.reserveapi.configure(nova_api.serve_peers_on_loopback(self))
        _reset_records()
        self.victim = None
        load = os.getloadavg()[0]
        self.posted, self.active, self.failed = {}, {}, {}
        started = polled = time.monotonic()
        for index in range(self.servers):
            # Timed from the POST, each; polled meanwhile, so that ACTIVE
            # times and the kill do not wait for the last POST.
            asked = time.monotonic()
            (server,) = self.boot(1, name='bench-%d' % index)
            self.posted[server['id']] = asked
            if time.monotonic() - polled >= 1:
                self._poll()
                polled = time.monotonic()
        posting = time.monotonic() - started
        deadline = started + max(base.WAIT_TIMEOUT, 6 * self.servers)
        while True:
            pending = self._poll()
            if not pending:
                break
            self.assertLess(time.monotonic(), deadline,
                            'still building: %s' % pending)
            time.sleep(POLL)
        posted, active, failed = self.posted, self.active, self.failed
        self.assertTrue(active, 'no server became ACTIVE: %s' % failed)
        took = [active[uuid] - posted[uuid] for uuid in active]
        attempts = {uuid: len(self._builds(uuid)) for uuid in posted}
        rescheduled = [uuid for uuid, count in attempts.items() if count > 1]
        result = {
            'label': self.label, 'hosts': len(self.HOSTS),
            'servers': self.servers, 'nodes': self.NODES,
            'active': len(active), 'errors': list(failed.values()),
            'median': statistics.median(took),
            'p95': _nearest_rank(took, 0.95), 'max': max(took),
            'per_minute': len(took) / (max(active.values()) - started) * 60,
            'posting': posting, 'failures': dict(BUILD_FAILURES),
            'first_hosts': collections.Counter(
                CASTS[uuid][0][1] for uuid in posted if CASTS[uuid]),
            'rescheduled': len(rescheduled),
            'extra_builds': sum(attempts[uuid] - 1 for uuid in rescheduled),
            'after_409': sum(1 for uuid in rescheduled if CONFLICTS[uuid]),
            'conflicts': sum(CONFLICTS.values()),
            'grants': len({grant['uuid'] for grant in GRANTS}),
            'inventory_writes': sum(
                count for (kind, _status), count in PLACEMENT_PUTS.items()
                if kind == 'inventories'),
            'placement_conflicts': {
                kind: count for (kind, status), count
                in PLACEMENT_PUTS.items() if status == 409},
            'load': (load, os.getloadavg()[0]),
            'timings': {name: list(values)
                        for name, values in TIMINGS.items()},
        }
        if self.victim is not None:
            result['dead'] = self._dead_host_path(posted, active, failed)
        result['doubles_timeline'] = (
            _timeline_doubles() if self.reserveapi is not None else None)
        result['doubles_end'] = self._end_state_doubles(active)
        RESULTS.append(result)

    def _poll(self):
        """Note new ACTIVE and ERROR servers, kill a host when it is
        time; the boots still pending (those sent to a killed host are
        not waited for)."""
        now = time.monotonic()
        for server in self.api.get_servers(detail=True):
            if server['status'] == 'ACTIVE':
                self.active.setdefault(server['id'], now)
            elif server['status'] == 'ERROR':
                self.failed.setdefault(server['id'],
                                       server['fault']['message'])
        unfinished = [uuid for uuid in self.posted
                      if uuid not in self.active and uuid not in self.failed]
        if (self.kill_after and self.victim is None
                and len(self.active) >= self.kill_after):
            self._kill(unfinished)
        return [uuid for uuid in unfinished
                if not self._sent_to_victim(uuid)]

    # A dead host ----------------------------------------------------

    def _sent_to_victim(self, uuid):
        return bool(self.victim and CASTS[uuid]
                    and CASTS[uuid][-1][1] == self.victim)

    def _kill(self, unfinished):
        """Kill the host with the most unfinished builds cast to it."""
        counts = collections.Counter(
            CASTS[uuid][-1][1] for uuid in unfinished if CASTS[uuid])
        self.victim = max(sorted(self.HOSTS), key=lambda host: counts[host])
        self.killed_at = time.monotonic()
        dead = _DeadClient()
        self.addCleanup(time.sleep, 2 * POLL)  # the stuck threads end
        self.addCleanup(dead.bury)
        driver = self.computes[self.victim].manager.driver
        for client_attribute in ('_ironic_connection', '_reservations'):
            # Renamed in the driver: the host would not die, say so.
            self.assertIn(client_attribute, vars(driver))
            setattr(driver, client_attribute, dead)
        # A killed process waits for nothing: no graceful shutdown.
        self.flags(manager_shutdown_timeout=0)
        self.stop_compute(self.victim)

    def _dead_host_path(self, posted, active, failed):
        """What became of the boots sent to the dead host; then the
        documented path frees the nodes of its unfinished builds."""
        sent = [uuid for uuid in posted if self._sent_to_victim(uuid)]
        stranded = [uuid for uuid in sent
                    if uuid not in active and uuid not in failed]
        after_kill = [uuid for uuid in sent
                      if CASTS[uuid][-1][0] >= self.killed_at]
        held = {grant['instance']: grant['node'] for grant in GRANTS
                if grant['instance'] in stranded}
        ironic = self.ironic_nodes()
        held_states = collections.Counter(
            ironic[node]['provision_state']
            + (' (instance set)' if ironic[node]['instance_uuid'] else '')
            for node in held.values())
        live_before = [r for r in self.reserveapi.reservations()
                       if r['instance_uuid'] in stranded
                       and r['state'] in LIVE]

        started = time.monotonic()
        self.delete_and_wait([self.api.get_server(uuid)
                              for uuid in stranded])
        self.reserveapi.configure({'reservations': {'orphan_grace': 0}})
        code, out, err = self.reserveapi.manage('release-orphans')
        reconcile_output = (out + err).strip().splitlines()
        left = [r for r in self.reserveapi.reservations()
                if r['instance_uuid'] in stranded and r['state'] in LIVE]
        # Ironic still showing a deleted instance: undeploy the node.
        carrying = [node['uuid'] for node in self.ironic_nodes().values()
                    if node['instance_uuid'] in stranded]
        self.ironic.wait_for(carrying)
        for node in carrying:
            self.ironic.set_provision_state(node, 'deleted')
        self.ironic.wait_for(carrying, provision_state='available')
        self.sync_reservation_inventory()
        free = sum(row['available'] for row in self.reserveapi.capacity())
        return {
            'host': self.victim, 'sent': len(sent),
            'active_at_kill': sum(1 for when in active.values()
                                  if when <= self.killed_at),
            'active_before_kill': sum(1 for uuid in sent if uuid in active),
            'errors': sum(1 for uuid in sent if uuid in failed),
            'stranded': len(stranded), 'cast_after_kill': len(after_kill),
            'never_built': sum(1 for uuid in stranded
                               if not self._build_events_started(uuid)),
            'held_nodes': len(held), 'held_states': dict(held_states),
            'live_before': len(live_before), 'reconcile_code': code,
            'reconcile_output': reconcile_output, 'live_after': len(left),
            'undeployed': len(carrying), 'path_seconds':
                time.monotonic() - started,
            'free': free, 'free_expected': self.NODES - len(active),
        }

    # Counting ---------------------------------------------------------

    def _create_events(self, uuid):
        for action in self.api.get_instance_actions(uuid):
            if action['action'] == 'create':
                return self.api.get_instance_action_details(
                    uuid, action['request_id']).get('events', [])
        return []

    def _builds(self, uuid):
        """The instance's builds, one per host it was built on: its create
        action's build events."""
        return [event for event in self._create_events(uuid)
                if event['event'] == BUILD_EVENT]

    def _build_events_started(self, uuid):
        return bool(self._builds(uuid))

    def _end_state_doubles(self, active):
        """Nodes holding two instances at the end: an ACTIVE server not on
        exactly one Ironic node, a node held by two live reservations, a
        live reservation whose node Ironic gives another instance."""
        nodes = self.ironic_nodes()
        on_nodes = collections.Counter(
            node['instance_uuid'] for node in nodes.values()
            if node['instance_uuid'])
        doubles = sum(1 for uuid in active if on_nodes[uuid] != 1)
        if self.reserveapi is not None:
            live = [r for r in self.reserveapi.reservations()
                    if r['state'] in LIVE]
            held = collections.Counter(r['node_uuid'] for r in live)
            doubles += sum(count - 1 for count in held.values())
            doubles += sum(
                1 for r in live
                if nodes[r['node_uuid']]['instance_uuid']
                not in (None, r['instance_uuid']))
        return doubles


def _timeline_doubles():
    """Grants of a node whose previous reservation was not released
    before the new one was answered."""
    by_node = collections.defaultdict(dict)
    for grant in GRANTS:
        by_node[grant['node']].setdefault(grant['uuid'], grant)
    doubles = 0
    for grants in by_node.values():
        ordered = sorted(grants.values(), key=lambda g: g['answered'])
        for before, after in zip(ordered, ordered[1:], strict=False):
            released = RELEASES.get(before['uuid'])
            if released is None or released > after['answered']:
                doubles += 1
    return doubles


RESULTS = []


def _case(label, driver, hosts, args, kill_after=0, shuffle_hosts=True):
    attributes = {'label': label, 'COMPUTE_DRIVER': driver,
                  'HOSTS': hosts, 'servers': args.servers,
                  'NODES': args.nodes, 'kill_after': kill_after,
                  'SHUFFLE_HOSTS': shuffle_hosts}
    return type(label, (_Boot, base.IronicTestCase), attributes)()


def _median_ms(timings, name):
    values = timings.get(name)
    if not values:
        return 'n/a'
    return '%.0f ms median, %.0f ms max (%d calls)' % (
        statistics.median(values) * 1000, max(values) * 1000, len(values))


def _command():
    args = ' '.join(shlex.quote(arg) for arg in sys.argv[1:])
    if os.environ.get('TOX_ENV_NAME') == 'nova-bench':
        return 'tox -e nova-bench -- %s' % args
    return 'python tools/bench/nova_boot.py %s' % args


def _table(title, results):
    print('\n### %s\n' % title)
    print('`%s`\n' % _command())
    print('| driver | hosts | servers | nodes | POSTs s | ACTIVE | ERROR | '
          'boots/min | median s | p95 s | max s | rescheduled (extra '
          'builds) | of them after a 409 | 409s | reservations granted | '
          'nodes given twice (run / end) | load 1 min (start / end) |')
    print('|' + '---|' * 17)
    for r in results:
        doubles = '%s / %d' % (
            'n/a' if r['doubles_timeline'] is None
            else r['doubles_timeline'], r['doubles_end'])
        print('| %s | %d | %d | %d | %.1f | %d | %d | %.1f | %.2f | %.2f | '
              '%.2f | %d (%d) | %d | %d | %s | %s | %.1f / %.1f |' % (
                  r['label'], r['hosts'], r['servers'], r['nodes'],
                  r['posting'], r['active'], len(r['errors']), r['per_minute'],
                  r['median'], r['p95'], r['max'], r['rescheduled'],
                  r['extra_builds'], r['after_409'], r['conflicts'],
                  r['grants'] if r['label'] != 'stock' else 'n/a',
                  doubles, r['load'][0], r['load'][1]))
    for r in results:
        print('\n%s: Placement inventory writes %d (%.2f per boot); '
              'Placement 409s: %s' % (
                  r['label'], r['inventory_writes'],
                  r['inventory_writes'] / r['servers'],
                  ', '.join('%s %d' % item for item in sorted(
                      r['placement_conflicts'].items())) or 'none'))
        print('\n%s: first build cast per host: %s' % (r['label'], ', '.join(
            '%s %d' % item for item in sorted(r['first_hosts'].items()))))
        for reason, count in sorted(r['failures'].items()):
            print('\n%s: %d failed build(s): %s' % (r['label'], count,
                                                   reason))
        for error in sorted(set(r['errors'])):
            print('\n%s ERROR: %s' % (r['label'], error))


def _dead_report(dead, kill_after):
    print('\nHost %s killed once %d boots were ACTIVE (%d at the kill):'
          % (dead['host'], kill_after, dead['active_at_kill']))
    print('- boots the scheduler sent to it (last build cast there): %d; '
          'ACTIVE before the kill: %d, ERROR: %d, stuck in BUILD: %d '
          '(cast after the kill: %d; never started building: %d)' % (
              dead['sent'], dead['active_before_kill'], dead['errors'],
              dead['stranded'], dead['cast_after_kill'],
              dead['never_built']))
    print('- nodes reserved by its stuck builds: %d, in Ironic: %s; live '
          'reservations %d' % (
              dead['held_nodes'], dead['held_states'] or '-',
              dead['live_before']))
    print('- documented path (delete the instances, reserveapi-manage '
          'release-orphans with orphan_grace 0, undeploy nodes still '
          'carrying a deleted instance), %.1f s: reconcile exit %d, "%s"; '
          'live reservations left %d; nodes undeployed %d' % (
              dead['path_seconds'], dead['reconcile_code'],
              dead['reconcile_output'][-1] if dead['reconcile_output']
              else '', dead['live_after'], dead['undeployed']))
    print('- free nodes after: %d (expected %d = nodes - ACTIVE servers)'
          % (dead['free'], dead['free_expected']))


def _problems(results):
    problems = []
    for r in results:
        if r['doubles_timeline'] or r['doubles_end']:
            problems.append('%s: nodes given twice' % r['label'])
        dead = r.get('dead')
        if dead is None:
            continue
        if r['errors']:
            problems.append('%s: boots not sent to the dead host ended '
                            'ERROR' % r['label'])
        if (dead['reconcile_code'] or dead['live_after']
                or dead['free'] != dead['free_expected']):
            problems.append('%s: the dead host\'s nodes did not all come '
                            'back' % r['label'])
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--servers', type=int, default=10,
                        help='servers POSTed at once per scenario')
    parser.add_argument('--hosts', type=int, default=3,
                        help='compute hosts running our driver')
    parser.add_argument('--nodes', type=int,
                        help='Ironic nodes (default: servers + 20%%, at '
                             'least 2 more)')
    parser.add_argument('--kill-host-after', type=int, default=0,
                        metavar='N',
                        help='also run the storm with ours and kill one '
                             'host once N servers are ACTIVE')
    parser.add_argument('--unshuffled', action='store_true',
                        help='also run the storm with ours and Nova\'s '
                             '[filter_scheduler] '
                             'shuffle_best_same_weighed_hosts off (the '
                             'default; doc/source/nova.rst turns it on)')
    args = parser.parse_args()
    if args.nodes is None:
        args.nodes = args.servers + max(2, args.servers // 5)
    if args.servers > args.nodes:
        parser.error('--servers must not exceed --nodes')
    if args.hosts < 1 or (args.kill_host_after and args.hosts < 2):
        parser.error('--hosts must be at least 1 (2 to kill one)')
    if args.kill_host_after >= args.servers:
        parser.error('--kill-host-after must be less than --servers')
    _instrument()
    hosts = tuple('compute-%d' % index
                  for index in range(1, args.hosts + 1))
    cases = [_case('stock', 'ironic.IronicDriver', ('compute-1',), args),
             _case('reserveapi', 'reserveapi.IronicDriver', hosts, args)]
    if args.unshuffled:
        cases.append(_case('reserveapi, unshuffled',
                           'reserveapi.IronicDriver', hosts, args,
                           shuffle_hosts=False))
    if args.kill_host_after:
        cases.append(_case('reserveapi, host killed',
                           'reserveapi.IronicDriver', hosts, args,
                           kill_after=args.kill_host_after))
    outcome = unittest.TextTestRunner(verbosity=0).run(
        unittest.TestSuite(cases))
    if not outcome.wasSuccessful():
        return 1
    storm = [r for r in RESULTS if 'dead' not in r]
    _table('Boot storm: %d servers at once, %d Ironic nodes (Ironic polled '
           'every %.1f s)' % (args.servers, args.nodes,
                              base.IRONIC_POLL_INTERVAL), storm)
    print('\nRescheduled: the create action has more than one %s event. '
          '409s: POST /v1/reservations answered 409 (no node reserved). '
          'Nodes given twice: a grant while the node\'s previous '
          'reservation was unreleased (every reserve() of the run) / at the '
          'end, live reservations and Ironic\'s instance_uuid.' % BUILD_EVENT)
    for r in RESULTS:
        if 'dead' in r:
            _table('Boot storm with a host killed after %d ACTIVE'
                   % args.kill_host_after, [r])
            _dead_report(r['dead'], args.kill_host_after)
    timings = {r['label']: r['timings'] for r in storm}
    print('\nWhat the reservation adds to a spawn (storm):')
    print('- POST /v1/reservations: %s' % _median_ms(
        timings['reserveapi'], 'reserve'))
    print('- PATCH (confirm): %s' % _median_ms(
        timings['reserveapi'], 'confirm'))
    print('- prepare_for_spawn, stock: %s' % _median_ms(
        timings['stock'], 'stock_prepare_for_spawn'))
    print('- prepare_for_spawn, ours: %s' % _median_ms(
        timings['reserveapi'], 'prepare_for_spawn'))
    problems = _problems(RESULTS)
    for problem in problems:
        print('\nFAILED: %s' % problem)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
