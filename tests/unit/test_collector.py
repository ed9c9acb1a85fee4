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

"""The cycle collector's thresholds during bulk work, and after it."""

import gc

import fixtures

from reserveapi.common import collector
from reserveapi.inventory import sync as inventory_sync
from tests import base


class TestFewerCollections(base.TestCase):

    def setUp(self):
        super().setUp()
        before = gc.get_threshold()
        self.addCleanup(gc.set_threshold, *before)
        gc.set_threshold(700, 10, 10)

    def test_raised_inside_and_restored_after(self):
        with collector.fewer_collections():
            self.assertEqual((collector.BULK_THRESHOLD, 10, 10),
                             gc.get_threshold())
        self.assertEqual((700, 10, 10), gc.get_threshold())

    def test_restored_when_the_work_fails(self):
        with self.assertRaises(ValueError):
            with collector.fewer_collections():
                raise ValueError('the sync failed')
        self.assertEqual((700, 10, 10), gc.get_threshold())

    def test_overlapping_blocks_restore_once_the_last_ends(self):
        first = collector.fewer_collections()
        second = collector.fewer_collections()
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        self.assertEqual((collector.BULK_THRESHOLD, 10, 10),
                         gc.get_threshold())
        second.__exit__(None, None, None)
        self.assertEqual((700, 10, 10), gc.get_threshold())

    def test_a_higher_threshold_of_the_process_is_kept(self):
        gc.set_threshold(collector.BULK_THRESHOLD * 2, 10, 10)
        with collector.fewer_collections():
            self.assertEqual((collector.BULK_THRESHOLD * 2, 10, 10),
                             gc.get_threshold())

    def test_a_sync_runs_with_fewer_collections(self):
        seen = []
        self.useFixture(fixtures.MockPatchObject(
            inventory_sync, '_sync_file',
            side_effect=lambda: seen.append(gc.get_threshold()[0])))
        self.useFixture(fixtures.MockPatchObject(inventory_sync,
                                                 'repair_derived'))
        self.config(source='file', group='inventory')
        inventory_sync.sync()
        self.assertEqual([collector.BULK_THRESHOLD], seen)
        self.assertEqual(700, gc.get_threshold()[0])
