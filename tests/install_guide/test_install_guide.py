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
serves in a terminal with exit 0. The containers path too, here rather
than in tests/containers: it is a page of the guide like the others,
and needs the same fresh host; it shares only podman's image store with
this machine, and runs once podman is installed (.ci/run installs it
first).
"""

import os
import shutil
import subprocess

from oslotest import base
import testscenarios
from testtools import content

from reserveapi_testing import install_guide
from tests.functional import base as functional_base

load_tests = testscenarios.load_tests_apply_scenarios

TOOLS = ('unshare', 'nsenter', 'runuser', 'useradd', 'git')
PODMAN_TOOLS = ('podman', 'mmdebstrap', 'runc')
CONTAINER_NAMES = ('reserveapi-api', 'reserveapi-worker')
"""The containers the containers page starts, by the names it gives."""


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


class TestContainers(GuideTestCase):
    """doc/source/install/containers.rst: the image built with the
    documented command and run by podman, its one-off schema and
    inventory steps, the API and the worker, on this machine's
    PostgreSQL."""

    page = install_guide.CONTAINERS_PAGE
    scenarios = variants(page)

    def setUp(self):
        # The guide's apt-get would write /usr, which the fresh host
        # shares with this machine: the packages must be there already.
        missing = [tool for tool in PODMAN_TOOLS if shutil.which(tool) is None]
        if missing:
            message = ('%s not installed: apt-get install podman mmdebstrap '
                       'runc first' % ', '.join(missing))
            if os.environ.get(functional_base.REQUIRE_BACKENDS_ENV):
                self.fail(message)
            self.skipTest(message)
        super().setUp()
        taken = [name for name in CONTAINER_NAMES if subprocess.run(
            ['podman', 'container', 'exists', name],
            check=False).returncode == 0]
        self.assertEqual([], taken, 'containers of that name exist on this '
                         'machine: the guide would start its own')

    def test_every_block_runs_or_says_why_not(self):
        # The other pages' version of this is tests/unit's.
        steps = install_guide.steps(self.page)
        self.assertEqual([], [str(step) for step in steps if not any(
            step.runs_in(tags)
            for tags in install_guide.VARIANTS[self.page].values())])
        self.assertEqual({'console', 'ini', 'wait'},
                         {step.kind for step in steps})

    def test_as_written(self):
        machine = self.useFixture(install_guide.Machine(
            shared=install_guide.PODMAN_STORE))
        self.addCleanup(self.remove_containers, machine)
        self.follow(machine)

    def remove_containers(self, machine):
        """What a failed step left, its log kept; inside the fresh host,
        where the containers' mounts are."""
        conf = os.path.join(machine.checkout, 'tools', 'containers',
                            'containers.conf')
        for name in CONTAINER_NAMES:
            code, output = machine.run('#', 'CONTAINERS_CONF=%s podman logs %s'
                                       % (conf, name))
            if code == 0:
                self.addDetail(name, content.text_content(output[-20000:]))
        machine.run('#', 'CONTAINERS_CONF=%s podman rm --force --ignore %s'
                    % (conf, ' '.join(CONTAINER_NAMES)))
