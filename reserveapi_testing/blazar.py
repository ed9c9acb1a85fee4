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

"""A real Blazar beside the reservation service, for tests.

``BlazarFixture`` runs Blazar as an operator would, from the ``blazar``
package: ``blazar-db-manage upgrade head`` on a MariaDB database of its
own (Blazar's migrations fail on PostgreSQL and SQLite), then
blazar-manager and blazar-api as subprocesses of a generated
blazar.conf, on the real RabbitMQ and a ``KeystoneFixture``, with our
plugin as its only resource plugin. blazar-api is Blazar's WSGI
application (``blazar.wsgi.api``) under gunicorn: Blazar 18's own
``blazar-api`` command starts its server in a daemon thread and returns,
so the process exits at once.

``HoldService`` is the reservation service beside it: its console
scripts on a SQLite file, behind the same Keystone, its inventory a node
file.

Each fixture's names are its own (database, RPC topic, Keystone user),
so that other test runs on the same MariaDB and RabbitMQ do not meet it.
"""

import importlib.metadata
import os
import secrets
import subprocess
import sys

import fixtures
import requests
import sqlalchemy

from reserveapi_testing import dbservers
from reserveapi_testing import inventory
from reserveapi_testing import keystone as keystone_fixture
from reserveapi_testing import loopback
from reserveapi_testing.nova import reserveapi_service

PLUGIN = 'baremetal.hold.plugin'
PLUGIN_NAMESPACE = 'blazar.resource.plugins'
BLAZAR_SERVICE_TYPE = 'reservation'
RESERVEAPI_SERVICE_TYPE = 'baremetal-reservation'
MYSQL_SERVER_URL = os.environ.get('RESERVEAPI_TEST_BLAZAR_MYSQL_URL',
                                  'mysql+pymysql://root@127.0.0.1:3306/')
TRANSPORT_URL = os.environ.get('RESERVEAPI_TEST_TRANSPORT_URL',
                               'rabbit://guest:guest@127.0.0.1:5672/')
BLAZAR_USER = 'blazar'
START_TIMEOUT = 90
STOP_TIMEOUT = 15
REQUEST_TIMEOUT = 30


class BlazarError(Exception):
    """Blazar could not be set up, or did not start."""


def _command(name):
    path = os.path.join(os.path.dirname(sys.executable), name)
    if not os.path.exists(path):
        raise BlazarError('%s not found: install the blazar package (tox -e '
                          'blazar does).' % name)
    return path


def _ini(sections):
    """Config file text of ``{section: {option: value}}``."""
    lines = []
    for section, options in sections.items():
        lines.append('[%s]' % section)
        lines.extend('%s = %s' % item for item in options.items())
    return '\n'.join(lines + [''])


def check_plugin_installed():
    """The plugin's entry point, as blazar-manager looks it up; without
    it Blazar refuses to start ("Invalid plugin names")."""
    found = importlib.metadata.entry_points(group=PLUGIN_NAMESPACE,
                                            name=PLUGIN)
    if not found:
        raise BlazarError(
            'No %s entry point named %s in this environment: the package '
            'metadata of reserveapi must declare it (pyproject.toml, '
            '[project.entry-points."%s"]), then tox -r -e blazar.'
            % (PLUGIN_NAMESPACE, PLUGIN, PLUGIN_NAMESPACE))
    return found


class MariaDBDatabase(fixtures.Fixture):
    """A database of its own on the machine's MariaDB, dropped after."""

    def __init__(self, server_url=MYSQL_SERVER_URL, prefix='blazar_test_'):
        super().__init__()
        self.server_url = server_url
        self.name = prefix + secrets.token_hex(6)

    def _setUp(self):
        engine = sqlalchemy.create_engine(self.server_url)
        self.addCleanup(engine.dispose)
        try:
            with engine.connect() as connection:
                connection.exec_driver_sql(
                    'CREATE DATABASE `%s` CHARACTER SET utf8mb4' % self.name)
        except sqlalchemy.exc.OperationalError as exc:
            raise BlazarError('MariaDB at %s: %s' % (self.server_url, exc))
        self.addCleanup(self._drop, engine)

    def _drop(self, engine):
        with engine.connect() as connection:
            connection.exec_driver_sql('DROP DATABASE IF EXISTS `%s`'
                                       % self.name)

    @property
    def url(self):
        return self.server_url.rstrip('/') + '/' + self.name


