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

"""The holds' gauges reserveapi-worker serves, read from the database on
every backend: the holds still kept by state, and the free nodes
promised to those that have not started, the very figure compute hosts
subtract from what they report to Placement."""

import datetime
import uuid

from oslo_utils import timeutils

from reserveapi.db import holds as db_holds
from reserveapi.holds import admission
from reserveapi.monitoring import database
from reserveapi_testing import inventory
from tests.functional import base

HOUR = datetime.timedelta(hours=1)
GOLD = 'CUSTOM_BAREMETAL_GOLD'
SILVER = 'CUSTOM_BAREMETAL_SILVER'
BRONZE = 'CUSTOM_BAREMETAL_BRONZE'


def _spec(resource_class):
    return {'extra_specs': {'resources:%s' % resource_class: '1'}}


class TestHoldGauges(base.DBTestCase):

    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        # Gold and bronze have nodes; silver has none.
        inventory.sync(self, [inventory.node('gold-1'),
                              inventory.node(
                                  'bronze-1',
                                  resource_class='baremetal-bronze')])
        self.now = timeutils.utcnow()

    def hold(self, resource_class, amount, start, end, cancelled=False):
        """A hold stored as admitted, its window ``[now + start, now +
        end)`` padded by an hour at both ends."""
        start_at, end_at = self.now + start, self.now + end
        hold = db_holds.create_hold({
            'uuid': str(uuid.uuid4()), 'project_id': 'p1', 'amount': amount,
            'request_spec': _spec(resource_class),
            'resource_class': resource_class, 'shard': None,
            'conductor_group': None, 'start_at': start_at, 'end_at': end_at,
            'padding': 3600, 'busy_from': start_at - HOUR,
            'busy_until': end_at + HOUR}, lambda: None)
        if cancelled:
            db_holds.cancel_hold(hold.uuid, self.now)
        return hold

    def gauges(self):
        found = {}
        for family in database.DatabaseCollector().collect():
            for sample in family.samples:
                if sample.name in ('reserveapi_holds',
                                   'reserveapi_hold_promised_nodes'):
                    (value,) = sample.labels.values()
                    found[sample.name[len('reserveapi_'):], value] = (
                        sample.value)
                elif sample.name == 'reserveapi_database_up':
                    self.assertEqual(1, sample.value)
        return found

    def test_no_hold(self):
        self.assertEqual({('holds', 'pending'): 0, ('holds', 'active'): 0,
                          ('holds', 'ended'): 0,
                          ('hold_promised_nodes', BRONZE): 0,
                          ('hold_promised_nodes', GOLD): 0},
                         self.gauges())

    def test_by_state_and_promised_per_class(self):
        # Pending gold: 2 nodes, then 3 from within the first's padding
        # (their busy windows overlap from now + 3.5 h to now + 5 h).
        self.hold(GOLD, 2, 2 * HOUR, 4 * HOUR)
        self.hold(GOLD, 3, 4.5 * HOUR, 6 * HOUR)
        # Pending silver, a class without nodes.
        self.hold(SILVER, 1, HOUR, 2 * HOUR)
        # Active: kept by the reservations, promised no longer.
        self.hold(GOLD, 4, -HOUR, HOUR)
        # Ended, within its padding.
        self.hold(GOLD, 6, -3 * HOUR, -0.5 * HOUR)
        # Neither counted nor promised: over, or cancelled.
        self.hold(GOLD, 7, -5 * HOUR, -3 * HOUR)
        self.hold(GOLD, 10, HOUR, 2 * HOUR, cancelled=True)

        self.assertEqual({('holds', 'pending'): 3, ('holds', 'active'): 1,
                          ('holds', 'ended'): 1,
                          ('hold_promised_nodes', BRONZE): 0,
                          ('hold_promised_nodes', GOLD): 5,
                          ('hold_promised_nodes', SILVER): 1},
                         self.gauges())
        # The figure Placement is told.
        self.assertEqual({GOLD: 5, SILVER: 1}, admission.promised())

    def test_states_as_admission_tells_them(self):
        """At the bounds too: a hold is active from its start on, ended
        from its end on; gone after its padding."""
        later = self.now + 1.5 * HOUR
        holds = [self.hold(GOLD, 1, start, end) for start, end in (
            (2 * HOUR, 3 * HOUR), (1.5 * HOUR, 3 * HOUR),
            (HOUR, 2 * HOUR), (0 * HOUR, 1.5 * HOUR), (-HOUR, HOUR),
            (-2 * HOUR, -HOUR))]
        expected = {'pending': 0, 'active': 0, 'ended': 0}
        for hold in holds:
            if hold.busy_until > later:
                expected[admission.state(hold, later)] += 1
        self.assertEqual({'pending': 1, 'active': 2, 'ended': 2}, expected)
        self.assertEqual(expected, db_holds.count_live_by_state(later))
