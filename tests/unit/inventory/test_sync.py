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

"""What the Ironic sync decides without Ironic or a database: when a
pass reads everything, and reading a page ahead of the writes."""

import datetime
import threading

from oslo_utils import timeutils

from reserveapi.db import records
from reserveapi.inventory import sync as inventory_sync
from tests import base


def state(full_minutes_ago=1, watermark=datetime.datetime(2030, 1, 1)):
    now = timeutils.utcnow()
    return records.InventorySyncRecord(
        source='ironic', synced_at=now, nodes=3,
        full_synced_at=(None if full_minutes_ago is None else
                        now - datetime.timedelta(minutes=full_minutes_ago)),
        watermark=watermark)


class TestFullPassDue(base.TestCase):

    def test_first_pass_and_missing_watermark(self):
        self.assertTrue(inventory_sync._full_pass_due(None))
        self.assertTrue(inventory_sync._full_pass_due(state(
            full_minutes_ago=None)))
        self.assertTrue(inventory_sync._full_pass_due(state(watermark=None)))

    def test_full_sync_interval(self):
        self.config(full_sync_interval=600, group='inventory')
        self.assertFalse(inventory_sync._full_pass_due(state(9)))
        self.assertTrue(inventory_sync._full_pass_due(state(11)))
        self.config(full_sync_interval=0, group='inventory')
        self.assertTrue(inventory_sync._full_pass_due(state(0)))


class TestPrefetched(base.TestCase):

    def test_pages_in_order_one_ahead(self):
        produced = []
        consumed = []

        def pages():
            for number in range(5):
                produced.append(number)
                yield number

        for page in inventory_sync._prefetched(pages()):
            consumed.append(page)
            # The reader never runs more than two pages ahead: one queued,
            # one waiting to be put.
            self.assertLessEqual(len(produced) - len(consumed), 2)
        self.assertEqual(list(range(5)), consumed)

    def test_a_reading_error_reaches_the_writer(self):
        def pages():
            yield 1
            raise RuntimeError('Ironic went away')

        iterator = inventory_sync._prefetched(pages())
        self.assertEqual(1, next(iterator))
        self.assertRaisesRegex(RuntimeError, 'Ironic went away', next,
                               iterator)

    def test_a_writer_that_stops_stops_the_reader(self):
        stopped = threading.Event()

        def pages():
            try:
                yield from range(1000)
            finally:
                stopped.set()

        for page in inventory_sync._prefetched(pages()):
            if page == 2:
                break
        self.assertTrue(stopped.wait(5))
