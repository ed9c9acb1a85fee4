"""reserveapi-worker: the periodic jobs.

Each job claims its work in the database, so any number of workers may
run at once. ``--once`` runs every job a single time and exits, for cron
and for tests.
"""

import functools
import sys

from futurist import periodics
from oslo_config import cfg
from oslo_log import log

from reserveapi import reservations
from reserveapi.common import service
from reserveapi.inventory import sync as inventory_sync
from reserveapi.mirror import reconcile as mirror_reconcile
from reserveapi.mirror import state as mirror_state

LOG = log.getLogger(__name__)

CLI_OPTS = [
    cfg.BoolOpt('once', default=False,
                help='Run each job once, then exit.'),
]


def jobs(conf):
    """(name, interval in seconds, callable) for every enabled job."""
    enabled = []
    if conf.inventory.sync_interval:
        enabled.append(('inventory-sync', conf.inventory.sync_interval,
                        lambda: inventory_sync.sync(conf)))
    if conf.reservations.reserved_ttl:
        enabled.append(('expire-reservations',
                        conf.reservations.expire_interval,
                        reservations.expire))
    enabled.append(('mirror-retry', conf.mirror.retry_interval,
                    mirror_state.retry_pending))
    if conf.mirror.reconcile_interval:
        enabled.append(('mirror-reconcile', conf.mirror.reconcile_interval,
                        mirror_reconcile.reconcile))
    return enabled


def run_once(enabled):
    """Run every job once; a failing job does not keep the others from
    running. Returns 1 if any failed, for cron.
    """
    failed = False
    for name, _interval, job in enabled:
        LOG.info('Running %s', name)
        try:
            job()
        except Exception:
            LOG.exception('Job %s failed', name)
            failed = True
    return 1 if failed else 0


def _traced(name, job):
    """``job``, logging at DEBUG when each run starts and finishes, so
    that an operator (or the soak, which kills workers mid-job) can tell
    which job a worker is in.
    """

    def run():
        LOG.debug('Running %s', name)
        job()
        LOG.debug('Finished %s', name)

    return run


def run_forever(enabled):
    """Run the jobs at their intervals until stopped (futurist logs and
    survives a failing run; the job runs again at its next interval).
    """
    callables = [
        (periodics.periodic(spacing=interval, run_immediately=True)(
            functools.partial(_traced(name, job))), (), {})
        for name, interval, job in enabled]
    periodics.PeriodicWorker(callables).start()


def main(argv=None):
    cfg.CONF.register_cli_opts(CLI_OPTS)
    conf = service.prepare_service(sys.argv[1:] if argv is None else argv)
    enabled = jobs(conf)
    LOG.info('Jobs: %s', ', '.join(name for name, _i, _j in enabled))
    if conf.once:
        return run_once(enabled)
    run_forever(enabled)
    return 0
