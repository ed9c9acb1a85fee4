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

"""reserveapi-worker: the periodic jobs.

Each job takes its work in the database, so any number of workers may
run at once. ``--once`` runs every job a single time and exits, for cron
and for tests. A job that fails is logged as an outage
(``common/outages.py``): one line with its cause when it begins, at most
one a minute while it lasts, one when the job works again. With
``[metrics] enabled`` the daemon serves its metrics and the database's
gauges (``monitoring/``).
"""

import functools
import logging
import os
import signal
import sys
import threading
import time

from futurist import periodics
from oslo_config import cfg
from oslo_log import log

from reserveapi import fleet
from reserveapi import pinning
from reserveapi import reservations
from reserveapi.common import exception
from reserveapi.common import metrics
from reserveapi.common import outages
from reserveapi.common import service
import reserveapi.conf
from reserveapi.db import backends
from reserveapi.inventory import ironic_reconcile
from reserveapi.inventory import sources as inventory_sources
from reserveapi.inventory import sync as inventory_sync
from reserveapi.mirror import state as mirror_state
from reserveapi.mirror import sync as mirror_sync
from reserveapi.monitoring import database
from reserveapi.monitoring import exposition
from reserveapi.peers import credentials

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF

CLI_OPTS = [
    cfg.BoolOpt('once', default=False,
                help='Run each job once, then exit.'),
]


def jobs():
    """(name, interval in seconds, callable) for every enabled job."""
    enabled = []
    if CONF.inventory.sync_interval:
        enabled.append(('inventory-sync', CONF.inventory.sync_interval,
                        inventory_sync.sync_changes))
    if (inventory_sources.configured().reconciled
            and CONF.ironic.reconcile_interval):
        enabled.append(('ironic-reconcile', CONF.ironic.reconcile_interval,
                        ironic_reconcile.reconcile))
    if CONF.reservations.reserved_ttl:
        enabled.append(('expire-reservations',
                        CONF.reservations.expire_interval,
                        reservations.expire))
    if CONF.reservations.orphan_interval:
        enabled.append(('release-orphans', CONF.reservations.orphan_interval,
                        reservations.release_orphans))
    if CONF.holds.tend_interval:
        enabled.append(('tend-holds', CONF.holds.tend_interval,
                        pinning.tend))
    enabled.append(('mirror-retry', CONF.mirror.retry_interval,
                    mirror_state.retry_pending))
    if CONF.mirror.reconcile_from_nova_interval:
        enabled.append(('sync-aggregates-from-nova',
                        CONF.mirror.reconcile_from_nova_interval,
                        mirror_sync.sync_aggregates_from_nova))
    if CONF.mirror.reconcile_interval:
        enabled.append(('sync-aggregates', CONF.mirror.reconcile_interval,
                        mirror_sync.sync_aggregates))
    return enabled


_OUTAGES = outages.OutageLog(LOG, 'Job %s')
_UNPREPARED = outages.OutageLog(LOG, '%s')
"""A database without our schema (or no database) fails every job the
same way, with one cure: said once a minute for all of them."""
EVERY_JOB = 'Every job'


def start_counting(enabled):
    """Give every job's series a value before its first run, so that
    Prometheus sees the first failure as an increase."""
    for name, _interval, _job in enabled:
        metrics.JOB_RUNS.labels(worker_job=name)
        metrics.JOB_DURATION.labels(worker_job=name)
        metrics.JOB_LAST_SUCCESS.labels(worker_job=name)
        for cause in outages.PEERS:
            metrics.JOB_FAILURES.labels(worker_job=name, cause=cause)


