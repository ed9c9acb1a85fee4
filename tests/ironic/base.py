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

"""The base of tests that use this process's real Ironic."""

from oslo_config import fixture as config_fixture
from oslotest import base

from reserveapi import conf
from reserveapi.cmd import worker
from reserveapi.inventory import sync as inventory_sync
from tests.fixtures import ironic as ironic_fixture
from tests.functional import base as functional_base
from tests.functional import inventory


class IronicTestCase(base.BaseTestCase):
    """Each test starts with the shared Ironic running and empty."""

    def setUp(self):
        super().setUp()
        self.ironic = ironic_fixture.shared_ironic()
        self.ironic.reset()
        self.ironic.attach_log_on_failure(self)


class IronicSourceTestCase(IronicTestCase):
    """With reserveapi's configuration pointing at the shared Ironic."""

    def setUp(self):
        super().setUp()
        self.config = self.useFixture(
            config_fixture.Config(conf.CONF)).config
        conf.CONF([], project='reserveapi', default_config_files=[])
        self.config(source='ironic', group='inventory')
        self.config(auth_type='none', endpoint_override=self.ironic.endpoint,
                    group='ironic')


GOLD = {
    'resource_class': 'baremetal-gold',
    'properties': {'memory_mb': 8192, 'cpus': 8, 'local_gb': 100,
                   'cpu_arch': 'x86_64',
                   'capabilities': 'boot_mode:uefi,supports_uefi:true,'
                                   'has_gpu:true'},
    'traits': ['CUSTOM_RAID', 'HW_CPU_X86_AVX2'],
}
"""Seeded node fields that the example request spec (tests/examples.py)
matches."""


class IronicAPITestCase(functional_base.APITestCase):
    """The real API on SQLite, its inventory the shared real Ironic."""

    def setUp(self):
        super().setUp()
        self.ironic = ironic_fixture.shared_ironic()
        self.ironic.reset()
        self.ironic.attach_log_on_failure(self)
        # With source = ironic the file is never read: this one is absent.
        self.config(source='ironic', file='/nonexistent/nodes.yaml',
                    group='inventory')
        self.config(auth_type='none', endpoint_override=self.ironic.endpoint,
                    api_max_retries=0, node_locked_retry_interval=0.05,
                    group='ironic')
        inventory_sync.reset_source()
        self.addCleanup(inventory_sync.reset_source)

    def seed(self, count=1, **template):
        """Seed ``count`` nodes the example spec matches; their UUIDs."""
        return self.ironic.seed_nodes(count, **dict(GOLD, **template))

    def sync_nodes(self):
        """``reserveapi-manage sync-nodes``, which must succeed."""
        code, stdout, stderr = inventory.manage(self, 'sync-nodes')
        self.assertEqual(0, code, stderr)
        return stdout

    def run_worker_once(self):
        """``reserveapi-worker --once``: every job, in this process."""
        return worker.run_once(worker.jobs())
