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

"""The gauges the database holds, read when Prometheus scrapes
reserveapi-worker: capacity per class and partition, live reservations
per compute host, the inventory sync's state, the mirror's backlog, the
leases, and the holds (by state, and the free nodes promised to them).

They are the same whichever process reads them, so one kind of process
serves them: the worker. Any API process could, but a deployment has
many (every gunicorn worker of every host), and a scrape of the API
should never wait for the database: it must still answer, with the
503s it counted, while the database is down. Two workers serve the
same values; alerts take ``max`` over them.

Every read is cheap at any inventory size: capacity comes from the
counters migration 0007's triggers keep, the rest from rows that number
the sources, hosts, pending changes and live holds, never the nodes.
One read runs at a time, in a thread of its own: a scrape waits for it
at most ``[metrics] database_timeout`` seconds (less when Prometheus'
scrape timeout is shorter), then answers without these gauges and with
``reserveapi_database_up 0`` (why, at DEBUG only: the jobs, which use
the same database, log its outages).
"""

import datetime
import threading
import time

from oslo_log import log
from oslo_utils import timeutils
from prometheus_client import core

from reserveapi.common import metrics
import reserveapi.conf
from reserveapi.db import holds as db_holds
from reserveapi.db import inventory as db_inventory
from reserveapi.db import mirror as db_mirror
from reserveapi.db import nodes as db_nodes
from reserveapi.db import reservations as db_reservations
from reserveapi.monitoring import exposition

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF

OTHER_HOSTS = '(other hosts)'
"""The host label of the live reservations of the hosts beyond
``[metrics] max_host_series`` (no host name has a space)."""

PARTITION = ('resource_class', 'shard', 'conductor_group')


def _gauge(name, documentation, labels=()):
    return core.GaugeMetricFamily(metrics.PREFIX + name, documentation,
                                  labels=labels)


def _timestamp(value):
    """Unix time of a naive UTC datetime; 0 for never."""
    if value is None:
        return 0
    return value.replace(tzinfo=datetime.timezone.utc).timestamp()


def _capacity(rows):
    total = _gauge('nodes', 'Nodes with a resource class, by class and '
                   'partition (shard, conductor_group; empty for none or '
                   'the default group), vanished ones excepted.', PARTITION)
    available = _gauge('nodes_available', 'Nodes a reservation could get '
                       'now (schedulable and not reserved), by class and '
                       'partition.', PARTITION)
    reserved = _gauge('nodes_reserved', 'Nodes held by a live reservation, '
                      'by class and partition.', PARTITION)
    for row in rows:
        labels = [row[name] for name in PARTITION]
        total.add_metric(labels, row['total'])
        available.add_metric(labels, row['available'])
        reserved.add_metric(labels, row['reserved'])
    return [total, available, reserved]


def _live_reservations():
    live = _gauge('reservations_live', 'Live reservations (reserved or '
                  'active) per compute host; hosts beyond [metrics] '
                  'max_host_series are summed under "%s" (0 when there '
                  'are none).' % OTHER_HOSTS, ('host',))
    hosts, others = db_reservations.count_live_by_host(
        CONF.metrics.max_host_series)
    for host, count in hosts:
        live.add_metric([host], count)
    # Always there, 0 or not: the family has a series before any host
    # holds a reservation, and sum() is the cloud's total either way.
    live.add_metric([OTHER_HOSTS], others)
    return [live]


def _inventory():
    source = CONF.inventory.source
    state = db_inventory.get_inventory_sync(source)
    synced = _gauge('inventory_last_sync_timestamp_seconds', 'When the last '
                    'complete sync of the inventory source started reading '
                    '(Unix time; 0: never): the inventory is at least that '
                    'fresh.', ('source',))
    full = _gauge('inventory_last_full_sync_timestamp_seconds', 'When the '
                  'last full sync started reading (Unix time; 0: never).',
                  ('source',))
    up = _gauge('inventory_source_up', '1 unless the inventory source '
                '(Ironic) could not be read at the last attempt of a sync '
                'or a claim.', ('source',))
    down_since = _gauge('inventory_source_down_since_timestamp_seconds',
                        'When the inventory source stopped answering (Unix '
                        'time); 0 while it answers.', ('source',))
    outage = state.outage_since if state is not None else None
    synced.add_metric([source], _timestamp(
        state.synced_at if state is not None else None))
    full.add_metric([source], _timestamp(
        state.full_synced_at if state is not None else None))
    up.add_metric([source], 0 if outage is not None else 1)
    down_since.add_metric([source], _timestamp(outage))
    return [synced, full, up, down_since]


