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
