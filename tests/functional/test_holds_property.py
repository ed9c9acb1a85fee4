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

"""Admission end to end against a brute-force model of the timeline.

Small random inventories (two classes, some nodes with a GPU) and
random sequences of holds go through admission.create_hold on SQLite:
the matcher's reading of the specs, the pool, the timeline. The model
admits a hold when, at every hour of its padded window, distinct nodes
can be given to every unit of the holds then active, tried every way.
Each decision must be the model's. Derandomized: every run checks the
same examples.
"""

import datetime
import uuid

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from oslo_utils import timeutils

from reserveapi.common import exception
from reserveapi.db import node_sync
from reserveapi.holds import admission
from reserveapi.inventory import sync as inventory_sync
from tests.functional import base

HOUR = datetime.timedelta(hours=1)
PADDING = 1
"""Hours of ``[holds] cleaning_padding``."""
CLASSES = ('GOLD', 'SILVER')


def _node(index, resource_class, gpu):
    return {
        'uuid': str(uuid.uuid4()), 'name': 'node-%d' % index,
        'resource_class': 'CUSTOM_BAREMETAL_' + resource_class,
        'memory_mb': 8192, 'cpus': 8, 'local_gb': 100, 'cpu_arch': 'x86_64',
        'capabilities': {}, 'traits': ['CUSTOM_GPU'] if gpu else [],
        'provision_state': 'available', 'power_state': 'power off',
        'maintenance': False, 'retired': False, 'instance_uuid': None,
        'conductor_group': None, 'shard': None, 'owner': None,
        'lessee': None,
    }


def _spec(resource_class, gpu):
    extra_specs = {'resources:CUSTOM_BAREMETAL_%s' % resource_class: '1'}
    if gpu:
        extra_specs['trait:CUSTOM_GPU'] = 'required'
    return {'memory_mb': 1024, 'vcpus': 1, 'root_gb': 10,
            'extra_specs': extra_specs}


def _fits(active, nodes):
    """Whether distinct nodes can meet every unit of ``active`` (holds as
    (class, gpu, amount)), every assignment tried."""
    need = [amount for _, _, amount in active]

    def assign(index):
        if not any(need):
            return True
        if index == len(nodes):
            return False
        node_class, node_gpu = nodes[index]
        for position, (resource_class, gpu, _amount) in enumerate(active):
            if (need[position] and node_class == resource_class
                    and (node_gpu or not gpu)):
                need[position] -= 1
                found = assign(index + 1)
                need[position] += 1
                if found:
                    return True
        return assign(index + 1)

    return assign(0)


def _busy(hold):
    _class, _gpu, _amount, start, length = hold
    return start - PADDING, start + length + PADDING


def model_admits(admitted, hold, nodes):
    """The model's decision on ``hold`` beside the ``admitted`` ones."""
    first, last = _busy(hold)
    for hour in range(max(first, 0), last):
        active = [(c, g, a) for c, g, a, s, n in admitted + [hold]
                  if _busy((c, g, a, s, n))[0] <= hour
                  < _busy((c, g, a, s, n))[1]]
        if not _fits(active, nodes):
            return False
    return True


holds = st.lists(st.tuples(st.sampled_from(CLASSES), st.booleans(),
                           st.integers(1, 3), st.integers(1, 8),
                           st.integers(1, 3)), min_size=1, max_size=6)
inventories = st.lists(st.tuples(st.sampled_from(CLASSES), st.booleans()),
                       min_size=1, max_size=6)


class TestAdmissionAgainstTheModel(base.DBTestCase):

    def setUp(self):
        super().setUp()
        self.config(cleaning_padding=PADDING * 3600, group='holds')

    def sync(self, nodes):
        documents = [_node(index, resource_class, gpu)
                     for index, (resource_class, gpu) in enumerate(nodes)]
        node_sync.sync_nodes(lambda: [(documents, {
            document['uuid']: inventory_sync.fingerprint(document)
            for document in documents})])

    @settings(max_examples=60, deadline=None, database=None,
              derandomize=True)
    @given(inventories, holds)
    def test_each_decision_is_the_models(self, nodes, requests):
        self.sync(nodes)
        now = timeutils.utcnow().replace(tzinfo=datetime.timezone.utc)
        admitted, made = [], []
        try:
            for hold in requests:
                resource_class, gpu, amount, start, length = hold
                expected = model_admits(admitted, hold, nodes)
                try:
                    made.append(admission.create_hold(
                        'p1', amount, _spec(resource_class, gpu),
                        now + start * HOUR,
                        now + (start + length) * HOUR).uuid)
                    decided = True
                except exception.HoldNotAdmitted:
                    decided = False
                self.assertEqual(expected, decided,
                                 (nodes, admitted, hold))
                if decided:
                    admitted.append(hold)
        finally:
            for hold_uuid in made:
                admission.cancel_hold(hold_uuid)
