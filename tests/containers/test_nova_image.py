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

"""The Containerfile's second target, Nova's side: nova-compute of Nova
34 with our driver. Its first build takes two more minutes, so it runs
only with ``RESERVEAPI_CONTAINERS_NOVA=1``."""

import fcntl
import os

import testtools

from reserveapi_testing import containers
from tools.containers import build

ENABLE = 'RESERVEAPI_CONTAINERS_NOVA'
TAG = build.TARGETS['nova-compute'] + ':checkout'
LOADS = '''
from reserveapi.nova import cmd
cmd.register()
import nova.version
from nova.virt import driver
loaded = driver.load_compute_driver(None, 'reserveapi.IronicDriver')
print(nova.version.version_string(), type(loaded).__module__)
'''


class TestNovaComputeImage(testtools.TestCase):

    def setUp(self):
        super().setUp()
        reason = containers.available()
        if reason:
            self.skipTest(reason)
        if os.environ.get(ENABLE) != '1':
            self.skipTest('%s=1 builds and checks it' % ENABLE)
        with open(containers.LOCK, 'w') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            build.ensure_base(log=lambda message: None)
            build.build_image(tags=[TAG], target='nova-compute',
                              log=lambda message: None)

    def run_in(self, *command, entrypoint=None):
        args = ['run', '--rm', '--label', '%s=1' % containers.LABEL]
        if entrypoint is not None:
            args += ['--entrypoint', entrypoint]
        result = containers.podman(*args, TAG, *command, check=False)
        self.assertEqual(0, result.returncode, result.stderr[-3000:])
        return result.stdout

    def test_nova_loads_our_driver(self):
        self.assertIn('usage: reserveapi-nova-compute',
                      self.run_in('--help'))
        out = self.run_in('-c', LOADS, entrypoint='python')
        self.assertRegex(out, r'^34\.\d+\.\d+ reserveapi\.nova\.driver\n$')
        self.assertEqual('nova\n', self.run_in('-un', entrypoint='id'))
