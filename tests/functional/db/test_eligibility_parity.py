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
backend, for every criterion declared (matcher/filters.CRITERIA, from
common/eligibility.py and the request's own).

A few hundred nodes with a seeded random mix of what each criterion
reads (its VECTORS) are written the normal way (syncs, reservations,
releases that leave nodes stale, nodes gone from the inventory while
reserved); then, for request specs drawn from the VECTORS: each
criterion SQL decides exactly passes the same nodes in SQL as in Python
(SQL passes more where it only narrows), the candidate query finds
exactly those Python matches plus what SQL only narrowed, and ``tally``
counts the nodes each exact criterion eliminates first as Python does.
The stored ``schedulable`` flag is Python's verdict over the criteria it
stands for, on every node, and the counters are a recount of the nodes,
and Python's.
"""

import collections
import itertools
import random
import typing
import uuid

from oslotest import base as oslotest_base
import sqlalchemy as sa

from reserveapi import reservations
from reserveapi.common import eligibility
from reserveapi.db import base as db_base
from reserveapi.db import derived
from reserveapi.db import matching
from reserveapi.db import models
from reserveapi.db import nodes as db_nodes
from reserveapi.db import reservations as db_reservations
from reserveapi.inventory import lifecycle
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


def _name(index):
    return 'node-%d' % index


def _uuid(index):
    return str(uuid.UUID(int=index + 1))


def _sized(field, sizes, resource):
    """A flavor's ``field`` of each of ``sizes``, or with its standard
    ``resource`` zeroed, as bare metal flavors do."""
    return tuple({field: size} for size in sizes) + (
        {field: sizes[-1], 'extra_specs': {'resources:%s' % resource: '0'}},)


def _asked(key, *values):
    """Requests asking ``key`` of the extra specs, each one of
    ``values``."""
    return tuple({'extra_specs': {key: value}} for value in values)


def _decided(name):
    """Whether SQL decides the criterion ``name`` (or ``name:item``)
    exactly, as declared: a node-state criterion always, a request
    criterion as its SQL shape says."""
    criterion = filters.BY_NAME[name.partition(':')[0]]
    return criterion.sql is None or criterion.sql.exact


class Vectors(typing.NamedTuple):
    """What the mix varies for one criterion: ``node``, fields of a node
    as Ironic lists it, each a choice of values; ``request``, a choice of
    parts of a request spec (``extra_specs`` and ``properties`` of the
    image merge with the other criteria's); ``context``, MatchContext
    fields, each a choice."""

    node: dict = {}
    request: tuple = ({},)
    context: dict = {}


# One entry per criterion of filters.CRITERIA, in its order: adding a
# criterion is adding its vectors here. Nodes are vanished, reserved and
# stale by setUp's syncs, reservations and releases.
VECTORS = {
    'vanished': Vectors(),
    'provision_state': Vectors(node={'provision_state': ('available',) * 12 + (
        'active', 'manageable', 'cleaning', None)}),
    'power_state': Vectors(node={'power_state': ('power off',) * 6 + (
        'power on', None)}),
    'maintenance': Vectors(node={'maintenance': (False,) * 15 + (True,)}),
    'retired': Vectors(node={'retired': (False,) * 24 + (True,)}),
    'instance_uuid': Vectors(node={'instance_uuid': (None,) * 15 + tuple(
        str(uuid.UUID(int=10 ** 6 + index)) for index in range(3))}),
    'stale': Vectors(),
    'reserved': Vectors(),
    'candidate_nodes': Vectors(context={'candidate_nodes': (None,) * 6 + (
        frozenset(_name(index) for index in range(0, NODES, 5))
        | frozenset(_uuid(index) for index in range(3, NODES, 7)),
        frozenset(_name(index) for index in range(1, NODES, 3)),
        frozenset())}),
    'partition': Vectors(
        node={'conductor_group': ('', 'east', 'West'),
              'shard': (None, 'rack-1', 'rack-2')},
        context={'conductor_group': (None,) * 4 + ('', 'east', 'west'),
                 'shard': (None,) * 4 + ('rack-1',)}),
    'owner': Vectors(node={'owner': (None,) * 4 + PROJECTS,
                           'lessee': (None,) * 6 + PROJECTS},
                     context={'project_id': (None,) + PROJECTS}),
    'resource_class': Vectors(
        node={'resource_class': ('baremetal-gold', 'baremetal-gold',
                                 'baremetal-silver', None)},
        request=({},) * 2 + (
            {'extra_specs': {'resources:CUSTOM_BAREMETAL_GOLD': '1'}},
            {'extra_specs': {'resources:CUSTOM_BAREMETAL_SILVER': '1'}})),
    'cpu_arch': Vectors(
        node={'cpu_arch': ('x86_64', 'x86_64', 'amd64', 'aarch64', None)},
        request=({},) * 7 + ({'properties': {'hw_architecture': 'x86_64'}},
                             {'properties': {'hw_architecture': 'aarch64'}})),
    'memory_mb': Vectors(
        node={'memory_mb': (0, 1024, 4096, 8192, 8192)},
        request=_sized('memory_mb', (0, 1024, 1024, 4096), 'MEMORY_MB'),
        context={'exact_match': (False,) * 4 + (True,)}),
    'cpus': Vectors(node={'cpus': (0, 4, 8, 16, 16)},
                    request=_sized('vcpus', (0, 4, 4, 8), 'VCPU')),
    'local_gb': Vectors(node={'local_gb': (0, 50, 100, 100)},
                        request=_sized('root_gb', (0, 20, 20, 50),
                                       'DISK_GB')),
    # Required and forbidden traits apart: a request asking both of one
    # is refused before matching.
    'required_traits': Vectors(
        node={'traits': tuple(
            traits for count in range(4)
            for traits in itertools.combinations(TRAITS, count))},
        request=({},) * 3 + _asked('trait:CUSTOM_RAID', 'required')
        + _asked('trait:HW_CPU_X86_AVX2', 'required') + (
            {'extra_specs': {'trait:CUSTOM_RAID': 'required',
                             'trait:HW_CPU_X86_AVX2': 'required'}},)),
    'forbidden_traits': Vectors(
        request=({},) * 4 + _asked('trait:CUSTOM_BROKEN', 'forbidden')
        + _asked('trait:CUSTOM_GPU', 'forbidden')),
    'capabilities': Vectors(
        node={'capabilities': (
            '', 'boot_mode:uefi', 'boot_mode:bios,secure_boot:true',
            'secure_boot:True,disk_label:gpt', 'secure_boot:false,gpus:2',
            'disk_label:msdos,gpus:4,boot_mode:uefi', 'gpus:1',
            'cpu_arch:aarch64,boot_mode:bios',
            'boot_mode:uefi,secure_boot:true,gpus:4,disk_label:gpt')},
        request=({},) * 6
        + _asked('capabilities:boot_mode', 'uefi', '<or> uefi <or> bios')
        + _asked('capabilities:disk_label', 's== gpt')
        + _asked('capabilities:gpus', '>= 2', '<in> 4')
        + _asked('capabilities', 'secure_boot')
        + _asked('capabilities:cpu_arch', 'aarch64')
        + _asked('cpu_arch', 'x86_64') + (
            {'extra_specs': {'capabilities:boot_mode': 'uefi',
                             'capabilities:gpus': '>= 2',
                             'capabilities': 'secure_boot'}},
            {'extra_specs': {'capabilities:disk_label': 's== gpt',
                             'cpu_arch': 'x86_64'}})),
}


def _node(rng, index):
    """One node as Ironic lists it: each field the vectors vary, one of
    its values; the others eligible."""
    return inventory.node(_name(index), uuid=_uuid(index), **{
        field: rng.choice(values) for vectors in VECTORS.values()
        for field, values in vectors.node.items()})


def _request(rng):
    """A request spec and its MatchContext: of each criterion's vectors,
    one part of a request and one value of each context field."""
    data, context = {}, {}
    for vectors in VECTORS.values():
        for key, value in rng.choice(vectors.request).items():
            if isinstance(value, dict):
                data.setdefault(key, {}).update(value)
            else:
                data[key] = value
        context.update((field, rng.choice(values))
                       for field, values in vectors.context.items())
    data['image'] = {'properties': data.pop('properties', {})}
    return (spec_mod.parse_request_spec(data),
            filters.MatchContext(**context))


class TestVectors(oslotest_base.BaseTestCase):

    def test_the_vectors_are_the_declared_criteria(self):
        self.assertEqual([criterion.name for criterion in filters.CRITERIA],
                         list(VECTORS))
        for part in ('node', 'context'):
            fields = [field for vectors in VECTORS.values()
                      for field in getattr(vectors, part)]
            self.assertEqual(len(fields), len(set(fields)), part)


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
        # Released, or ended as Ironic contradicted them, their nodes to
        # wait for a sync as stale; then more reserved.
        for reservation in db_reservations.list_reservations():
            if (reservation.node_uuid not in gone
                    and self.rng.random() < 0.5):
                if self.rng.random() < 0.6:
                    lifecycle.end_contradicted(reservation,
                                               'the test ended it')
                else:
                    lifecycle.release_record(reservation,
                                             lambda record: None)
        self._reserve(0.1)
        self.nodes = db_nodes.list_nodes()
        self.live = [node for node in self.nodes
                     if self._passes(eligibility.UNIVERSE, node)]

    def _reserve(self, share):
        """Reserve ``share`` of the nodes Python finds free; their uuids."""
        held = set()
        for node in db_nodes.list_nodes():
            if (self._passes_stored_flag(node) and not node.reserved
                    and self.rng.random() < share):
                db_reservations.create_reservation(
                    {'uuid': str(uuid.uuid4()),
                     'instance_uuid': str(uuid.uuid4()),
                     'host': 'compute-1', 'project_id': None}, node)
                held.add(node.uuid)
        return held

    @staticmethod
    def _passes(criteria, node):
        """Whether ``node`` passes the checks of ``criteria`` of
        common/eligibility.py, which read nothing of a request."""
        return all(filters.BY_NAME[criterion.name].check(
            None, node, None) is None for criterion in criteria)

    def _passes_stored_flag(self, node):
        return self._passes([eligibility.BY_NAME[name]
                             for name in eligibility.STORED_FLAG], node)

    def test_the_mix_fails_every_criterion_of_the_node(self):
        failed = {criterion.name for node in self.nodes
                  for criterion in eligibility.CRITERIA
                  if not self._passes([criterion], node)}
        self.assertEqual(set(eligibility.BY_NAME), failed)

    def test_the_stored_flags_are_pythons_verdict(self):
        with db_base.reader() as session:
            stored = {row.uuid: (row.schedulable, row.reserved)
                      for row in session.execute(sa.select(
                          models.Node.uuid, models.Node.schedulable,
                          models.Node.reserved))}
        self.assertEqual(
            {node.uuid: (self._passes_stored_flag(node), node.reserved)
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
        eliminating = set()
        for _ in range(SPECS):
            spec, context = _request(self.rng)
            eliminating.update(self._assert_parity(spec, context))
        # Each criterion was put to the test: it failed some node.
        self.assertEqual(set(filters.BY_NAME), eliminating)

    def _assert_parity(self, spec, context):
        """Python and SQL agree on ``spec`` and ``context``; the criteria
        that failed some node."""
        node_filter = reservations._prefilter(spec, context)
        asked = '%s, %s' % (spec, context)
        python = {criterion.name: {
            node.uuid for node in self.nodes
            if criterion.check(spec, node, context) is None}
            for criterion in filters.CRITERIA}
        sql = self._sql_passing(node_filter)
        for name, passing in python.items():
            if _decided(name):
                self.assertEqual(passing, sql[name], '%s: %s' % (name, asked))
            else:
                self.assertLessEqual(passing, sql[name],
                                     '%s: %s' % (name, asked))

        # What SQL lets through, less what only Python decides, is what
        # matches; and it is what the candidate query reads (by the
        # stored flags), in any number of batches.
        narrowed = set.intersection(*sql.values())
        matched = {node.uuid for node in self.nodes
                   if filters.first_miss(spec, node, context) is None}
        self.assertEqual(matched, narrowed.intersection(*[
            passing for name, passing in python.items()
            if not _decided(name)]), asked)
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
        return {name for name, passing in python.items()
                if len(passing) < len(self.nodes)}

    def _sql_passing(self, node_filter):
        """{criterion: uuids of the nodes passing its clauses}, in one
        statement (a NULL clause fails, as in a WHERE)."""
        clauses = collections.defaultdict(list)
        for name, clause in matching.filter_clauses(node_filter):
            clauses[name.partition(':')[0]].append(clause)
        names = list(filters.BY_NAME)
        query = sa.select(models.Node.uuid, *[
            sa.case((sa.and_(*clauses[name]), True), else_=False)
            if clauses[name] else sa.true() for name in names])
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
                if count and _decided(key)}
