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

"""A bounded soak with faults: reservations and aggregate changes from
concurrent clients while API workers, the reserveapi worker and the
database server are killed or restarted. See README.rst.

    python -m tests.system.soak.run              # the short form CI runs
    python -m tests.system.soak.run --duration 600   # ten minutes each
    python -m tests.system.soak.run --inventory ironic   # the real Ironic

For each database (a private PostgreSQL and a private MariaDB): a server
of its own, ``reserveapi-dbsync``, the real Placement in its own process,
an inventory of ``--nodes`` nodes, ``gunicorn -w 2`` and the
``reserveapi-worker`` daemon; ``--clients`` clients reserve, confirm and
release through ``reserveapi.client`` while the faults are inflicted in
turn. Then one ``reserveapi-worker --once`` pass, and the checks. Exits 1
if any check failed on any database.

With ``--inventory ironic``, the inventory is the real Ironic 39 and
reservations claim its nodes; no Placement. The faults and the checks
are about those claims (``IronicBackendRun``; README.rst).
"""

import argparse
import collections
import datetime
import json
import os
import pathlib
import random
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid

from oslo_utils import timeutils
import sqlalchemy as sa

from reserveapi.common import heartbeat
from reserveapi.inventory import claims
from reserveapi_testing import dbservers
from reserveapi_testing import loopback
from reserveapi_testing import observer
from tests.system.soak import soakchecks
from tests.system.soak import soakload
from tests.system.soak import soakservices

HERE = pathlib.Path(__file__).resolve().parent

BACKENDS = {'postgresql': dbservers.PostgreSQLServer,
            'mysql': dbservers.MariaDBServer}
FAULTS = ('api-worker-kill', 'worker-kill-mid-sync', 'database-restart',
          'worker-kill-mid-mirror', 'placement-pause', 'database-crash')
NAMESPACE = uuid.UUID('0b7f0a52-8c5a-4b8e-9a4e-5c0d3f1e2a77')
LEASE_TIMEOUT = 3
BACKOFF_MAX = 2
DATABASE = 'reserveapi'


def node(index, round_):
    """An eligible node; ``round_`` changes with every rewrite of the
    inventory, so that each sync has every node to update."""
    name = 'soak-%04d' % index
    return {
        'uuid': str(uuid.uuid5(NAMESPACE, name)), 'name': name,
        'resource_class': 'baremetal-soak',
        'properties': {'memory_mb': 8192, 'cpus': 8, 'local_gb': 100,
                       'cpu_arch': 'x86_64',
                       'capabilities': 'boot_mode:uefi,soak_round:%d'
                                       % round_},
        'traits': ['CUSTOM_RAID'], 'provision_state': 'available',
        'power_state': 'power off', 'maintenance': False, 'retired': False,
        'instance_uuid': None, 'conductor_group': '', 'owner': None,
        'lessee': None,
    }


def write_inventory(path, count, round_, node=node):
    """Replace the file at once, so a sync never reads half of it;
    ``node(index, round_)`` is each node (the soak's by default)."""
    partial = path + '.partial'
    with open(partial, 'w') as stream:
        json.dump({'nodes': [node(index, round_)
                             for index in range(count)]}, stream)
    os.replace(partial, path)


def common_config(run_dir, database_url, log_name, debug):
    """The lines every config of a run starts with (the soak's both kinds
    of run, tests/system/upgrade's)."""
    return ['[DEFAULT]', 'debug = %s' % debug,
            'log_file = %s' % os.path.join(run_dir, log_name),
            'state_path = %s' % run_dir,
            '[api]', 'auth_strategy = noauth',
            '[database]', 'connection = %s' % database_url]


def config(run_dir, database_url, placement_url, log_name, debug):
    return '\n'.join(common_config(run_dir, database_url, log_name,
                                    debug) + [
        '[inventory]', 'file = %s' % os.path.join(run_dir, 'nodes.json'),
        'sync_interval = 1',
        '[mirror]', 'inline_timeout = 1', 'retry_interval = 1',
        'backoff_base = 1', 'backoff_max = %d' % BACKOFF_MAX,
        'lease_timeout = %d' % LEASE_TIMEOUT, 'reconcile_interval = 2',
        'resolve_hosts_via_nova = false',
        '[placement]', 'auth_type = admin_token',
        'endpoint = %s' % placement_url,
        'token = %s' % soakservices.PLACEMENT_TOKEN,
        '[reservations]', 'reserved_ttl = 0', '',
    ])


