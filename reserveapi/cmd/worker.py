"""reserveapi-worker: the periodic jobs.

Each job claims its work in the database, so any number of workers may
run at once. ``--once`` runs every job a single time and exits, for cron
and for tests.
"""

import sys
import time

from oslo_config import cfg
from oslo_log import log

from reserveapi import reservations
from reserveapi.common import service
from reserveapi.inventory import sync as inventory_sync

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
    return enabled


def run_once(conf):
    for name, _interval, job in jobs(conf):
        LOG.info('Running %s', name)
        job()


def run_forever(conf):
    due = {name: 0.0 for name, _interval, _job in jobs(conf)}
    while True:
        now = time.monotonic()
        for name, interval, job in jobs(conf):
            if due[name] <= now:
                try:
                    job()
                except Exception:
                    LOG.exception('Job %s failed; it runs again in %ss',
                                  name, interval)
                due[name] = now + interval
        time.sleep(max(0.5, min(due.values(), default=now + 5) - now))


def main(argv=None):
    cfg.CONF.register_cli_opts(CLI_OPTS)
    conf = service.prepare_service(sys.argv[1:] if argv is None else argv)
    enabled = jobs(conf)
    if not enabled:
        LOG.warning('No job is enabled; nothing to do.')
        return 0
    LOG.info('Jobs: %s', ', '.join(name for name, _i, _j in enabled))
    if conf.once:
        run_once(conf)
    else:
        run_forever(conf)
    return 0
