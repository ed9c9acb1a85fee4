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

"""What the install guide ships: the systemd units' commands run as
written (the virtualenv's bin directory in place of /opt/reserveapi/bin,
a free port in place of 6390), on a deployment of our own.
"""

import configparser
import os
import pathlib
import shlex
import signal
import subprocess
import time

from oslotest import base

from reserveapi_testing import deployment
from reserveapi_testing import loopback

ROOT = pathlib.Path(__file__).resolve().parents[2]
UNITS = ROOT / 'etc' / 'systemd'
INSTALLED_BIN = '/opt/reserveapi/bin/'


def unit(name):
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    parser.read(UNITS / name)
    return parser['Service']


def command(service, **replace):
    """ExecStart as a list, run from this virtualenv."""
    args = shlex.split(service['ExecStart'])
    args[0] = deployment.script(args[0][len(INSTALLED_BIN):])
    return [replace.get(arg, arg) for arg in args]


class TestSystemdUnits(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.deployment = self.useFixture(deployment.Deployment())
        self.deployment.migrate()

    def test_the_api_unit_serves_the_wsgi_application(self):
        service = unit('reserveapi-api.service')
        self.assertTrue(service['ExecStart'].startswith(INSTALLED_BIN))
        self.assertEqual(
            'RESERVEAPI_CONFIG_FILE=/etc/reserveapi/reserveapi.conf',
            service['Environment'])
        self.assertEqual('reserveapi', service['User'])
        args = command(service, **{
            '0.0.0.0:6390': '127.0.0.1:%d' % self.deployment.port,
            '4': '1'})
        self.assertIn('reserveapi.wsgi.api:application', args)
        log_path = os.path.join(self.deployment.path, 'gunicorn.log')
        with open(log_path, 'w') as log:
            server = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT,
                env=dict(os.environ, RESERVEAPI_CONFIG_FILE=(
                    self.deployment.config_file)))
        self.addCleanup(deployment.stop, server)
        self.assertTrue(loopback.wait_until(
            lambda: loopback.answers(self.deployment.endpoint + '/v1'),
            deployment.START_TIMEOUT, server, interval=0.2),
            pathlib.Path(log_path).read_text()[-2000:])
        server.send_signal(signal.SIGTERM)
        self.assertEqual(0, server.wait(timeout=30))

    def test_the_worker_unit_runs_the_worker(self):
        service = unit('reserveapi-worker.service')
        self.assertEqual('reserveapi', service['User'])
        args = command(service, **{
            '/etc/reserveapi/reserveapi.conf': self.deployment.config_file})
        self.assertEqual(['--config-file', self.deployment.config_file],
                         args[1:])
        process = subprocess.run(
            args + ['--once'], capture_output=True, text=True, check=False,
            timeout=deployment.COMMAND_TIMEOUT)
        self.assertEqual(0, process.returncode, process.stderr)

    def test_the_worker_stops_when_its_unit_is_stopped(self):
        # systemd stops a unit with SIGTERM: the worker lets the job under
        # way finish (its leases dropped) and exits 0.
        args = command(unit('reserveapi-worker.service'), **{
            '/etc/reserveapi/reserveapi.conf': self.deployment.config_file})
        log_path = pathlib.Path(self.deployment.path, 'worker.log')
        with open(log_path, 'w') as log:
            worker = subprocess.Popen(args + ['--debug'], stdout=log,
                                      stderr=subprocess.STDOUT)
        self.addCleanup(deployment.stop, worker)
        deadline = time.monotonic() + deployment.START_TIMEOUT
        while 'Finished mirror-retry' not in log_path.read_text():
            self.assertIsNone(worker.poll(), log_path.read_text()[-2000:])
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.2)

        worker.send_signal(signal.SIGTERM)

        self.assertEqual(0, worker.wait(timeout=30))
        written = log_path.read_text()
        self.assertIn('Stopping (SIGTERM): letting the job under way '
                      'finish.', written)
        self.assertIn('Stopped.', written)
