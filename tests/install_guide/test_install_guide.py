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

"""Each path of the install guide followed as written, one variant a
test, each on a fresh host (reserveapi_testing/install_guide.py): every
command exits 0, every service answers, and Ctrl-C stops each one that
serves in a terminal with exit 0.
"""

import os
import shutil

from oslotest import base
import testscenarios

from reserveapi_testing import install_guide
from tests.functional import base as functional_base

load_tests = testscenarios.load_tests_apply_scenarios

TOOLS = ('unshare', 'nsenter', 'runuser', 'useradd', 'git')


def variants(page):
    return sorted((name, {'tags': tags}) for name, tags
                  in install_guide.VARIANTS[page].items())


class GuideTestCase(base.BaseTestCase):

    page = None

    def setUp(self):
        super().setUp()
        missing = [tool for tool in TOOLS if shutil.which(tool) is None]
        self.assertEqual([], missing, 'tools the test needs')
        self.assertEqual(0, os.geteuid(), 'the test makes fresh hosts: '
                         'it needs root')
        # Made first, dropped last: after the services stopped.
        self.databases = databases = self.useFixture(install_guide.Databases(
            install_guide.created_databases(self.page, self.tags)))
        if databases.unavailable:
            message = ('This machine\'s database server is not usable (%s): '
                       'tools/ensure-test-databases.sh starts it.'
                       % databases.unavailable)
            if os.environ.get(functional_base.REQUIRE_BACKENDS_ENV):
                self.fail(message)
            self.skipTest(message)

    def follow(self, machine):
        done = machine.follow(self.page, self.tags)
        self.assertEqual([step for step in install_guide.steps(self.page)
                          if step.runs_in(self.tags)], done)
        # The service really ran on the database the variant made.
        for database, tables in self.databases.tables().items():
            self.assertGreater(tables, 10, database)
        # The files the guide writes hold no name the service ignores.
        self.assertEqual([], machine.logged(', so it is ignored'))


class TestEvaluation(GuideTestCase):

    page = 'evaluation.rst'
    scenarios = variants(page)

    def test_as_written(self):
        self.follow(self.useFixture(install_guide.Machine(
            checkout_owner=install_guide.USER)))


class TestProduction(GuideTestCase):

    page = 'production.rst'
    scenarios = variants(page)

    def test_as_written(self):
        cloud = self.useFixture(install_guide.Cloud())
        machine = self.useFixture(install_guide.Machine(
            substitutions=cloud.substitutions))
        # The administrator's credentials, as Keystone's install left them.
        machine.write_file('$', '~/admin-openrc', cloud.admin_openrc)
        self.follow(machine)
