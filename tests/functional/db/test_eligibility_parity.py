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

"""Python and SQL agree on what an eligible, matching node is, on every
backend, as common/eligibility.py declares it.

A few hundred nodes with a seeded random mix of everything eligibility
and matching read are written the normal way (syncs, reservations,
releases that leave nodes stale, nodes gone from the inventory while
reserved); then, for generated request specs: each criterion SQL decides
exactly passes the same nodes in SQL as in Python (SQL passes more where
it only narrows), the candidate query finds exactly those Python
matches plus what SQL only narrowed, and ``tally`` counts the nodes
each exact criterion eliminates first as Python does. The stored
``schedulable`` flag is Python's verdict over the criteria it stands
for, on every node, and the counters are a recount of the nodes, and
Python's.
"""

import collections
import random
import uuid

import sqlalchemy as sa

from reserveapi import reservations
from reserveapi.common import eligibility
from reserveapi.db import base as db_base
from reserveapi.db import derived
from reserveapi.db import matching
from reserveapi.db import models
from reserveapi.db import nodes as db_nodes
from reserveapi.db import reservations as db_reservations
from reserveapi.matcher import filters
from reserveapi.matcher import selection
from reserveapi.matcher import spec as spec_mod
from reserveapi_testing import inventory
from tests.functional import base

SEED = 38
NODES = 300
SPECS = 40
TRAITS = ('CUSTOM_RAID', 'CUSTOM_GPU', 'HW_CPU_X86_AVX2', 'CUSTOM_BROKEN')
PROJECTS = ('p1', 'p2')
SHARDS = (None, 'rack-1', 'rack-2')
GROUPS = ('', 'east', 'West')
CHECKS = {criterion.name: criterion.check for criterion in filters.CRITERIA}


def _capabilities(rng):
    choices = {'boot_mode': ('uefi', 'bios'),
               'secure_boot': ('true', 'True', 'false'),
               'disk_label': ('gpt', 'msdos'), 'gpus': ('1', '2', '4'),
               'cpu_arch': ('aarch64',)}
    picked = rng.sample(sorted(choices), rng.randint(0, 4))
    return ','.join('%s:%s' % (key, rng.choice(choices[key]))
                    for key in picked)


def _node(rng, index):
    """One node as Ironic lists it: most eligible, each field sometimes
    not."""
    return inventory.node(
        'node-%d' % index, uuid=str(uuid.UUID(int=index + 1)),
        resource_class=rng.choice(('baremetal-gold', 'baremetal-gold',
                                   'baremetal-silver', None)),
        memory_mb=rng.choice((0, 1024, 4096, 8192, 8192)),
        cpus=rng.choice((0, 4, 8, 16, 16)),
        local_gb=rng.choice((0, 50, 100, 100)),
        cpu_arch=rng.choice(('x86_64', 'x86_64', 'amd64', 'aarch64', None)),
        capabilities=_capabilities(rng),
        traits=rng.sample(TRAITS, rng.randint(0, 3)),
        provision_state=rng.choice(('available',) * 12 + (
            'active', 'manageable', 'cleaning', None)),
        power_state=rng.choice(('power off',) * 6 + ('power on', None)),
        maintenance=rng.random() < 0.06, retired=rng.random() < 0.04,
        instance_uuid=(str(uuid.UUID(int=10 ** 6 + index))
                       if rng.random() < 0.06 else None),
        owner=rng.choice((None,) * 4 + PROJECTS),
        lessee=rng.choice((None,) * 6 + PROJECTS),
        conductor_group=rng.choice(GROUPS), shard=rng.choice(SHARDS))