class _Process(fixtures.Fixture):
    """One service process, its output in ``log_path``; stopped (its
    whole session) at cleanup."""

    def __init__(self, name, command, log_path, env=None):
        super().__init__()
        self.name = name
        self.command = command
        self.log_path = log_path
        self.env = env

    def _setUp(self):
        self._output = open(self.log_path, 'ab')
        self.addCleanup(self._output.close)
        self.process = subprocess.Popen(
            self.command, stdout=self._output, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
            env=dict(os.environ, **(self.env or {})))
        self.addCleanup(self._stop)

    def _stop(self):
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class HoldService(reserveapi_service.ReserveapiService):
    """The reservation service at ``endpoint`` behind ``keystone``
    (keystonemiddleware, real tokens), its inventory ``nodes`` (as
    ``reserveapi_testing.inventory.node`` builds them), synced at start.
    """

    def __init__(self, keystone, nodes, sections=None):
        super().__init__(ironic=None, sections=sections)
        self.keystone = keystone
        self.nodes = list(nodes)

    def _setUp(self):
        super()._setUp()
        self.sync_inventory()

    def _write_config(self):
        keystone = self.keystone
        sections = {
            'DEFAULT': {'state_path': self.base_dir,
                        'log_file': os.path.join(self.base_dir, 'api.log')},
            'api': {'host_ip': '127.0.0.1', 'port': self.port,
                    'auth_strategy': 'keystone'},
            'database': {'connection': 'sqlite:///%s' % os.path.join(
                self.base_dir, 'reserveapi.db')},
            'inventory': {'source': 'file', 'file': inventory.write(
                self.base_dir, self.nodes)},
            # No Placement here: aggregate writes are stored and wait.
            'mirror': {'inline_timeout': 0},
            'placement': {'auth_type': 'none',
                          'endpoint_override': 'http://127.0.0.1:9'},
            'keystone_authtoken': keystone.authtoken_options(
                RESERVEAPI_SERVICE_TYPE),
        }
        for section, options in self.sections.items():
            sections.setdefault(section, {}).update(options)
        with open(self.config_path, 'w') as stream:
            stream.write(_ini(sections))

    def log_tail(self, size=4000):
        return dbservers.tail(os.path.join(self.base_dir, 'api.log'), size)


