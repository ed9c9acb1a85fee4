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

import http.client
import json
import os
import subprocess
import sys

import fixtures
from oslo_config import fixture as config_fixture
from oslotest import base
from testtools import content

from reserveapi import conf
from reserveapi.cmd import worker
from reserveapi.inventory import sources as inventory_sources
from reserveapi_testing import deployment
from reserveapi_testing import inventory
from reserveapi_testing import ironic as ironic_fixture
from reserveapi_testing import loopback
from tests.functional import base as functional_base


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
"""Seeded node fields that the example request spec
(reserveapi_testing/examples.py) matches."""


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
        inventory_sources.reset_source()
        self.addCleanup(inventory_sources.reset_source)

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


START_TIMEOUT = 60
REQUEST_TIMEOUT = 60


class IronicServiceTestCase(IronicTestCase):
    """reserveapi as operators run it: its console scripts and gunicorn,
    in processes of their own, on a SQLite file, inventory from the
    shared real Ironic.
    """

    def setUp(self):
        super().setUp()
        self.workdir = self.useFixture(fixtures.TempDir()).path
        self.config_file = os.path.join(self.workdir, 'reserveapi.conf')
        with open(self.config_file, 'w') as config:
            config.write(
                '[DEFAULT]\nstate_path = %(dir)s\n'
                '[api]\nauth_strategy = noauth\n'
                '[database]\nconnection = sqlite:///%(dir)s/api.sqlite\n'
                '[inventory]\nsource = ironic\n'
                '[ironic]\nauth_type = none\nendpoint_override = %(url)s\n'
                'api_max_retries = 0\n'
                % {'dir': self.workdir, 'url': self.ironic.endpoint})
        self.run_command('reserveapi-dbsync', 'upgrade')

    def run_command(self, name, *argv, expected=0):
        """Run a console script; what it printed (stdout, then stderr),
        once it exited ``expected``."""
        result = subprocess.run(
            [deployment.script(name), '--config-file', self.config_file]
            + list(argv),
            capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL)
        self.assertEqual(expected, result.returncode,
                         result.stdout + result.stderr)
        return result.stdout + result.stderr

    def start_command(self, name, *argv):
        """Start a console script; see ``finish_command``."""
        return subprocess.Popen(
            [deployment.script(name), '--config-file', self.config_file]
            + list(argv),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            stdin=subprocess.DEVNULL)

    def finish_command(self, process, expected=0):
        """What a started console script printed, once it exited
        ``expected``."""
        output, _ = process.communicate(timeout=120)
        self.assertEqual(expected, process.returncode, output)
        return output

    def start_api(self, workers=2, threads=4):
        self.port = loopback.free_port()
        log = open(os.path.join(self.workdir, 'gunicorn.log'), 'w')
        self.addCleanup(log.close)
        self.addOnException(lambda exc_info: self.addDetail(
            'gunicorn.log', content.text_content(open(log.name).read())))
        server = subprocess.Popen(
            [sys.executable, '-m', 'gunicorn', '--workers', str(workers),
             '--threads', str(threads), '--bind', '127.0.0.1:%d' % self.port,
             '--timeout', str(REQUEST_TIMEOUT),
             'reserveapi.wsgi.api:application'],
            env=dict(os.environ, RESERVEAPI_CONFIG_FILE=self.config_file),
            stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(deployment.stop, server)
        if loopback.wait_until(
                lambda: loopback.answers('http://127.0.0.1:%d/v1' % self.port),
                START_TIMEOUT, server, interval=0.2):
            return
        with open(log.name) as output:
            self.fail('gunicorn did not serve: %s' % output.read()[-2000:])

    def call(self, method, path, body=None, headers=None):
        """One request to the API: ``(status, parsed body)``."""
        connection = http.client.HTTPConnection('127.0.0.1', self.port,
                                                timeout=REQUEST_TIMEOUT)
        try:
            connection.request(
                method, path, body=json.dumps(body) if body else None,
                headers=dict({'Content-Type': 'application/json'},
                             **(headers or {})))
            response = connection.getresponse()
            return response.status, json.loads(response.read() or b'null')
        finally:
            connection.close()