def run_job(name, job):
    """Run ``job`` once; whether it succeeded. It is logged at DEBUG
    when it starts and finishes (an operator, or the soak, which kills
    workers mid-job, can tell which job a worker is in), counted and
    timed for Prometheus, and a failure is logged as an outage, its
    traceback at DEBUG, never raised.
    """
    LOG.debug('Running %s', name)
    metrics.JOB_RUNS.labels(worker_job=name).inc()
    started = time.monotonic()
    failure = None
    try:
        job()
    except Exception as error:
        failure = error
    metrics.JOB_DURATION.labels(worker_job=name).observe(
        time.monotonic() - started)
    if failure is not None:
        # Logged out of the except block: oslo.log would add the error
        # the line already describes.
        metrics.JOB_FAILURES.labels(worker_job=name,
                                    cause=outages.peer(failure)).inc()
        if isinstance(failure, (exception.NoSchema, exception.NoDatabase)):
            _UNPREPARED.failed(EVERY_JOB, failure)
        else:
            _OUTAGES.failed(name, failure)
        return False
    metrics.JOB_LAST_SUCCESS.labels(worker_job=name).set_to_current_time()
    _UNPREPARED.succeeded(EVERY_JOB)
    _OUTAGES.succeeded(name)
    LOG.debug('Finished %s', name)
    return True


def run_once(enabled):
    """Run every job once; a failing job does not keep the others from
    running. Returns 1 if any failed, for cron.
    """
    results = [run_job(name, job) for name, _interval, job in enabled]
    return 0 if all(results) else 1


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def run_forever(enabled):
    """Run the jobs at their intervals (a failing run is logged by
    run_job; the job runs again at its next interval) until SIGTERM or
    SIGINT.

    A stop lets the job under way finish: its leases are dropped and
    its claims recorded, so that no other worker waits for a lease of a
    process that is gone. A second signal exits at once.
    """
    callables = [
        (periodics.periodic(spacing=interval, run_immediately=True)(
            functools.partial(run_job, name, job)), (), {})
        for name, interval, job in enabled]
    worker = periodics.PeriodicWorker(callables)
    asked = []  # the signal's name; a handler takes no lock (see below)

    def stop(signum, frame):
        name = signal.Signals(signum).name
        if asked:
            LOG.warning('Stopped by a second %s, without waiting for the '
                        'job under way: its leases lapse.', name)
            logging.shutdown()
            os._exit(1)
        asked.append(name)

    failed = []

    def run():
        try:
            worker.start()
        except Exception:
            LOG.exception('The periodic jobs stopped')
            failed.append(True)

    for number in STOP_SIGNALS:
        signal.signal(number, stop)
    runner = threading.Thread(target=run, name='periodic-jobs', daemon=True)
    runner.start()
    # The handler runs in this thread, between two steps of whatever it
    # is doing: waiting here in short joins, rather than on an Event,
    # keeps it from ever running while this thread holds a lock.
    while runner.is_alive() and not asked:
        runner.join(0.5)
    if asked:
        LOG.info('Stopping (%s): letting the job under way finish.',
                 asked[0])
        worker.stop()
        runner.join()
    LOG.info('Stopped.')
    return 1 if failed else 0


USAGE = service.usage(
    '[--config-file PATH] [--once] [--debug]',
    'Runs the periodic jobs: inventory sync, expiry of stale '
    'reservations, and the aggregate mirror\'s retry and reconcile '
    'passes. Any number of workers may run. --once runs each job once '
    'and exits 1 if any failed.')


@service.console_script
def main(argv=None):
    CONF.register_cli_opts(CLI_OPTS)
    service.prepare_service(
        sys.argv[1:] if argv is None else argv, usage=USAGE,
        checks=(backends.check_connection_url,
                credentials.check_placement_at_startup,
                credentials.check_ironic_at_startup))
    enabled = jobs()
    LOG.info('Jobs: %s', ', '.join(name for name, _i, _j in enabled))
    start_counting(enabled)
    if CONF.metrics.enabled and not CONF.once:
        try:
            exposition.serve_worker(CONF.metrics.worker_host,
                                    CONF.metrics.worker_port,
                                    [database.DatabaseCollector()])
        except OSError as exc:
            sys.exit('Cannot serve metrics on %s:%s: %s ([metrics] '
                     'worker_host and worker_port).' % (
                         CONF.metrics.worker_host, CONF.metrics.worker_port,
                         exc.strerror or exc))
    fleet.start_heartbeat('worker')
    try:
        if CONF.once:
            return run_once(enabled)
        return run_forever(enabled)
    finally:
        fleet.stop_heartbeat()