class BlazarFixture(fixtures.Fixture):
    """Blazar's API at ``url`` (``endpoint`` is its ``/v1``) and its
    manager, with ``[manager] plugins`` our plugin and blazar.conf's
    ``[reserveapi]`` pointed at ``service`` (a ``HoldService``) through
    Keystone's catalog, as an operator configures it.

    Blazar acts in Keystone as its own user, ``blazar``, with the admin
    role in the service project (trusts, token validation, and our
    service's holds). ``blazar_conf``: extra blazar.conf options,
    ``{section: {option: value}}``.
    """

    def __init__(self, keystone, service, blazar_conf=None,
                 root_dir=None):
        super().__init__()
        self.keystone = keystone
        self.service = service
        self.blazar_conf = blazar_conf or {}
        self.root_dir = root_dir

    def _setUp(self):
        check_plugin_installed()
        self.path = self.useFixture(fixtures.TempDir(self.root_dir)).path
        self.database = self.useFixture(MariaDBDatabase())
        self.password = secrets.token_urlsafe(16)
        self._create_user()
        self._register(RESERVEAPI_SERVICE_TYPE, 'reserveapi',
                       self.service.endpoint)
        self.port = loopback.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.endpoint = self.url + '/v1'
        # A topic and an exchange of its own on the shared broker; the
        # exchange goes when its last queue does.
        self.rpc_topic = 'blazar-manager-test-%s' % secrets.token_hex(6)
        self.exchange = 'blazar-test-%s' % secrets.token_hex(6)
        manager_conf = self._write_config('manager')
        api_conf = self._write_config('api')
        self._run(_command('blazar-db-manage'), '--config-file',
                  manager_conf, 'upgrade', 'head')
        self.manager = self.useFixture(_Process(
            'blazar-manager', [_command('blazar-manager'), '--config-file',
                               manager_conf],
            os.path.join(self.path, 'blazar-manager.out')))
        self.api = self.useFixture(_Process(
            'blazar-api', [_command('gunicorn'), '--bind',
                           '127.0.0.1:%d' % self.port, '--workers', '1',
                           '--timeout', '120', '--no-control-socket',
                           'blazar.wsgi.api:application'],
            os.path.join(self.path, 'blazar-api.out'),
            env={'OS_BLAZAR_CONFIG_DIR': os.path.dirname(api_conf)}))
        self._register(BLAZAR_SERVICE_TYPE, 'blazar', self.endpoint)
        self._wait_ready()

    def _create_user(self):
        keystone = self.keystone
        user = keystone.api('POST', '/users', {'user': {
            'name': BLAZAR_USER, 'domain_id': keystone_fixture.DEFAULT_DOMAIN,
            'password': self.password}})['user']
        keystone.issued.append(self.password)
        self.user_id = user['id']
        keystone.api('PUT', '/projects/%s/users/%s/roles/%s' % (
            keystone.project_ids['service'], self.user_id,
            keystone.role_ids['admin']))

    def _register(self, service_type, name, url):
        """A service and its public endpoint in Keystone's catalog."""
        service = self.keystone.api('POST', '/services', {'service': {
            'type': service_type, 'name': name}})['service']
        self.keystone.api('POST', '/endpoints', {'endpoint': {
            'service_id': service['id'], 'interface': 'public', 'url': url,
            'region_id': keystone_fixture.REGION}})

    def _credentials(self):
        return {
            'auth_url': self.keystone.auth_url,
            'username': BLAZAR_USER,
            'password': self.password,
            'user_domain_name': 'Default',
            'project_name': 'service',
            'project_domain_name': 'Default',
        }

    def _write_config(self, role):
        """blazar.conf in a directory of its own (blazar-api reads
        ``$OS_BLAZAR_CONFIG_DIR/blazar.conf``), logging to
        ``blazar-ROLE.log``."""
        keystone_port = self.keystone.url.rsplit(':', 1)[1]
        sections = {
            'DEFAULT': {
                'debug': 'true',
                'log_file': os.path.join(self.path, 'blazar-%s.log' % role),
                'host': '127.0.0.1',
                'transport_url': TRANSPORT_URL,
                'control_exchange': self.exchange,
                'os_auth_protocol': 'http',
                'os_auth_host': '127.0.0.1',
                'os_auth_port': keystone_port,
                'os_auth_prefix': '',
                'os_admin_username': BLAZAR_USER,
                'os_admin_password': self.password,
                'os_admin_project_name': 'service',
                'os_admin_user_domain_name': 'Default',
                'os_admin_project_domain_name': 'Default',
                'os_region_name': keystone_fixture.REGION,
                'endpoint_type': 'public',
            },
            'manager': {'plugins': PLUGIN, 'rpc_topic': self.rpc_topic},
            'database': {'connection': self.database.url},
            'keystone_authtoken': dict(
                self._credentials(), auth_type='password',
                www_authenticate_uri=self.keystone.auth_url,
                region_name=keystone_fixture.REGION, interface='public'),
            # Nobody listens for Blazar's notifications here: none is
            # left queued on the shared broker.
            'oslo_messaging_notifications': {'driver': 'noop'},
            'oslo_messaging_rabbit': {'amqp_auto_delete': 'true'},
            # How the plugin reaches the reservation service: the
            # catalog, as doc/source/blazar.rst has it.
            'reserveapi': dict(
                self._credentials(), auth_type='password',
                region_name=keystone_fixture.REGION,
                valid_interfaces='public'),
        }
        for section, options in self.blazar_conf.items():
            sections.setdefault(section, {}).update(options)
        directory = os.path.join(self.path, role)
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, 'blazar.conf')
        with open(path, 'w') as stream:
            stream.write(_ini(sections))
        return path

    def _run(self, *command):
        result = subprocess.run(command, capture_output=True, text=True,
                                stdin=subprocess.DEVNULL, check=False)
        if result.returncode:
            raise BlazarError('%s failed (%d):\n%s%s' % (
                ' '.join(command[:1] + command[-2:]), result.returncode,
                result.stdout[-4000:], result.stderr[-4000:]))

    def _wait_ready(self):
        """Up once a lease list, which blazar-api asks blazar-manager
        for over RabbitMQ, answers 200."""
        token = self.keystone.token('admin')
        session = requests.Session()
        self.addCleanup(session.close)

        def ready():
            for process in (self.manager, self.api):
                if process.process.poll() is not None:
                    raise BlazarError('%s exited (%d):\n%s' % (
                        process.name, process.process.returncode,
                        self.logs()))
            try:
                response = session.get(
                    self.endpoint + '/leases', timeout=REQUEST_TIMEOUT,
                    headers={'X-Auth-Token': token})
            except requests.RequestException:
                return False
            return response.status_code == 200

        if not loopback.wait_until(ready, START_TIMEOUT, interval=0.5):
            raise BlazarError('Blazar did not answer within %d s:\n%s'
                              % (START_TIMEOUT, self.logs()))

    def logs(self, size=2000):
        """The end of each Blazar log and output, to say what failed."""
        names = ('blazar-manager.log', 'blazar-api.log',
                 'blazar-manager.out', 'blazar-api.out')
        return '\n'.join('== %s\n%s' % (name, dbservers.tail(
            os.path.join(self.path, name), size)) for name in names
            if os.path.exists(os.path.join(self.path, name)))


class BlazarStack(fixtures.Fixture):
    """A Keystone (``keystone``), the reservation service with ``nodes``
    (``service``) and Blazar with our plugin (``blazar``), in that order.

    ``root_dir``: where their temporary directories go, one that outlives
    a test when the stack is shared by a test process.
    """

    def __init__(self, nodes, root_dir=None):
        super().__init__()
        self.nodes = nodes
        self.root_dir = root_dir

    def _setUp(self):
        self.keystone = self.useFixture(
            keystone_fixture.KeystoneFixture(self.root_dir))
        self.service = self.useFixture(HoldService(self.keystone,
                                                   self.nodes))
        self.blazar = self.useFixture(BlazarFixture(
            self.keystone, self.service, root_dir=self.root_dir))
