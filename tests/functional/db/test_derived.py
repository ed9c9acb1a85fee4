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

"""Derived rows that disagree with their source are found and repaired,
on every backend: what an older version's writer, on a newer schema,
leaves behind (nodes with their traits in ``node_traits`` and none in
their text; counters that missed a change)."""

import random

import sqlalchemy as sa

from reserveapi.db import derived
from reserveapi.db import models
from reserveapi.db import node_sync
from reserveapi.db import node_texts
from reserveapi.db import nodes as db_nodes
from reserveapi.inventory import sync as inventory_sync
from tests.functional import base
from tests.functional.db import test_summary_counters as summary


def _sync(nodes):
    node_sync.sync_nodes(lambda: [(nodes, {
        node['uuid']: inventory_sync.fingerprint(node) for node in nodes})])


class TestDerivedData(base.DBTestCase):

    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        rng = random.Random(7)
        self.nodes = [summary._random_node(rng, node_uuid)
                      for node_uuid in summary.UUIDS]
        _sync(self.nodes)

    def execute(self, statement):
        with self.engine.begin() as connection:
            return connection.execute(statement)

    def texts(self):
        node = models.Node
        with self.engine.connect() as connection:
            return {row.uuid: (node_texts.parse_traits(row.traits_text),
                               node_texts.parse_capabilities(
                                   row.capabilities_text))
                    for row in connection.execute(sa.select(
                        node.uuid, node.traits_text,
                        node.capabilities_text))}

    def capacity(self):
        return db_nodes.get_capacity()

    def test_a_synced_inventory_is_clean(self):
        results = derived.check_all()
        self.assertEqual(list(derived.CHECKS), list(results))
        self.assertEqual({name: (0, 0) for name in derived.CHECKS},
                         {name: (found.found, found.fixed)
                          for name, found in results.items()})

    def test_texts_an_old_writer_left_empty_are_repaired(self):
        expected = self.texts()
        with_items = [uuid for uuid, (traits, capabilities)
                      in expected.items() if traits or capabilities]
        self.assertGreater(len(with_items), 5)
        # As an older version's sync left them: the rows of record
        # written, the texts not.
        self.execute(sa.update(models.Node).values(
            traits_text=',', capabilities_text=''))
        wrong = derived.check_all()
        self.assertEqual(len(with_items), wrong['node texts'].found)
        self.assertEqual(0, wrong['node texts'].fixed)
        self.assertNotEqual(expected, self.texts())

        repaired = derived.check_all(repair=True)
        self.assertEqual(len(with_items), repaired['node texts'].fixed)
        self.assertEqual(expected, self.texts())
        self.assertEqual(0, derived.check_all()['node texts'].found)

    def test_texts_in_another_order_are_not_wrong(self):
        node = models.Node
        with self.engine.connect() as connection:
            row = connection.execute(sa.select(node.id, node.traits_text)
                                     .where(node.traits_text.like(
                                         ',%,%,%'))).first()
        self.assertIsNotNone(row)
        items = row.traits_text.strip(',').split(',')
        self.execute(sa.update(node).where(node.id == row.id).values(
            traits_text=',' + ','.join(reversed(items)) + ','))
        self.assertEqual(0, derived.check_all()['node texts'].found)

    def test_a_window_reads_only_its_nodes(self):
        self.execute(sa.update(models.Node).values(traits_text='x'))
        first, after = derived.check_nodes(0, limit=10, repair=True)
        self.assertEqual(10, first['node texts'].found)
        self.assertEqual(10, first['node texts'].fixed)
        rest, end = derived.check_nodes(after, limit=1000)
        self.assertEqual(len(summary.UUIDS) - 10, rest['node texts'].found)
        self.assertIsNone(end)
        self.assertEqual(({'node texts': derived.Found(),
                           'node flags': derived.Found()}, None),
                         derived.check_nodes(10 ** 9))

    def test_wrong_flags_are_repaired(self):
        node = models.Node
        self.execute(sa.update(node).values(schedulable=sa.not_(
            node.schedulable)))
        wrong = derived.check_all(repair=True)
        self.assertEqual(len(summary.UUIDS), wrong['node flags'].found)
        self.assertEqual(len(summary.UUIDS), wrong['node flags'].fixed)
        self.assertEqual(0, derived.check_all()['node flags'].found)

    def test_counters_that_missed_changes_are_repaired(self):
        before = self.capacity()
        self.assertTrue(before)
        for table in (models.CapacityCounter, models.CpuArchCounter,
                      models.FreeTraitCounter):
            self.execute(sa.update(table.__table__).where(
                table.slot % 2 == 0).values(
                    {column: table.__table__.c[column] + 3
                     for column in ('total', 'node_count')
                     if column in table.__table__.c}))
        self.execute(sa.delete(models.CapacityCounter).where(
            models.CapacityCounter.slot == 1))
        self.assertNotEqual(before, self.capacity())

        found = derived.check_counters()
        self.assertGreater(found.found, 0)
        self.assertEqual(0, found.fixed)
        repaired = derived.check_counters(repair=True)
        self.assertEqual(found.found, repaired.fixed)
        self.assertEqual(before, self.capacity())
        self.assertEqual(0, derived.check_counters().found)
