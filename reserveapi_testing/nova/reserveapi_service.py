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

"""reserveapi as its own process on loopback, for the Nova test process.

Nova and reserveapi both register options on oslo.config's global CONF,
so the service must never be imported here: it runs from its console
scripts (``reserveapi-dbsync``, ``reserveapi-api``, ``reserveapi-manage``)
on a SQLite file, without Keystone.
"""

import os
import shutil
import subprocess
import sys
import tempfile

import fixtures
import requests

from reserveapi_testing import loopback

START_TIMEOUT = 60


def _command(name):
    return os.path.join(os.path.dirname(sys.executable), name)


class ReserveapiService(fixtures.Fixture):
    """The reservation service at ``endpoint``, its inventory the real
    Ironic ``ironic`` (``[inventory] source = ironic``): a reservation
    claims its node there (``[ironic] claim_nodes``), as in production.

    The service never syncs by itself (no worker runs):
    :meth:`sync_inventory` runs ``reserveapi-manage sync-nodes``; call it
    whenever a test has changed Ironic's nodes behind the service's back.

    ``sections`` adds to its config file: ``{"mirror": {"option":
    "value"}}``.
    """

    def __init__(self, ironic, sections=None):
        super().__init__()
        self.ironic = ironic
        self.sections = sections or {}

    def _setUp(self):
        self.base_dir = tempfile.mkdtemp(prefix='reserveapi-service-')
        self.addCleanup(shutil.rmtree, self.base_dir, ignore_errors=True)
        self.port = loopback.free_port()
        self._write_config()
        self._run('reserveapi-dbsync', 'upgrade')
        self._process = None
        self.addCleanup(self.stop)
        self.start()

    @property
    def endpoint(self):
        return 'http://127.0.0.1:%d' % self.port

    @property
    def config_path(self):
        return os.path.join(self.base_dir, 'reserveapi.conf')

    def _write_config(self):
        with open(self.config_path, 'w') as conf:
            conf.write(
                '[DEFAULT]\nstate_path = %(dir)s\nlog_file = %(dir)s/api.log\n'
                '[api]\nhost_ip = 127.0.0.1\nport = %(port)d\n'
                'auth_strategy = noauth\n'
                '[database]\nconnection = sqlite:///%(dir)s/reserveapi.db\n'
                '[inventory]\nsource = ironic\n'
                '[ironic]\nauth_type = none\nendpoint_override = %(ironic)s\n'
                'claim_nodes = true\n'
                % {'dir': self.base_dir, 'port': self.port,
                   'ironic': self.ironic.endpoint})
            for section, options in sorted(self.sections.items()):
                conf.write('[%s]\n' % section)
                for name, value in sorted(options.items()):
                    conf.write('%s = %s\n' % (name, value))

    def configure(self, sections):
        """Add ``sections`` to the config file, for the commands run from
        now on (the API process keeps what it read at start).
        """
        for section, options in sections.items():
            self.sections.setdefault(section, {}).update(options)
        self._write_config()

    def _run(self, command, *args, check=True):
        result = subprocess.run(
            [_command(command), '--config-file', self.config_path, *args],
            capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if check and result.returncode:
            raise RuntimeError('%s %s failed:\n%s%s' % (
                command, ' '.join(args), result.stdout, result.stderr))
        return result

    def manage(self, *args):
        """``reserveapi-manage ARGS``: (exit code, stdout, stderr)."""
        result = self._run('reserveapi-manage', *args, check=False)
        return result.returncode, result.stdout, result.stderr

    def run_worker_once(self):
        """One ``reserveapi-worker --once`` pass over every enabled job."""
        self._run('reserveapi-worker', '--once')

    def sync_inventory(self):
        """Make the service's inventory equal Ironic's nodes, now: a
        complete pass, deletions included."""
        self._run('reserveapi-manage', 'sync-nodes')

    def start(self):
        if self._process is not None:
            return
        self._output = open(os.path.join(self.base_dir, 'api.out'), 'ab')
        self._process = subprocess.Popen(
            [_command('reserveapi-api'), '--config-file', self.config_path],
            stdout=self._output, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
        if not loopback.wait_until(
                lambda: loopback.answers(self.endpoint + '/'), START_TIMEOUT,
                self._process):
            self.stop()
            raise RuntimeError('reserveapi-api did not start')

    def stop(self):
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._output.close()
        self._process = None

    def reservations(self, **filters):
        response = requests.get(self.endpoint + '/v1/reservations',
                                params=dict(filters, limit=1000), timeout=30)
        response.raise_for_status()
        return response.json()['reservations']

    def aggregate(self, aggregate_uuid):
        """``GET /v1/aggregates/{uuid}``, or None for a 404."""
        response = requests.get(
            self.endpoint + '/v1/aggregates/%s' % aggregate_uuid, timeout=30)
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return response.json()

    def node(self, node_uuid):
        """``GET /v1/nodes/{uuid}`` at the microversion that shows
        ``stale_since``."""
        response = requests.get(
            self.endpoint + '/v1/nodes/%s' % node_uuid, timeout=30,
            headers={'OpenStack-API-Version': 'baremetal-reservation 1.1'})
        response.raise_for_status()
        return response.json()

    def capacity(self, version=None):
        """``GET /v1/capacity``'s rows, at ``version`` if given."""
        headers = {}
        if version is not None:
            headers['OpenStack-API-Version'] = (
                'baremetal-reservation %s' % version)
        response = requests.get(self.endpoint + '/v1/capacity', timeout=30,
                                headers=headers)
        response.raise_for_status()
        return response.json()['capacity']