def _mirror(now):
    status = db_mirror.get_status()
    oldest = status['oldest_pending']
    since = oldest.pending_since if oldest is not None else None
    pending = _gauge('mirror_pending_changes', 'Aggregate membership '
                     'changes Placement has not taken yet.')
    pending.add_metric([], status['pending'])
    age = _gauge('mirror_oldest_pending_age_seconds', 'Seconds the oldest '
                 'pending aggregate membership change has waited; 0 when '
                 'none waits.')
    age.add_metric([], max((now - since).total_seconds(), 0)
                   if since is not None else 0)
    attempts = _gauge('mirror_oldest_pending_attempts', 'Failed attempts '
                      'of the oldest pending change so far.')
    attempts.add_metric([], oldest.attempts if oldest is not None else 0)
    return [pending, age, attempts]


def _leases(now):
    leases = _gauge('leases', 'Leases held in the database by kind '
                    '(inventory_sync, ironic_release: a claim in Ironic '
                    'being cleared, mirror: a change being applied) and '
                    'holder: alive (renewing it) or dead (it lapsed and '
                    'nobody took it over yet: the holder stopped).',
                    ('lease', 'holder'))
    counts = db_inventory.count_leases(now)
    counts['mirror'] = db_mirror.count_leases(now)
    for lease, (alive, dead) in sorted(counts.items()):
        leases.add_metric([lease, 'alive'], alive)
        leases.add_metric([lease, 'dead'], dead)
    return [leases]


def _holds(now, classes):
    """The holds by state, and per resource class (each of ``classes``,
    those with nodes, at 0 when none is promised) the free nodes
    promised to the holds that have not started."""
    holds = _gauge('holds', 'Holds still kept, by state: pending (before '
                   'their window), active (in it), ended (in the cleaning '
                   'padding after it). Cancelled ones are not kept.',
                   ('state',))
    for state, count in db_holds.count_live_by_state(now).items():
        holds.add_metric([state], count)
    promised = _gauge('hold_promised_nodes', 'Free nodes promised to the '
                      'holds that have not started, per resource class: '
                      'the most their padded windows ask at any one '
                      'instant from now on. What compute hosts report to '
                      'Placement leaves them out.', ('resource_class',))
    kept = db_holds.promised(now)
    for resource_class in sorted(set(classes) | set(kept)):
        promised.add_metric([resource_class], kept.get(resource_class, 0))
    nodes = _gauge('hold_nodes', 'Nodes of the running holds, by use: '
                   'pinned (set aside, waiting for a boot of the hold\'s '
                   'flavor) and in_use (its boots have them).', ('use',))
    counts, short = db_holds.count_hold_nodes(now)
    for use in ('pinned', 'in_use'):
        nodes.add_metric([use], counts[use])
    shortfall = _gauge('hold_shortfall_nodes', 'Nodes the running holds '
                       'keep but could not pin at the worker\'s last round '
                       '(their state is degraded).', ())
    shortfall.add_metric([], short)
    return [holds, promised, nodes, shortfall]


def read_families():
    """Every gauge, read now."""
    now = timeutils.utcnow()
    capacity = db_nodes.get_capacity_by_partition()
    return (_capacity(capacity) + _live_reservations() + _inventory()
            + _mirror(now) + _leases(now)
            + _holds(now, {row['resource_class'] for row in capacity}))


class _Reading:
    """read_families in a daemon thread of its own: a read that hangs on
    a database that does not answer never holds up the worker's exit."""

    def __init__(self):
        self.done = threading.Event()
        self.families = None
        threading.Thread(target=self._read, daemon=True,
                         name='metrics-database').start()

    def _read(self):
        try:
            self.families = read_families()
        except Exception:
            # The jobs, which read the same database, log its outages;
            # reserveapi_database_up says it here.
            LOG.debug('No database gauges in this scrape', exc_info=True)
        finally:
            self.done.set()


class DatabaseCollector:
    """A prometheus-client collector of the database's gauges, each read
    when a scrape asks (see the module's docstring)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._reading = None

    def describe(self):
        """Nothing: registering the collector must not read."""
        return []

    def collect(self):
        started = time.monotonic()
        with self._lock:
            if self._reading is None or self._reading.done.is_set():
                self._reading = _Reading()
            reading = self._reading
        families = None
        if reading.done.wait(exposition.scrape_wait(
                CONF.metrics.database_timeout)):
            families = reading.families
        yield from families or ()
        database_up = _gauge('database_up', '1 if the database answered '
                             'this scrape\'s reads in time, else 0 (and '
                             'the database gauges are missing).')
        database_up.add_metric([], 0 if families is None else 1)
        yield database_up
        duration = _gauge('database_read_duration_seconds', 'Seconds this '
                          'scrape waited for the database gauges.')
        duration.add_metric([], time.monotonic() - started)
        yield duration
