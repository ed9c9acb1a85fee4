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

"""The retry queue in the database: claims, versions and back-off hold
across workers and API processes.
"""

import datetime
import threading
import time

from oslo_utils import timeutils

from reserveapi.db import mirror as db_mirror
from reserveapi.mirror import state as mirror_state
from tests.functional import base
from tests.functional.mirror import base as mirror_base

new_uuid = mirror_base.new_uuid
CLAIM = datetime.timedelta(seconds=300)


class QueueTestCase(base.DBTestCase):

    def setUp(self):
        super().setUp()
        self.aggregate = new_uuid()
        # Whole seconds, which is all MariaDB keeps of a DATETIME.
        self.now = timeutils.utcnow().replace(microsecond=0)

    def pending(self, count):
        """``count`` pending rows nobody has claimed; their ids."""
        return [db_mirror.set_membership(self.aggregate,
                                             'compute-%d' % number, True).id
                for number in range(count)]

    def claim(self, worker, limit=100, now=None):
        now = now or self.now
        return [record.id for record in db_mirror.lease_hosts(
            worker, now + CLAIM, limit, now=now)]

    def row(self, host):
        aggregate = db_mirror.get_aggregate(self.aggregate)
        return next(row for row in aggregate.hosts if row.host == host)


class TestClaims(QueueTestCase):
    scenarios = base.EVERY_BACKEND


    def test_each_row_goes_to_one_worker(self):
        ids = self.pending(3)

        first = self.claim('worker-1', limit=2)
        second = self.claim('worker-2')
        third = self.claim('worker-3')

        self.assertEqual(ids[:2], first)
        self.assertEqual(ids[2:], second)
        self.assertEqual([], third)

    def test_expired_claim_is_taken_over(self):
        ids = self.pending(2)
        self.claim('worker-1')

        self.assertEqual([], self.claim('worker-2', now=self.now + CLAIM))
        later = self.now + CLAIM + datetime.timedelta(seconds=1)
        self.assertEqual(ids, self.claim('worker-2', now=later))

    def test_synced_and_backing_off_rows_are_not_claimed(self):
        synced, failing = self.pending(2)
        self.claim('worker-1')
        retry_at = self.now + datetime.timedelta(seconds=40)
        self.assertTrue(db_mirror.finish_host(synced, 1, 'worker-1').synced)
        self.assertFalse(db_mirror.finish_host(
            failing, 1, 'worker-1', error='Placement is unavailable',
            retry_at=retry_at).synced)

        self.assertEqual([], self.claim('worker-2'))
        self.assertEqual([failing], self.claim('worker-2', now=retry_at))
        row = self.row('compute-1')
        self.assertEqual((1, 'Placement is unavailable', 'pending'),
                         (row.attempts, row.last_error, row.state))

    def test_a_newer_version_is_never_marked_synced_by_an_older_apply(self):
        (row_id,) = self.pending(1)
        self.claim('worker-1')
        # An API request flips the membership and takes the row over.
        flipped = db_mirror.set_membership(
            self.aggregate, 'compute-0', False, 'api-1', self.now + CLAIM)
        self.assertEqual(2, flipped.version)

        # The worker finishes its add: stale, the row is due again at
        # once and the API's claim is void.
        self.assertFalse(db_mirror.finish_host(row_id, 1, 'worker-1').synced)
        self.assertFalse(db_mirror.finish_host(row_id, 2, 'api-1').synced)

        row = self.row('compute-0')
        self.assertEqual((False, 2, 'pending', None),
                         (row.member, row.version, row.state,
                          row.next_attempt_at))
        self.assertEqual([row_id], self.claim('worker-2'))
        self.assertTrue(db_mirror.finish_host(row_id, 2, 'worker-2').synced)
        self.assertEqual('synced', self.row('compute-0').state)

    def test_outcome_needs_the_claim(self):
        (row_id,) = self.pending(1)
        self.claim('worker-1', now=self.now - CLAIM * 2)
        self.claim('worker-2')

        self.assertFalse(db_mirror.finish_host(row_id, 1, 'worker-1',
                                               error='late').synced)
        self.assertFalse(db_mirror.finish_host(row_id, 1, 'worker-1').synced)
        row = self.row('compute-0')
        self.assertEqual((0, None, 'pending'),
                         (row.attempts, row.last_error, row.state))
        self.assertTrue(db_mirror.finish_host(row_id, 1, 'worker-2').synced)

    def test_requeue_only_the_version_that_was_read(self):
        (row_id,) = self.pending(1)
        self.claim('worker-1')
        db_mirror.finish_host(row_id, 1, 'worker-1')

        self.assertIsNone(db_mirror.lease_host(row_id, 2, 'reconcile',
                                                   self.now + CLAIM))
        record = db_mirror.lease_host(row_id, 1, 'reconcile',
                                          self.now + CLAIM)
        self.assertEqual(('pending', 1), (record.state, record.version))
        self.assertIsNone(db_mirror.lease_host(row_id, 1, 'other',
                                                   self.now + CLAIM))

    def test_status(self):
        first, second, _third = self.pending(3)
        self.claim('worker-1')
        db_mirror.finish_host(first, 1, 'worker-1')
        db_mirror.finish_host(second, 1, 'worker-1', error='refused',
                                  retry_at=self.now)

        status = mirror_state.get_status()

        self.assertEqual((1, 2), (status['synced'], status['pending']))
        self.assertEqual('compute-1', status['oldest_pending'].host)
        self.assertEqual('refused', status['oldest_pending'].last_error)


class TestConcurrentClaims(QueueTestCase):
    """Workers really racing: one connection each."""

    scenarios = base.SERVER_BACKENDS

    def test_racing_workers_split_the_rows(self):
        ids = self.pending(40)
        workers = 6
        barrier = threading.Barrier(workers)
        claimed = {}

        def work(name):
            barrier.wait()
            claimed[name] = []
            while batch := self.claim(name, limit=3):
                claimed[name].extend(batch)
                # Work on the batch, as a real worker would; without
                # this one thread may drain every row before the others
                # are scheduled, and the split below would be luck.
                time.sleep(0.01)

        threads = [threading.Thread(target=work, args=('worker-%d' % n,))
                   for n in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        everything = [row_id for batch in claimed.values()
                      for row_id in batch]
        self.assertEqual(len(everything), len(set(everything)))
        self.assertEqual(sorted(ids), sorted(everything))
        self.assertGreater(sum(bool(batch) for batch in claimed.values()),
                           1)

    def test_hosts_racing_to_join_a_new_aggregate(self):
        hosts = ['compute-%d' % number for number in range(6)]
        barrier = threading.Barrier(len(hosts))

        def join(host):
            barrier.wait()
            db_mirror.set_membership(self.aggregate, host, True)

        threads = [threading.Thread(target=join, args=(host,))
                   for host in hosts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        (aggregate,) = db_mirror.list_aggregates()
        self.assertEqual(self.aggregate, aggregate.uuid)
        self.assertEqual(hosts, [row.host for row in aggregate.hosts])
