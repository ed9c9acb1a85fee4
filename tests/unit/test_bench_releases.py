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

"""The arithmetic of tools/bench/releases.py: what it reports as a
release's CPU and the HEAD/old ratios must be what the README says."""

import testtools

from tools.bench import releases


def usage(master, **workers):
    return {'master': None if master is None else {'cpu_s': master},
            'workers': {int(pid[1:]): {'cpu_s': cpu}
                        for pid, cpu in workers.items()}}


class CPUSpentTestCase(testtools.TestCase):

    def test_master_and_workers(self):
        self.assertAlmostEqual(3.5, releases._cpu_spent(
            usage(1.0, p10=2.0, p11=3.0), usage(1.5, p10=4.0, p11=4.0)))

    def test_a_worker_started_between_counts_whole(self):
        self.assertAlmostEqual(2.5, releases._cpu_spent(
            usage(1.0, p10=2.0), usage(1.0, p10=2.0, p12=2.5)))

    def test_a_gone_master_counts_nothing(self):
        self.assertAlmostEqual(1.0, releases._cpu_spent(
            usage(None, p10=2.0), usage(None, p10=3.0)))


class RatiosTestCase(testtools.TestCase):

    def round(self, post, delete, rate, cpu):
        return {'post_p50_ms': post, 'delete_p50_ms': delete,
                'reservations_per_s': rate, 'cpu_ms_per_reservation': cpu}

    def test_median_of_each_rounds_ratio(self):
        old = [self.round(10, 5, 100, 4), self.round(20, 5, 100, 4),
               self.round(10, 5, 200, 4)]
        head = [self.round(11, 5, 100, 6), self.round(20, 4, 150, 4),
                self.round(30, 5, 100, 5)]
        found = releases.ratios(old, head)
        self.assertEqual([1.1, 1.0, 3.0], found['post_p50_ms']['rounds'])
        self.assertEqual(1.1, found['post_p50_ms']['median'])
        self.assertEqual(1.0, found['delete_p50_ms']['median'])
        self.assertEqual(1.0, found['reservations_per_s']['median'])
        self.assertEqual(1.25, found['cpu_ms_per_reservation']['median'])

    def test_a_missing_figure_is_left_out(self):
        found = releases.ratios([self.round(None, 5, 0, 4)],
                                [self.round(10, 5, 100, None)])
        self.assertIsNone(found['post_p50_ms']['median'])
        self.assertIsNone(found['reservations_per_s']['median'])
        self.assertIsNone(found['cpu_ms_per_reservation']['median'])
        self.assertEqual(1.0, found['delete_p50_ms']['median'])