def _request(rng, names):
    """A request spec and its MatchContext, asking a random part of what
    one can ask."""
    extra_specs = {}
    if rng.random() < 0.5:
        extra_specs['resources:' + rng.choice(
            ('CUSTOM_BAREMETAL_GOLD', 'CUSTOM_BAREMETAL_SILVER'))] = '1'
    if rng.random() < 0.2:
        extra_specs['resources:' + rng.choice(
            ('VCPU', 'MEMORY_MB', 'DISK_GB'))] = '0'
    for trait in rng.sample(TRAITS, rng.choice((0, 0, 1, 2))):
        extra_specs['trait:' + trait] = rng.choice(('required',
                                                    'forbidden'))
    for key, value in rng.sample([
            ('capabilities:boot_mode', 'uefi'),
            ('capabilities:boot_mode', '<or> uefi <or> bios'),
            ('capabilities:disk_label', 's== gpt'),
            ('capabilities:gpus', '>= 2'),
            ('capabilities:gpus', '<in> 4'),
            ('capabilities', 'secure_boot'),
            ('capabilities:cpu_arch', 'aarch64'),
            ('cpu_arch', 'x86_64')], rng.choice((0, 1, 1, 2, 3))):
        extra_specs[key] = value
    properties = {}
    if rng.random() < 0.3:
        properties['hw_architecture'] = rng.choice(('x86_64', 'aarch64'))
    spec = spec_mod.parse_request_spec({
        'memory_mb': rng.choice((0, 1024, 1024, 4096)),
        'vcpus': rng.choice((0, 4, 4, 8)),
        'root_gb': rng.choice((0, 20, 20, 50)),
        'extra_specs': extra_specs,
        'image': {'properties': properties}})
    context = filters.MatchContext(
        project_id=rng.choice((None,) + PROJECTS),
        candidate_nodes=(frozenset(rng.sample(names, 60))
                         if rng.random() < 0.2 else None),
        exact_match=rng.random() < 0.2,
        conductor_group=rng.choice((None,) * 4 + ('', 'east', 'west')),
        shard=rng.choice((None,) * 4 + ('rack-1',)))
    return spec, context