def start_database(backend, run_dir):
    """A private server of ``backend`` (postgresql, mysql) under
    ``run_dir``, with the ``reserveapi`` database: (server, its URL)."""
    server = BACKENDS[backend](root_dir=run_dir)
    server.setUp()
    try:
        url = server.create_database(DATABASE)
    except Exception:
        server.cleanUp()
        raise
    if backend == 'mysql':
        url += '?charset=utf8mb4'
    return server, url


class Mutator(threading.Thread):
    """Rewrites the inventory every ``interval`` seconds, with
    ``write(path, count, round_)`` (the soak's ``write_inventory``)."""

    def __init__(self, path, count, stop, interval=2.0,
                 write=write_inventory):
        super().__init__(name='inventory', daemon=True)
        self.path, self.count, self.stop = path, count, stop
        self.interval = interval
        self.write = write
        self.rounds = 0

    def run(self):
        while not self.stop.wait(self.interval):
            self.rounds += 1
            self.write(self.path, self.count, self.rounds)


class BackendRun:
    """One soak run on one kind of database server."""

    FAULTS = FAULTS

    def __init__(self, backend, args, run_dir):
        self.backend = backend
        self.args = args
        self.dir = run_dir
        self.recorder = soakload.Recorder()
        self.faults = []
        self.stop_load = threading.Event()
        self.hosts = ['compute-%d' % index for index in range(args.clients)]
        # Aggregates span twice as many hosts as there are clients, so a
        # reconcile pass has enough providers to read to be caught in.
        self.aggregate_hosts = ['compute-%d' % index
                                for index in range(2 * args.clients)]
        self._cleanups = []

    def log(self, message):
        print('[%s %6.1fs] %s' % (self.backend, time.monotonic()
                                  - self.started, message), flush=True)

    def setup(self):
        self.started = time.monotonic()
        url = self._start_database()
        self._start_peers()
        self._start_reserveapi(url)

    def _start_database(self):
        self.server, url = start_database(self.backend, self.dir)
        self._cleanups.append(self.server.cleanUp)
        self.engine = observer.engine(url, pool_pre_ping=True)
        self._cleanups.append(self.engine.dispose)
        return url

    def _start_peers(self):
        """Placement and the inventory file."""
        self.placement = soakservices.Placement(self.dir)
        self._cleanups.append(self.placement.stop)
        for host in self.aggregate_hosts:
            self.placement.create_provider(host)
        self.inventory = os.path.join(self.dir, 'nodes.json')
        write_inventory(self.inventory, self.args.nodes, 0)

    def _peers(self):
        return 'Placement %s' % self.placement.url

    def _start_reserveapi(self, url):
        """``reserveapi-dbsync``, ``sync-nodes``, gunicorn and the
        worker daemon."""
        self.api_config = self._write_config('api.conf', url, 'api.log',
                                             False)
        self.worker_config = self._write_config('worker.conf', url,
                                                'worker.log', True)
        setup_log = os.path.join(self.dir, 'setup.log')
        soakservices.run_tool(setup_log, soakservices.tool(
            'reserveapi-dbsync'), '--config-file', self.api_config,
            'upgrade')
        soakservices.run_tool(setup_log, soakservices.tool(
            'reserveapi-manage'), '--config-file', self.api_config,
            'sync-nodes')
        self.api = soakservices.Gunicorn(
            self.api_config, loopback.free_port(), self.args.workers,
            os.path.join(self.dir, 'gunicorn.log'))
        self._cleanups.append(self.api.stop)
        self.worker = soakservices.WorkerDaemon(
            self.worker_config, os.path.join(self.dir, 'worker.log'))
        self._cleanups.append(lambda: self.worker.stop())
        self.log('set up: %s, %s, API %s' % (
            self.server.url(), self._peers(), self.api.url))

    def _write_config(self, name, database_url, log_name, debug):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as stream:
            stream.write(config(self.dir, database_url, self.placement.url,
                                log_name, debug))
        return path

    def _count_client_retries(self):
        logger = soakload.logging.getLogger('keystoneauth.session')
        logger.addHandler(self.recorder)
        self._cleanups.append(lambda: logger.removeHandler(self.recorder))

    def start_load(self):
        self._count_client_retries()
        self.clients = [soakload.ReservationClient(
            self.api.url, host, self.recorder, self.stop_load)
            for host in self.hosts]
        self.aggregates = soakload.AggregateClient(
            self.api.url, self.aggregate_hosts, self.recorder,
            self.stop_load)
        self.monitor = soakload.Monitor(self.engine.url.render_as_string(
            hide_password=False), self.recorder, self.stop_load)
        self.mutator = Mutator(self.inventory, self.args.nodes,
                               self.stop_load)
        self.threads = self.clients + [self.aggregates, self.monitor,
                                       self.mutator]
        for thread in self.threads:
            thread.start()

    def inflict_faults(self):
        """The faults in turn, evenly spread over ``--duration``."""
        duration = self.args.duration
        fault_kinds = self.FAULTS
        count = max(len(fault_kinds),
                    int(duration // self.args.fault_interval))
        warmup = min(3.0, duration / 10)
        step = (duration - 2 * warmup) / count
        began = time.monotonic()
        for number in range(count):
            at = began + warmup + number * step
            time.sleep(max(0.0, at - time.monotonic()))
            kind = fault_kinds[number % len(fault_kinds)]
            detail = self.inflict(kind)
            detail.update(kind=kind, at=round(time.monotonic() - began, 1))
            self.faults.append(detail)
            self.log('fault %s: %s' % (kind, detail))
        time.sleep(max(0.0, began + duration - time.monotonic()))

    def inflict(self, kind):
        if kind == 'api-worker-kill':
            cut_before = self.recorder.counts[
                'connection retries (keystoneauth1)']
            respawned = self.api.kill_worker()
            time.sleep(2)
            return {'respawned_in_s': round(respawned, 2),
                    'client_connection_retries_next_2s': self.recorder.counts[
                        'connection retries (keystoneauth1)'] - cut_before}
        if kind.startswith('worker-kill'):
            return self.kill_worker_in(
                ('inventory-sync',) if kind.endswith('sync')
                else ('sync-aggregates', 'mirror-retry'))
        if kind == 'placement-pause':
            self.placement.pause(2.0)
            return {'paused_s': 2.0}
        started = time.monotonic()
        if kind == 'database-restart':
            self.server.restart()
        else:
            self.server.kill()
            self.server.start()
        return {'down_s': round(time.monotonic() - started, 2)}

    def kill_worker_in(self, jobs, tries=3):
        """Kill the daemon as one of ``jobs`` starts; again (a new kill)
        if the job was over before the kill, up to ``tries`` kills."""
        kills = []
        for _try in range(tries):
            job, mid = self.worker.kill_during(jobs)
            kills.append(job)
            if mid:
                break
        return {'job': job, 'kills': len(kills), 'landed_mid_job': mid}

    def settle(self):
        """Stop the load, release what a lost answer left, let claims and
        back-offs run out, then one ``reserveapi-worker --once`` pass."""
        self.stop_load.set()
        for thread in self.threads:
            thread.join(120)
        self.lost_found = sum(client.forget_lost() for client in self.clients)
        self.worker.stop()
        time.sleep(max(LEASE_TIMEOUT, BACKOFF_MAX) + 1)
        started = time.monotonic()
        soakservices.run_tool(
            os.path.join(self.dir, 'worker.log.out'),
            soakservices.tool('reserveapi-worker'), '--config-file',
            self.worker_config, '--once')
        self.final_pass_s = round(time.monotonic() - started, 1)
        self.log('final worker pass: %.1fs' % self.final_pass_s)

    def check(self):
        return (soakchecks.answers(self.recorder,
                                   os.path.join(self.dir, 'api.log'))
                + soakchecks.holds(self.recorder, self.monitor, self.engine)
                + soakchecks.retries(self.recorder)
                + soakchecks.mirror(self.engine, self.placement,
                                    self.aggregates.used)
                + soakchecks.inventory(self.engine, self.inventory)
                + soakchecks.faults(self.faults, self.FAULTS))

    def report(self, checks):
        faults = {}
        for fault in self.faults:
            summary = faults.setdefault(fault['kind'], {'count': 0})
            summary['count'] += 1
            if 'landed_mid_job' in fault:
                summary['kills'] = summary.get('kills', 0) + fault['kills']
                summary['landed_mid_job'] = summary.get(
                    'landed_mid_job', 0) + fault['landed_mid_job']
            if 'landed' in fault:
                summary['landed'] = summary.get('landed', 0) + fault['landed']
        counts = dict(sorted(self.recorder.counts.items()))
        return dict(self._details(), **{
            'inventory': self.args.inventory,
            'backend': self.backend,
            'duration_s': self.args.duration,
            'clients': self.args.clients,
            'api_workers': self.args.workers,
            'nodes': self.args.nodes,
            'requests': sum(self.recorder.statuses.values()),
            'statuses': {str(status): count for status, count in sorted(
                self.recorder.statuses.items())},
            'counts': counts,
            'max_attempts': dict(self.recorder.max_attempts),
            'faults': faults,
            'fault_log': self.faults,
            'reservations_found_after_lost_answers': self.lost_found,
            'final_worker_pass_s': self.final_pass_s,
            'checks': [{'check': name, 'ok': ok, 'problems': problems}
                       for name, ok, problems in checks],
        })

    def _details(self):
        """What only this kind of run reports."""
        return {'inventory_rewrites': self.mutator.rounds}

    def teardown(self):
        for cleanup in reversed(self._cleanups):
            try:
                cleanup()
            except Exception as exc:  # noqa: BLE001 - keep tearing down
                print('teardown: %r' % exc, file=sys.stderr)


# With the real Ironic --------------------------------------------------------

IRONIC_FAULTS = ('api-worker-kill', 'foreign-claim',
                 'api-worker-kill-after-reserve', 'database-terminate',
                 'ironic-freeze', 'api-worker-kill-mid-claim',
                 'worker-kill-holding-lease', 'foreign-claim', 'api-restart',
                 'ironic-restart', 'database-terminate')
"""In turn; a kind listed twice is inflicted (at least) twice. The
sync-lease kill comes after the middle: the reconcile works from the
syncs, so a sync blocked early would hide its races; and its takeover
is still watched for the rest of the load and the settling."""

RESERVED_TTL = 20
EXPIRE_INTERVAL = 2
IRONIC_TIMEOUT = 5
IRONIC_FREEZE_S = 8
API_DOWN_S = 3
FOREIGN_CLAIMS_HELD = 2
"""Claims the other tool holds at once: a further one first drops its
oldest, so that a long run keeps nodes for our clients."""

LEASE_TAKEOVER_S = 2 * heartbeat.SECONDS
"""Seconds within which a sync must complete after the worker holding
its lease was killed: the lease lapses, the next pass runs (slowly, on
a loaded machine)."""

MID_CLAIM_WAIT_S = 2
"""How long a frozen Ironic is watched for a POST that committed and is
now waiting for its claim PATCH (under ``IRONIC_TIMEOUT``)."""

LIVE_RESERVATIONS = sa.text(
    'SELECT r.uuid, r.instance_uuid, n.uuid, r.state FROM reservations r '
    'JOIN nodes n ON n.id = r.node_id '
    "WHERE r.state IN ('reserved', 'active')")


def ironic_config(run_dir, database_url, ironic_url, log_name, debug):
    return '\n'.join(common_config(run_dir, database_url, log_name,
                                    debug) + [
        '[inventory]', 'source = ironic', 'sync_interval = 1',
        '[ironic]', 'auth_type = none', 'endpoint_override = %s' % ironic_url,
        'claim_nodes = true', 'reconcile_interval = 1',
        'timeout = %d' % IRONIC_TIMEOUT,
        # No Placement in this run: nothing for the mirror to reconcile.
        '[mirror]', 'reconcile_interval = 0',
        '[reservations]', 'reserved_ttl = %d' % RESERVED_TTL,
        'expire_interval = %d' % EXPIRE_INTERVAL, '',
    ])


class IronicBackendRun(BackendRun):
    """One soak run with the inventory and the claims in the real Ironic.

    No Placement and no aggregates: the clients reserve (sometimes again),
    confirm and release, or abandon a reservation for the expiry; the
    faults hit the API, the worker, Ironic, the database connections and
    Ironic's claims (another tool claiming nodes behind our back).
    """

    FAULTS = IRONIC_FAULTS

    def _start_peers(self):
        self.ironic = soakservices.Ironic(self.dir, self.args.nodes)
        self._cleanups.append(self.ironic.stop)

    def _peers(self):
        return 'Ironic %s (%d nodes)' % (self.ironic.endpoint,
                                          self.args.nodes)

    def _write_config(self, name, database_url, log_name, debug):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as stream:
            stream.write(ironic_config(self.dir, database_url,
                                       self.ironic.endpoint, log_name,
                                       debug))
        return path

    def start_load(self):
        self._count_client_retries()
        url = self.engine.url.render_as_string(hide_password=False)
        self.ledger = soakload.ClaimLedger()
        self.clients = [soakload.IronicReservationClient(
            self.api.url, host, self.recorder, self.stop_load, self.ironic,
            self.ledger, RESERVED_TTL)
            for host in self.hosts]
        self.monitor = soakload.Monitor(url, self.recorder, self.stop_load)
        self.claim_monitor = soakload.ClaimMonitor(url, self.ironic,
                                                   self.ledger, self.recorder)
        self.threads = self.clients + [self.monitor]
        for thread in self.threads + [self.claim_monitor]:
            thread.start()

    def inflict(self, kind):
        if kind == 'api-worker-kill':
            return super().inflict(kind)
        if kind == 'api-worker-kill-after-reserve':
            line, delay = self.api.kill_worker_logging(
                'Reserved node', os.path.join(self.dir, 'api.log'))
            instance = re.search(r'for instance (\S+)', line or '')
            return {'landed': line is not None,
                    'instance': instance and instance.group(1),
                    'kill_ms_after_line': delay and round(delay * 1000, 1)}
        if kind == 'api-worker-kill-mid-claim':
            return self.kill_api_mid_claim()
        if kind == 'api-restart':
            started = time.monotonic()
            self.api.kill_all()
            time.sleep(API_DOWN_S)
            self.api.start()
            return {'down_s': round(time.monotonic() - started, 2)}
        if kind == 'worker-kill-holding-lease':
            holder, after = self.worker.kill_holding(self.sync_lease_holder)
            return {'landed': holder is not None and after == holder,
                    'holder': holder, 'holder_after_kill': after,
                    'killed_at_s': round(time.monotonic() - self.started, 2)}
        if kind == 'ironic-freeze':
            self.ironic.pause(IRONIC_FREEZE_S)
            return {'frozen_s': IRONIC_FREEZE_S}
        if kind == 'ironic-restart':
            return {'down_s': round(self.ironic.crash(), 2)}
        if kind == 'database-terminate':
            return {'terminated': soakservices.terminate_connections(
                self.engine, DATABASE)}
        if kind == 'foreign-claim':
            return self.claim_behind_our_back()
        raise ValueError(kind)

    def sync_lease_holder(self):
        with self.engine.connect() as connection:
            return connection.execute(sa.text(
                'SELECT leased_by FROM inventory_syncs '
                "WHERE source = 'ironic'")).scalar()

    def kill_api_mid_claim(self, tries=3):
        """Read Ironic's claims, freeze Ironic, and look in our database
        for a reservation whose node Ironic did not carry it on: a POST
        that committed and waits for its claim PATCH. SIGKILL every API
        worker then, and thaw Ironic: the PATCH may land after its
        request died, or never. Tried again if none was found."""
        for attempt in range(1, tries + 1):
            with self.engine.connect() as connection:
                shown = self.ironic.claims()
                self.ironic.fixture.freeze()
                try:
                    row = None
                    deadline = time.monotonic() + MID_CLAIM_WAIT_S
                    while row is None and time.monotonic() < deadline:
                        connection.rollback()
                        row = next((
                            found for found in connection.execute(
                                LIVE_RESERVATIONS)
                            if found[3] == 'reserved'
                            and shown.get(found[2]) != found[1]), None)
                        time.sleep(0.01)
                    pids = self.api.kill_workers() if row else set()
                finally:
                    self.ironic.fixture.thaw()
            if row:
                respawned = self.api.wait_replaced(pids)
                return {'landed': True, 'tries': attempt,
                        'reservation': row[0], 'instance': row[1],
                        'node': row[2], 'respawned_in_s': round(respawned, 2)}
            time.sleep(1)
        return {'landed': False, 'tries': tries}

    def claim_behind_our_back(self):
        """Another tool sets ``instance_uuid`` on a node that is free
        in Ironic and not held in our database (first dropping its oldest
        claim if it holds ``FOREIGN_CLAIMS_HELD``)."""
        detail = {}
        held = self.ledger.foreign_held()
        if len(held) >= FOREIGN_CLAIMS_HELD:
            oldest = held[0]
            self.ledger.foreign_dropped(oldest, time.monotonic())
            if self.ironic.claim_of(oldest['node']) == oldest['instance']:
                self.ironic.set_claim(oldest['node'], None)
            detail['dropped'] = oldest['node']
        with self.engine.connect() as connection:
            ours = {row[2] for row in connection.execute(LIVE_RESERVATIONS)}
        theirs = {claim['node'] for claim in self.ledger.foreign_held()}
        free = [node for node, instance in self.ironic.claims().items()
                if instance is None and node not in ours | theirs]
        random.shuffle(free)
        for tries, node in enumerate(free[:5], 1):
            instance = str(uuid.uuid4())
            if self.ironic.set_claim(node, instance):
                self.ledger.foreign_claimed(node, instance, time.monotonic())
                detail.update(landed=True, node=node, instance=instance,
                              tries=tries)
                return detail
        detail.update(landed=False, free=len(free))
        return detail

    def settle(self):
        """Stop the load, release what a lost answer left, let the
        daemon expire the abandoned reservations, stop it, then two
        ``reserveapi-worker --once`` passes (the first expires or
        notes, the second clears what the first noted)."""
        self.stop_load.set()
        for thread in self.threads:
            thread.join(120)
        self.lost_found = sum(client.forget_lost() for client in self.clients)
        deadline = time.monotonic() + RESERVED_TTL + 5 * EXPIRE_INTERVAL
        while time.monotonic() < deadline and self._live_reservations():
            time.sleep(1)
        self.worker.stop()
        # Claims whose PATCH may still have been on its way wait
        # claims.UNCERTAIN_DELAY before they are cleared, and a clear
        # leased to a process that was killed waits for its lease; so
        # does the sync the daemon may have been stopped in (a pass
        # leaves a sync leased to another process alone).
        deadline = time.monotonic() + (claims.UNCERTAIN_DELAY
                                       + heartbeat.SECONDS + 5)
        while time.monotonic() < deadline and self._work_waiting():
            time.sleep(1)
        started = time.monotonic()
        self.passes = [soakservices.run_tool(
            os.path.join(self.dir, 'worker.log.out'),
            soakservices.tool('reserveapi-worker'), '--config-file',
            self.worker_config, '--once', check=False) for _pass in range(2)]
        self.final_pass_s = round(time.monotonic() - started, 1)
        self.log('two final worker passes: %.1fs, exit codes %s'
                 % (self.final_pass_s, self.passes))
        self.claim_monitor.stop.set()
        self.claim_monitor.join(60)

    def _work_waiting(self):
        """Claims to clear, or a sync, that no worker pass may take
        yet."""
        now = timeutils.utcnow()
        with self.engine.connect() as connection:
            return connection.execute(sa.text(
                'SELECT (SELECT COUNT(*) FROM ironic_releases '
                'WHERE next_attempt_at > :now OR leased_until > :now) + '
                '(SELECT COUNT(*) FROM inventory_syncs '
                'WHERE leased_until > :now)'), {'now': now}).scalar()

    def _live_reservations(self):
        with self.engine.connect() as connection:
            return connection.execute(sa.text(
                'SELECT COUNT(*) FROM reservations '
                "WHERE state IN ('reserved', 'active')")).scalar()

    def check(self):
        return (soakchecks.answers(self.recorder,
                                   os.path.join(self.dir, 'api.log'))
                + soakchecks.holds(self.recorder, self.monitor, self.engine)
                + soakchecks.retries(self.recorder)
                + soakchecks.ironic_claims(self.ledger, self.claim_monitor,
                                           self.started)
                + soakchecks.ironic_settled(self.engine, self.ironic,
                                            self.ledger, self.passes)
                + soakchecks.lease_takeover(
                    self.faults, self.claim_monitor, self.started,
                    LEASE_TAKEOVER_S)
                + soakchecks.faults(self.faults, self.FAULTS))

    def _details(self):
        answers = collections.Counter(
            str(answer['status']) for answer in self.ledger.answers)
        return {
            'ironic_nodes': self.args.nodes,
            'answers_by_status': dict(sorted(answers.items())),
            'abandoned': len(self.ledger.abandoned),
            'foreign_claims': [
                dict(claim, since=round(claim['since'] - self.started, 1),
                     until=claim['until'] and round(
                         claim['until'] - self.started, 1))
                for claim in self.ledger.foreign],
            'worker_passes_exit_codes': self.passes,
            'evidence': soakchecks.log_evidence(self.dir),
        }


def run_backend(backend, args, root):
    run_dir = tempfile.mkdtemp(prefix='soak-%s-%s-' % (args.inventory,
                                                       backend), dir=root)
    kind = IronicBackendRun if args.inventory == 'ironic' else BackendRun
    run = kind(backend, args, run_dir)
    try:
        run.setup()
        run.start_load()
        run.inflict_faults()
        run.settle()
        result = run.report(run.check())
    finally:
        run.teardown()
    result['logs'] = run_dir
    return result


def print_result(result):
    print('\n== %s/%s: %d requests in %ss, %d faults' % (
        result['inventory'], result['backend'], result['requests'],
        result['duration_s'],
        sum(fault['count'] for fault in result['faults'].values())))
    print('   statuses: %s' % result['statuses'])
    for name, value in result['counts'].items():
        print('   %s: %s' % (name, value))
    for kind, fault in sorted(result['faults'].items()):
        print('   fault %s: %s' % (kind, fault))
    for name, lines in result.get('evidence', {}).items():
        print('   log %r: %d lines%s' % (name, lines['count'], ''.join(
            '\n      %s' % line for line in lines['first'])))
    for check in result['checks']:
        print('   [%s] %s%s' % ('PASS' if check['ok'] else 'FAIL',
                               check['check'],
                               '' if check['ok'] else ': %s'
                               % check['problems']))


DEFAULTS = {
    'file': {'backends': 'postgresql,mysql', 'duration': 40, 'clients': 8,
             'nodes': 500, 'fault_interval': 6.0},
    # Few nodes, so that a released node is soon reserved again.
    'ironic': {'backends': 'postgresql', 'duration': 90, 'clients': 6,
               'nodes': 16, 'fault_interval': 8.0},
}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--inventory', choices=sorted(DEFAULTS),
                        default='file',
                        help='file: an inventory file, Placement and '
                             'aggregates; ironic: the real Ironic, whose '
                             'nodes reservations claim.')
    parser.add_argument('--backends',
                        help='Comma-separated: postgresql, mysql. Default: '
                             'both with --inventory file, postgresql with '
                             'ironic.')
    parser.add_argument('--duration', type=float,
                        help='Seconds of load and faults per database '
                             '(default: 40 with file, 90 with ironic).')
    parser.add_argument('--clients', type=int,
                        help='Default: 8 with file, 6 with ironic.')
    parser.add_argument('--workers', type=int, default=2,
                        help='gunicorn API workers.')
    parser.add_argument('--nodes', type=int,
                        help='Default: 500 with file, 16 with ironic.')
    parser.add_argument('--fault-interval', type=float,
                        help='Seconds between faults (at least one of '
                             'each kind is inflicted; default: 6 with '
                             'file, 8 with ironic).')
    parser.add_argument('--keep', action='store_true',
                        help='Keep the logs even when every check passed.')
    parser.add_argument('--output', default=str(HERE / 'out'),
                        help='Directory for the JSON results.')
    parser.add_argument('--seed', type=int,
                        help='Seed of the random choices of the clients '
                             'and the faults (default: a new one, '
                             'printed). The timing of the processes is '
                             'not reproducible.')
    args = parser.parse_args(argv)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2 ** 32)
    for name, value in DEFAULTS[args.inventory].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # Tear the servers down when stopped (timeout, CI): SIGTERM would
    # otherwise skip every ``finally``.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    root = tempfile.mkdtemp(prefix='reserveapi-soak-')
    print('seed: %d' % args.seed, flush=True)
    random.seed(args.seed)
    results = [run_backend(backend, args, root)
               for backend in args.backends.split(',')]
    for result in results:
        print_result(result)
    passed = all(check['ok'] for result in results
                 for check in result['checks'])
    os.makedirs(args.output, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y%m%dT%H%M%SZ')
    output = os.path.join(args.output, 'soak-%s.json' % stamp)
    with open(output, 'w') as stream:
        json.dump({'seed': args.seed, 'results': results}, stream,
                  indent=2, default=str)
    if passed and not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print('logs kept in %s' % root)
    print('results: %s\nsoak: %s' % (output, 'PASS' if passed else 'FAIL'))
    return 0 if passed else 1


if __name__ == '__main__':
    sys.exit(main())
