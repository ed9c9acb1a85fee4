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
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
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


def use_plugin_options(test, auth_type, group):
    """Register a plugin's options for one test, so that it can set them.

    missing_options() registers them as keystoneauth1 does, for good;
    through a config fixture they are gone after the test, which matters
    because ``auth_url`` is a required option: registered and unset, it
    would make the next test's parsing of the configuration fail.
    """
    try:
        loader = ks_loading.get_plugin_loader(auth_type)
    except ks_exc.NoMatchingPlugin:
        return
    fixture = test.useFixture(config_fixture.Config(conf.CONF))
    for opt in ks_loading.get_auth_plugin_conf_options(loader):
        try:
            fixture.register_opt(opt, group=group)
        except cfg.DuplicateOptError:
            # Another plugin's option of that name (``endpoint``) stays.
            pass