class TestEligibilityParity(base.DBTestCase):
    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        self.rng = random.Random(SEED)
        nodes = [_node(self.rng, index) for index in range(NODES)]
        inventory.sync(self, nodes)
        held = self._reserve(0.2)
        # Changed while reserved, or gone from the inventory (vanished).
        gone = set(self.rng.sample(sorted(held), 5))
        for entry in nodes:
            if entry['uuid'] in held and self.rng.random() < 0.3:
                entry['maintenance'] = not entry['maintenance']
        inventory.sync(self, [entry for entry in nodes
                              if entry['uuid'] not in gone])
        # Released, some to wait for a sync as stale; then more reserved.
        for reservation in db_reservations.list_reservations():
            if (reservation.node_uuid not in gone
                    and self.rng.random() < 0.5):
                db_reservations.delete_reservation(
                    reservation, stale=self.rng.random() < 0.6)
        self._reserve(0.1)
        self.nodes = db_nodes.list_nodes()
        self.live = [node for node in self.nodes if not node.vanished]

    def _reserve(self, share):
        """Reserve ``share`` of the nodes Python finds free; their uuids."""
        held = set()
        for node in db_nodes.list_nodes():
            if (not node.vanished and self._passes_stored_flag(node)
                    and not node.reserved and self.rng.random() < share):
                db_reservations.create_reservation(
                    {'uuid': str(uuid.uuid4()),
                     'instance_uuid': str(uuid.uuid4()),
                     'host': 'compute-1', 'project_id': None}, node)
                held.add(node.uuid)
        return held

    @staticmethod
    def _passes_stored_flag(node):
        return all(CHECKS[name](None, node, None) is None
                   for name in eligibility.STORED_FLAG)

    def test_the_mix_has_every_case(self):
        failed = {name for node in self.live
                  for name in eligibility.STORED_FLAG
                  if CHECKS[name](None, node, None) is not None}
        self.assertEqual(set(eligibility.STORED_FLAG), failed)
        self.assertTrue(any(node.reserved for node in self.live))
        self.assertTrue(any(node.vanished for node in self.nodes))

    def test_the_stored_flags_are_pythons_verdict(self):
        with db_base.reader() as session:
            stored = {row.uuid: (row.schedulable, row.reserved)
                      for row in session.execute(sa.select(
                          models.Node.uuid, models.Node.schedulable,
                          models.Node.reserved))}
        self.assertEqual(
            {node.uuid: (not node.vanished
                         and self._passes_stored_flag(node), node.reserved)
             for node in self.nodes},
            stored)

    def test_the_counters_are_a_recount_and_pythons(self):
        self.assertEqual({name: 0 for name in derived.CHECKS}, {
            name: found.found
            for name, found in derived.check_all().items()})
        expected = collections.defaultdict(collections.Counter)
        for node in self.live:
            if node.resource_class is None:
                continue
            counts = expected[node.resource_class]
            counts['total'] += 1
            counts['reserved'] += node.reserved
            counts['available'] += (not node.reserved
                                    and self._passes_stored_flag(node))
        self.assertEqual(
            {name: dict(counts) for name, counts in expected.items()},
            {row['resource_class']: {
                name: row[name]
                for name in ('total', 'reserved', 'available')}
             for row in db_nodes.get_capacity()['capacity']})

    def test_python_and_sql_agree_on_every_criterion(self):
        names = [node.name for node in self.live] + [
            node.uuid for node in self.live[::7]]
        for _ in range(SPECS):
            spec, context = _request(self.rng, names)
            self._assert_parity(spec, context)

    def _assert_parity(self, spec, context):
        node_filter = reservations._prefilter(spec, context)
        asked = '%s, %s' % (spec, context)
        python = {criterion.name: {
            node.uuid for node in self.live
            if criterion.check(spec, node, context) is None}
            for criterion in filters.CRITERIA}
        sql = self._sql_passing(node_filter)
        for criterion in eligibility.CRITERIA:
            if criterion.sql_exact:
                self.assertEqual(python[criterion.name],
                                 sql[criterion.name],
                                 '%s: %s' % (criterion.name, asked))
            else:
                self.assertLessEqual(python[criterion.name],
                                     sql[criterion.name],
                                     '%s: %s' % (criterion.name, asked))

        # What SQL lets through, less what only Python decides, is what
        # matches; and it is what the candidate query reads (by the
        # stored flags), in any number of batches.
        narrowed = set.intersection(*sql.values())
        matched = {node.uuid for node in self.live
                   if filters.first_miss(spec, node, context) is None}
        self.assertEqual(matched, narrowed.intersection(*[
            python[criterion.name] for criterion in eligibility.CRITERIA
            if not criterion.sql_exact]), asked)
        candidates = [node for batch in matching.candidate_batches(
            node_filter, 50, first_batch=10) for node in batch]
        self.assertEqual(sorted(narrowed),
                         sorted(node.uuid for node in candidates), asked)
        self.assertEqual(matched, {node.uuid for node in filters.partition(
            spec, candidates, context)[0]}, asked)

        # A refusal's counts: the first miss of every node.
        tally = matching.tally(node_filter)
        self.assertEqual(len(self.live), tally.total)
        eliminated, _values = selection.eliminate(
            filters.partition(spec, self.live, context)[1])
        self.assertEqual(self._exact(eliminated),
                         self._exact(tally.eliminated), asked)

    def _sql_passing(self, node_filter):
        """{criterion: uuids of the nodes not vanished passing its
        clauses}, in one statement (a NULL clause fails, as in a
        WHERE)."""
        clauses = collections.defaultdict(list)
        for name, clause in matching.filter_clauses(node_filter):
            clauses[name.partition(':')[0]].append(clause)
        names = [criterion.name for criterion in eligibility.CRITERIA]
        node = models.Node
        query = sa.select(node.uuid, *[
            sa.case((sa.and_(*clauses[name]), True), else_=False)
            if clauses[name] else sa.true() for name in names]).where(
                node.vanished.is_(False))
        passing = {name: set() for name in names}
        with db_base.reader() as session:
            for node_uuid, *verdicts in session.execute(query):
                for name, verdict in zip(names, verdicts, strict=True):
                    if verdict:
                        passing[name].add(node_uuid)
        return passing

    @staticmethod
    def _exact(eliminated):
        """The counts of the criteria SQL decides exactly."""
        return {key: count for key, count in eliminated.items()
                if count and eligibility.BY_NAME[
                    key.partition(':')[0]].sql_exact}
