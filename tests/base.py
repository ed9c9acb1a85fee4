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

"""Test bases: every test gets its own configuration and policy."""

import fixtures
from oslo_config import fixture as config_fixture
from oslotest import base

from reserveapi import conf
from reserveapi import policy


class TestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.config = self.useFixture(config_fixture.Config(conf.CONF)).config
        conf.CONF([], project='reserveapi', default_config_files=[])
        self.config(state_path=self.useFixture(fixtures.TempDir()).path)
        policy.reset()
        self.addCleanup(policy.reset)
