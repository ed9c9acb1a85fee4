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

"""The inventory, the request specs and the clients of an upgrade run.

The inventory mixes three resource classes, two traits and two boot
modes, independently of each other, so that each request spec matches
about one node in fourteen: a grant that ignored a criterion would show.
Every rewrite (``write``) changes a capability of every node and a trait
of a fifth of them, so that each inventory sync during the roll writes
nodes, traits and therefore the summary counters; what the specs ask
for never changes, so a grant can be judged against any version of the
file.

The clients are the soak's (``tests/system/soak/soakload.py``), each cycle with
a spec drawn from ``SPECS``; they record every grant and keep some
confirmed reservations for the whole run, as instances that go on
running across the upgrade.
"""

import functools
import json
import random
import re
import threading
import time

import sqlalchemy as sa

from reserveapi_testing import inventory
from reserveapi_testing import observer
from tests.system.soak import run as soak_run
from tests.system.soak import soakload

RESOURCE_CLASSES = ('baremetal-gold', 'baremetal-silver', 'BAREMETAL_LARGE')
KEEP_CHANCE = 0.15
KEEP_AT_MOST = 6
"""Per client: the share of confirmed reservations kept, up to this many
at once (several specs match only some forty nodes)."""


def node(index, round_):
    """Node ``index`` as the ``round_``-th rewrite of the file has it."""
    traits = [trait for trait, present in (
        ('CUSTOM_RAID', index // 3 % 2 == 0),
        ('HW_CPU_X86_AVX2', index // 6 % 2 == 0),
        ('CUSTOM_TOUCHED', index % 5 == round_ % 5)) if present]
    return inventory.node(
        'upgrade-%04d' % index,
        resource_class=RESOURCE_CLASSES[index % 3],
        cpu_arch='aarch64' if index % 7 == 0 else 'x86_64',
        capabilities='boot_mode:%s,upgrade_round:%d' % (
            'uefi' if index // 12 % 2 == 0 else 'bios', round_),
        traits=traits, maintenance=index % 50 == 0,
        conductor_group='rack-a' if index % 4 == 0 else '')


write = functools.partial(soak_run.write_inventory, node=node)
"""``write(path, count, round_)``: the whole file, replaced at once."""


def read(path):
    """The nodes of a file ``write`` wrote."""
    with open(path) as stream:
        return json.load(stream)['nodes']


def _spec(resource_class, trait, trait_value, boot_mode):
    return dict(soakload.SPEC, extra_specs={
        'resources:%s' % resource_class: '1',
        'trait:%s' % trait: trait_value,
        'capabilities:boot_mode': boot_mode})


SPECS = (
    _spec('CUSTOM_BAREMETAL_GOLD', 'CUSTOM_RAID', 'required', 'uefi'),
    _spec('CUSTOM_BAREMETAL_SILVER', 'HW_CPU_X86_AVX2', 'required', 'bios'),
    _spec('CUSTOM_BAREMETAL_LARGE', 'CUSTOM_RAID', 'forbidden', 'uefi'),
    _spec('CUSTOM_BAREMETAL_GOLD', 'HW_CPU_X86_AVX2', 'forbidden', 'bios'),
)


def nova_resource_class(name):
    """An Ironic resource class as a flavor asks for it."""
    return 'CUSTOM_' + re.sub(r'[^A-Z0-9]+', '_', name.upper())


def mismatches(node_, spec):
    """What of ``spec`` the node (as the inventory lists it) does not
    satisfy; empty when it matches."""
    capabilities = dict(item.split(':', 1) for item in
                        node_['properties']['capabilities'].split(','))
    wrong = []
    for key, value in spec['extra_specs'].items():
        kind, _, name = key.partition(':')
        if kind == 'resources' and nova_resource_class(
                node_['resource_class']) != name:
            wrong.append('resource class %s' % node_['resource_class'])
        elif kind == 'trait' and (name in node_['traits']) != (
                value == 'required'):
            wrong.append('trait %s %s' % (name, value))
        elif kind == 'capabilities' and capabilities.get(name) != value:
            wrong.append('%s is %s' % (name, capabilities.get(name)))
    architecture = spec['image']['properties']['hw_architecture']
    if node_['properties']['cpu_arch'] != architecture:
        wrong.append('cpu_arch %s' % node_['properties']['cpu_arch'])
    if node_['maintenance']:
        wrong.append('in maintenance')
    return wrong


class Recorder(soakload.Recorder):
    """The soak's tallies, plus when each connection failure reached a
    client (keystoneauth1 logs each before retrying) and every grant."""

    def __init__(self):
        super().__init__()
        self.connection_failures = []
        self.grants = {}

    def emit(self, record):
        super().emit(record)
        if record.getMessage().startswith('Failure:'):
            with self.tally_lock:
                self.connection_failures.append(
                    {'at': time.monotonic(), 'error': record.getMessage()})

    def grant(self, reservation, spec_index, client):
        """A reservation answered with ``SPECS[spec_index]``; the first
        answer counts (a retry is answered the same reservation)."""
        with self.tally_lock:
            self.grants.setdefault(reservation['uuid'], {
                'reservation': reservation['uuid'],
                'instance': reservation['instance_uuid'],
                'node': reservation['node_uuid'], 'spec': spec_index,
                'at': time.monotonic(), 'client': client})


class Client(soakload.ReservationClient):
    """A compute host reserving with a spec drawn from ``SPECS`` each
    cycle, some confirmed reservations kept: ``kept`` holds them with
    the time each was answered."""

    def __init__(self, url, host, recorder, stop):
        super().__init__(url, host, recorder, stop)
        self.spec_index = 0
        self.kept = []

    def cycle(self, instance_uuid):
        self.spec_index = random.randrange(len(SPECS))
        self.spec = SPECS[self.spec_index]
        super().cycle(instance_uuid)

    def answered(self, reservation):
        self.recorder.grant(reservation, self.spec_index, self.host)

    def keep(self, reservation, start):
        if (len(self.kept) >= KEEP_AT_MOST
                or random.random() >= KEEP_CHANCE):
            return False
        self.kept.append((reservation, start))
        return True


def _sums(connection, query):
    """{key columns: value columns} of a query whose last ``values``
    columns are numbers; keys whose numbers are all zero left out (a
    counter row may stay at zero)."""
    rows = {}
    for row in connection.execute(sa.text(query)):
        key, values = tuple(row[:3]), tuple(int(v or 0) for v in row[3:])
        if any(values):
            rows[key] = values
    return rows


COUNTERS = {
    'capacity_counters': (
        'SELECT shard, conductor_group, resource_class, SUM(total), '
        'SUM(available), SUM(reserved), SUM(memory_mb), SUM(vcpus), '
        'SUM(local_gb) FROM capacity_counters '
        'GROUP BY shard, conductor_group, resource_class',
        "SELECT COALESCE(shard, ''), COALESCE(conductor_group, ''), "
        'resource_class, COUNT(*), '
        'SUM(CASE WHEN schedulable AND NOT reserved THEN 1 ELSE 0 END), '
        'SUM(CASE WHEN reserved THEN 1 ELSE 0 END), SUM(memory_mb), '
        'SUM(cpus), SUM(local_gb) FROM nodes '
        'WHERE NOT vanished AND resource_class IS NOT NULL '
        "GROUP BY COALESCE(shard, ''), COALESCE(conductor_group, ''), "
        'resource_class'),
    'cpu_arch_counters': (
        'SELECT shard, conductor_group, cpu_arch, SUM(node_count) '
        'FROM cpu_arch_counters GROUP BY shard, conductor_group, cpu_arch',
        "SELECT COALESCE(shard, ''), COALESCE(conductor_group, ''), "
        'cpu_arch, COUNT(*) FROM nodes '
        'WHERE NOT vanished AND cpu_arch IS NOT NULL '
        "GROUP BY COALESCE(shard, ''), COALESCE(conductor_group, ''), "
        'cpu_arch'),
    'free_trait_counters': (
        'SELECT shard, conductor_group, trait, SUM(node_count) '
        'FROM free_trait_counters GROUP BY shard, conductor_group, trait',
        "SELECT COALESCE(n.shard, ''), COALESCE(n.conductor_group, ''), "
        't.trait, COUNT(*) FROM nodes n JOIN node_traits t '
        'ON t.node_id = n.id WHERE n.schedulable AND NOT n.reserved '
        "GROUP BY COALESCE(n.shard, ''), COALESCE(n.conductor_group, ''), "
        't.trait'),
}
"""Per counter table: its sums over the slots, and the recount from the
nodes as migration 0007 defines each counter (``_backfill()``)."""


def counter_differences(connection):
    """Where the counters and a recount from the nodes disagree, read
    in one snapshot (the connection's repeatable-read transaction):
    ``[(table, key, counters, recount)]``."""
    differences = []
    for table, (counted, recounted) in COUNTERS.items():
        counters = _sums(connection, counted)
        recount = _sums(connection, recounted)
        for key in sorted(set(counters) | set(recount), key=str):
            if counters.get(key) != recount.get(key):
                differences.append((table, key, counters.get(key),
                                    recount.get(key)))
    return differences


class CounterWatch(threading.Thread):
    """Compares the counters with a recount every ``interval`` seconds
    for the whole roll, so that a step which let a write escape them
    shows even if a later one repairs it."""

    def __init__(self, url, stop, origin, interval=1.0):
        super().__init__(name='counter-watch', daemon=True)
        self.engine = observer.engine(url, pool_pre_ping=True,
                                     isolation_level='REPEATABLE READ')
        self.stop = stop
        self.origin = origin
        self.interval = interval
        self.samples = 0
        self.missed = 0
        self.differences = []

    def run(self):
        while not self.stop.wait(self.interval):
            at = time.monotonic()
            try:
                found = self.compare()
            except sa.exc.DBAPIError:
                self.missed += 1  # the database unreachable for a moment
                continue
            self.samples += 1
            self.differences.extend((at,) + difference
                                    for difference in found)

    def compare(self):
        """``counter_differences`` now."""
        with self.engine.connect() as connection, connection.begin():
            return counter_differences(connection)
