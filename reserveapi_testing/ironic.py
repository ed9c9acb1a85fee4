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

"""The real Ironic service, from the ``ironic`` package, as a subprocess.

Ironic cannot share a process with Nova (both register the same config
options), so the fixture runs Ironic's all-in-one ``ironic`` command (API
and conductor in one service, ``rpc_transport = none``, so no message bus
and no JSON-RPC listener) on 127.0.0.1, on a SQLite file, with the
``fake-hardware`` type and ``noauth``. It never imports Ironic: any test
environment that has the ``ironic`` package installed can use it.

Starting Ironic takes a few seconds, so a test process starts one and its
tests share it::

    ironic = shared_ironic()      # in setUp; started on first use
    ironic.reset()                # forget the previous test's nodes
    node = ironic.create_node(name='n1', resource_class='gold')
    ironic.make_available([node])
    uuids = ironic.seed_nodes(200, traits=['CUSTOM_GPU'])

Point clients at ``endpoint`` with ``auth_type = none``. The helpers speak
plain HTTP (``requests``) rather than python-ironicclient: tests need the
exact status of each answer (a 409 must stay a 409, not five retries two
seconds apart), and the fixture should not depend on the client that the
code under test uses.

Ironic 39 facts found with this fixture (``tests/ironic`` proves them):

* ``shard`` (field and ``?shard=`` filter) needs microversion 1.82 (1.81
  answers 406); ``fields=`` needs 1.8, ``traits`` in it 1.37.
* ``GET /v1/nodes?fields=`` refuses ``created_at`` and ``updated_at``
  (400) and fails with 500 on ``allocation_uuid``, ``chassis_uuid``,
  ``conductor``, ``links``, ``ports``, ``portgroups``, ``states`` and
  ``volume``; ``fields`` with ``detail=True`` is a 400. Timestamps come
  only with ``detail=True``.
* A node created through the API has ``updated_at`` null until its first
  change. ``sort_key=updated_at&sort_dir=desc`` lists those last (SQLite
  sorts null lowest) but pages after the first never include them: the
  ``marker`` comparison drops nulls. The ``next`` link keeps sort, detail
  and limit, with the last node's UUID as ``marker``. Adding or removing
  traits bumps ``updated_at``.
* Setting ``instance_uuid`` is accepted in any stable state (``enroll``,
  ``manageable`` too); a different ``instance_uuid`` on a claimed node is
  409 "is associated with instance"; the same one again is 200. While a
  node is ``cleaning`` (or ``deleting``) any PATCH is 409 "can not be
  updated while a state transition is in progress".
* Fake power keeps the last state given: nodes start with power ``None``
  and neither a fake deploy nor a teardown changes it. A fake deploy
  takes any ``image_source`` (a Glance-style UUID too) and downloads
  nothing, but refuses (400) ``instance_info`` traits the node lacks.
* A teardown clears ``instance_uuid`` and ``instance_info`` before
  cleaning starts. An ``available`` node may be deleted
  (``[conductor] allow_deleting_available_nodes`` defaults to true); a
  node with an ``instance_uuid`` may not (409). ``retired`` cannot be set
  on an ``available`` node (409).
* With noauth, a POST with ``owner`` is a 400 (a project-scoped admin
  may only own nodes for its own project); a PATCH sets it.
* The API refuses to create (and to update) a node whose
  ``conductor_group`` no conductor serves (400, "No valid host"); seeded
  rows in another group are listed but cannot be changed.
"""

import atexit
import configparser
import ctypes
import ctypes.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import fixtures
import requests
from testtools import content

from reserveapi_testing import ironic_db
from reserveapi_testing import loopback

API_VERSION = '1.115'
"""Ironic 39's newest microversion, which every helper speaks."""

SHARD_VERSION = '1.82'
"""The first microversion that knows ``shard``."""

FIELDS_VERSION = '1.8'
"""The first microversion that accepts ``fields=``."""

DRIVER = 'fake-hardware'

FAKE_INTERFACES = {
    'bios': 'fake', 'boot': 'fake', 'console': 'fake', 'deploy': 'fake',
    'firmware': 'fake', 'inspect': 'fake', 'management': 'fake',
    'network': 'noop', 'power': 'fake', 'raid': 'fake', 'rescue': 'fake',
    'storage': 'noop',
    # The fake vendor interface brings fake-hardware's only automated
    # clean step (log_passthrough), which sleeps [fake] vendor_delay.
    'vendor': 'fake',
}

FAKE_IMAGE = 'http://127.0.0.1:9/fake-image.qcow2'
"""An ``image_source`` a fake deploy accepts: it is never downloaded."""

START_TIMEOUT = 60
STOP_TIMEOUT = 15
REQUEST_TIMEOUT = 30
WAIT_INTERVAL = 0.05

# The process's temporary directory, read when this module is imported
# (every importer of shared_ironic does so at the top, before any test
# runs): oslotest points tempfile at a directory that lives only as long as
# one test, and the shared Ironic outlives the test that started it.
_PROCESS_TEMP_ROOT = tempfile.gettempdir()

FAILED_STATES = ('error', 'clean failed', 'deploy failed', 'inspect failed',
                 'rescue failed', 'unrescue failed', 'service failed',
                 'adopt failed')


class IronicFixtureError(Exception):
    """Ironic would not start, or refused a helper: the set-up is wrong."""


def _ident(node):
    return node['uuid'] if isinstance(node, dict) else node


def _command(name):
    """An Ironic console script, from the running interpreter's env first."""
    found = (shutil.which(name, path=os.path.dirname(sys.executable))
             or shutil.which(name))
    if not found:
        raise IronicFixtureError(
            '%s not found: install the ironic package (tox -e ironic)' % name)
    return found


def _parent_death_signal():
    """A preexec_fn that makes the child get SIGTERM when we die.

    Covers the test process being killed outright, when neither cleanups
    nor atexit run. Linux only; elsewhere atexit is all there is.
    """
    libc_name = ctypes.util.find_library('c')
    libc = ctypes.CDLL(libc_name, use_errno=True) if libc_name else None
    if libc is None or not hasattr(libc, 'prctl'):
        return None
    pr_set_pdeathsig = 1
    return lambda: libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


class IronicFixture(fixtures.Fixture):
    """Real Ironic on ``endpoint``; ``stop()``/``start()`` for outages,
    ``freeze()``/``thaw()`` for a hang.

    :param automated_clean: ``[conductor] automated_clean``; a node's own
        ``automated_clean`` field overrides it either way.
    :param clean_seconds: how long automated cleaning of a node lasts
        (``[fake] vendor_delay``), so tests can see a node ``cleaning``.
    :param config: ``{section: {option: value}}`` added to ``ironic.conf``.
    :param temp_root: where its directory goes; by default the temporary
        directory current at set-up, which under oslotest is the test's
        own and lives exactly as long as the fixture.
    """

    def __init__(self, automated_clean=False, clean_seconds=2, config=None,
                 temp_root=None):
        super().__init__()
        self.temp_root = temp_root
        self.automated_clean = automated_clean
        self.clean_seconds = clean_seconds
        self.extra_config = config or {}
        self._process = None
        self._seeder = None
        self.startup_seconds = None

    def _setUp(self):
        self.base_dir = tempfile.mkdtemp(prefix='reserveapi-ironic-',
                                         dir=self.temp_root)
        self.addCleanup(shutil.rmtree, self.base_dir, ignore_errors=True)
        self.port = loopback.free_port()
        self._session = requests.Session()
        self.addCleanup(self._session.close)
        self._write_config()
        dbsync = subprocess.run(
            [_command('ironic-dbsync'), '--config-file', self.config_path,
             'create_schema'],
            capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if dbsync.returncode:
            raise IronicFixtureError('ironic-dbsync failed:\n%s%s' % (
                dbsync.stdout, dbsync.stderr))
        # The data is thrown away: no need to wait for a graceful stop.
        self.addCleanup(self.stop, kill=True)
        self.start()

    @property
    def endpoint(self):
        """Ironic's root, e.g. ``http://127.0.0.1:PORT`` (no ``/v1``)."""
        return 'http://127.0.0.1:%d' % self.port

    @property
    def config_path(self):
        return os.path.join(self.base_dir, 'ironic.conf')

    @property
    def log_path(self):
        """Ironic's own log; ``output_path`` has what it printed."""
        return os.path.join(self.base_dir, 'ironic.log')

    @property
    def output_path(self):
        return os.path.join(self.base_dir, 'ironic.out')

    @property
    def db_path(self):
        return os.path.join(self.base_dir, 'ironic.sqlite')

    @property
    def db_url(self):
        return 'sqlite:///%s' % self.db_path

    @property
    def running(self):
        return self._process is not None

    def _config(self):
        conf = {
            'DEFAULT': {
                'rpc_transport': 'none',
                'auth_strategy': 'noauth',
                'host': 'reserveapi-test-conductor',
                'enabled_hardware_types': DRIVER,
                'state_path': self.base_dir,
                'tempdir': self.base_dir,
                'log_file': self.log_path,
                'use_stderr': False,
                # Ironic waits for free memory before some operations.
                'minimum_memory_warning_only': True,
            },
            'api': {'host_ip': '127.0.0.1', 'port': self.port},
            'database': {'connection': self.db_url,
                         'sqlite_synchronous': False},
            'conductor': {
                'automated_clean': self.automated_clean,
                # Power sync walks every node; fake power has nothing to
                # sync and 10,000 seeded nodes would keep a core busy.
                'sync_power_state_interval': 0,
            },
            'fake': {'vendor_delay': self.clean_seconds},
            'nova': {'send_power_notifications': False},
            'oslo_concurrency': {
                'lock_path': os.path.join(self.base_dir, 'locks')},
        }
        for interface, name in FAKE_INTERFACES.items():
            conf['DEFAULT']['enabled_%s_interfaces' % interface] = name
            conf['DEFAULT']['default_%s_interface' % interface] = name
        for section, options in self.extra_config.items():
            conf.setdefault(section, {}).update(options)
        return conf

    def _write_config(self):
        parser = configparser.ConfigParser(interpolation=None)
        parser.optionxform = str
        for section, options in self._config().items():
            if section != 'DEFAULT':
                parser.add_section(section)
            for option, value in options.items():
                if isinstance(value, bool):
                    value = str(value).lower()
                parser.set(section, option, str(value))
        with open(self.config_path, 'w') as conf_file:
            parser.write(conf_file)

    def start(self):
        """Start Ironic (again) on the same port and database."""
        if self.running:
            return
        started = time.monotonic()
        with open(self.output_path, 'ab') as output:
            self._process = subprocess.Popen(
                [_command('ironic'), '--config-file', self.config_path],
                stdout=output, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
                preexec_fn=_parent_death_signal())
        try:
            self._wait_until_serving()
        except Exception:
            self.stop(kill=True)
            raise
        self.startup_seconds = time.monotonic() - started

    def _wait_until_serving(self):
        """:raises: IronicFixtureError, with Ironic's output."""
        if loopback.wait_until(self._lists_driver, START_TIMEOUT,
                               self._process, interval=WAIT_INTERVAL):
            return
        if self._process.poll() is not None:
            raise IronicFixtureError(
                'ironic exited with %s:\n%s' % (
                    self._process.returncode, self._tail()))
        raise IronicFixtureError(
            'ironic did not serve within %ds:\n%s' % (
                START_TIMEOUT, self._tail()))

    def _lists_driver(self):
        """Whether the API lists fake-hardware: the conductor is up too."""
        try:
            drivers = self._session.get(self.endpoint + '/v1/drivers',
                                        timeout=1)
        except requests.RequestException:
            return False
        return drivers.ok and DRIVER in drivers.text

    def _tail(self, lines=40):
        text = []
        for path in (self.output_path, self.log_path):
            if os.path.exists(path):
                with open(path, errors='replace') as log:
                    text.extend(log.readlines()[-lines:])
        return ''.join(text)

    def stop(self, kill=False):
        """Stop Ironic and every process it forked; clients get refused.

        Gracefully by default (a few seconds); ``kill=True`` is a crash:
        SIGKILL at once. Either way the database keeps what was committed.
        """
        if not self.running:
            return
        group = self._process.pid
        self._signal_group(group, signal.SIGKILL if kill else signal.SIGTERM)
        # A frozen Ironic acts on SIGTERM only once it runs again.
        self._signal_group(group, signal.SIGCONT)
        try:
            self._process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._signal_group(group, signal.SIGKILL)
            self._process.wait()
        # The API worker is a child of the process we waited for.
        self._signal_group(group, signal.SIGKILL)
        self._process = None

    def freeze(self):
        """SIGSTOP Ironic and every process it forked: connections are
        accepted and nothing answers, as when Ironic hangs; ``thaw()``
        resumes it where it stopped."""
        self._signal_group(self._process.pid, signal.SIGSTOP)

    def thaw(self):
        self._signal_group(self._process.pid, signal.SIGCONT)

    @staticmethod
    def _signal_group(group, signum):
        try:
            os.killpg(group, signum)
        except ProcessLookupError:
            pass

    # Logs

    def log_position(self):
        """Where Ironic's log ends now; see ``read_log``."""
        try:
            return os.path.getsize(self.log_path)
        except FileNotFoundError:
            return 0

    def read_log(self, since=0):
        with open(self.log_path, errors='replace') as log:
            log.seek(since)
            return log.read()

    def attach_log_on_failure(self, test):
        """Add what Ironic logs during ``test`` to its details if it fails."""
        since = self.log_position()
        test.addOnException(lambda exc_info: test.addDetail(
            'ironic.log', content.text_content(self.read_log(since))))

    # REST helpers

    def request(self, method, path, json=None, params=None, expected=(200,),
                microversion=API_VERSION):
        """One API call; raise unless the status is in ``expected``.

        ``expected=None`` returns any answer, for tests about errors.
        """
        def send():
            return self._session.request(
                method, self.endpoint + path, json=json, params=params,
                headers={'X-OpenStack-Ironic-API-Version': microversion},
                timeout=REQUEST_TIMEOUT)

        try:
            response = send()
        except requests.ConnectionError:
            if method != 'GET':
                raise
            # A kept-alive connection to an Ironic that restarted since.
            response = send()
        if expected is not None and response.status_code not in expected:
            raise IronicFixtureError('%s %s answered %d: %s' % (
                method, path, response.status_code, response.text))
        return response

    def get_node(self, node, **params):
        return self.request(
            'GET', '/v1/nodes/%s' % _ident(node), params=params).json()

    def list_nodes(self, **params):
        """Every node, following ``next`` links; ``params`` as Ironic's."""
        nodes = []
        url = '/v1/nodes'
        while url:
            page = self.request('GET', url, params=params).json()
            nodes.extend(page['nodes'])
            url = page.get('next', '').removeprefix(self.endpoint)
            params = None  # the next link carries them
        return nodes

    def create_node(self, traits=None, owner=None, **fields):
        """A node in ``enroll`` through the API; any POST field goes.

        ``fields`` default to ``driver=fake-hardware`` and a resource
        class and properties like a seeded node's. ``owner`` is PATCHed
        after creation: with noauth, Ironic refuses it in the POST.
        """
        body = {'driver': DRIVER, 'resource_class': 'baremetal',
                'properties': dict(ironic_db.DEFAULT_PROPERTIES)}
        body.update(fields)
        node = self.request('POST', '/v1/nodes', json=body,
                            expected=(201,)).json()
        if owner is not None:
            self.update_node(node, owner=owner)
        if traits:
            self.set_traits(node, traits)
        if owner is not None or traits:
            node = self.get_node(node)
        return node

    def update_node(self, node, expected=(200,), **fields):
        """PATCH ``fields`` (``None`` removes one); return the answer."""
        operations = [
            {'op': 'remove', 'path': '/%s' % field} if value is None
            else {'op': 'add', 'path': '/%s' % field, 'value': value}
            for field, value in fields.items()]
        return self.request('PATCH', '/v1/nodes/%s' % _ident(node),
                            json=operations, expected=expected)

    def set_traits(self, node, traits):
        """Replace a node's traits (this bumps its ``updated_at``)."""
        self.request('PUT', '/v1/nodes/%s/traits' % _ident(node),
                     json={'traits': list(traits)}, expected=(204,))

    def set_provision_state(self, node, target, **body):
        self.request('PUT', '/v1/nodes/%s/states/provision' % _ident(node),
                     json=dict(body, target=target), expected=(202,))

    def set_power_state(self, node, target):
        self.request('PUT', '/v1/nodes/%s/states/power' % _ident(node),
                     json={'target': target}, expected=(202,))

    def wait_for(self, nodes, provision_state=None, power_state=None,
                 settled=True, timeout=60):
        """Until every node is in the states given.

        ``settled`` also waits for no target state to be pending; without
        it, a transient state (``cleaning``) can be caught. Raises at once
        if a node lands in a failed state.
        """
        pending = {_ident(node) for node in nodes}
        deadline = time.monotonic() + timeout
        while pending:
            for ident in sorted(pending):
                node = self.get_node(ident, fields=(
                    'uuid,provision_state,target_provision_state,'
                    'power_state,target_power_state,last_error'))
                if node['provision_state'] in FAILED_STATES:
                    raise IronicFixtureError('node %s is %s: %s' % (
                        ident, node['provision_state'], node['last_error']))
                if ((not settled or (
                        node['target_provision_state'] is None
                        and node['target_power_state'] is None))
                        and provision_state in (None, node['provision_state'])
                        and power_state in (None, node['power_state'])):
                    pending.discard(ident)
            if pending and time.monotonic() > deadline:
                raise IronicFixtureError('still waiting for %s: %s' % (
                    provision_state or power_state, sorted(pending)))
            if pending:
                time.sleep(WAIT_INTERVAL)

    def make_available(self, nodes, timeout=60):
        """Manage and provide enrolled (or manageable) nodes, power off.

        Fake power keeps only the last state given, so a provided node's
        power is still ``None`` until it is powered off.
        """
        idents = [_ident(node) for node in nodes]
        enrolled = [ident for ident in idents
                    if self.get_node(ident)['provision_state'] == 'enroll']
        for ident in enrolled:
            self.set_provision_state(ident, 'manage')
        self.wait_for(enrolled, provision_state='manageable', timeout=timeout)
        for ident in idents:
            self.set_provision_state(ident, 'provide')
        self.wait_for(idents, provision_state='available', timeout=timeout)
        for ident in idents:
            self.set_power_state(ident, 'power off')
        self.wait_for(idents, power_state='power off', timeout=timeout)

    def deploy(self, node, instance_uuid, timeout=60):
        """Claim an available node for ``instance_uuid`` and deploy it."""
        self.update_node(node, instance_uuid=instance_uuid,
                         instance_info={'image_source': FAKE_IMAGE})
        self.set_provision_state(node, 'active')
        self.wait_for([node], provision_state='active', timeout=timeout)

    # Straight to the database

    def seed_nodes(self, count, **template):
        """Insert ``count`` nodes into Ironic's database; return UUIDs.

        ``template`` maps a ``nodes`` column or ``traits`` to a value, or
        to a callable taking the node's index (0..count-1), e.g.
        ``traits=lambda i: ['CUSTOM_RACK_%d' % (i % 4)]``. Unless given:
        ``available``, ``power off``, resource class ``baremetal``,
        ``ironic_db.DEFAULT_PROPERTIES``, ``updated_at`` now, a unique
        name. JSON columns (``properties``, ``instance_info``, ``extra``...)
        take dicts, timestamps take datetimes.
        """
        if self._seeder is None:
            self._seeder = self._prototype_seeder()
        return self._seeder.seed(count, template)

    def _prototype_seeder(self):
        """Let Ironic create one node with a trait, copy its rows' shape."""
        node = self.create_node(traits=['CUSTOM_SEED_PROTOTYPE'])
        prototype, trait_version = ironic_db.read_prototype(
            self.db_path, node['uuid'])
        self.request('DELETE', '/v1/nodes/%s' % node['uuid'],
                     expected=(204,))
        return ironic_db.NodeSeeder(self.db_path, prototype, trait_version)

    def reset(self, settle_timeout=30):
        """Delete every node at once, straight from the database.

        Waits up to ``settle_timeout`` seconds for Ironic to finish work in
        progress, and Ironic keeps running. If a node was still busy, its
        conductor thread would drop the node's lock by row id, which
        SQLite hands out again to the next node: Ironic is then restarted
        (killed) so that no such thread survives. Returns how many nodes
        were still busy.
        """
        busy = ironic_db.wipe_nodes(self.db_path, settle_timeout)
        if busy:
            self.stop(kill=True)
            self.start()
        return busy


_shared = None


def shared_ironic():
    """This test process's Ironic: started on first use, running.

    Stopped when the process exits (a killed process takes Ironic with it
    through the parent-death signal). A test that stops it need not start
    it again: the next caller gets it running.
    """
    global _shared
    if _shared is None:
        ironic = IronicFixture(temp_root=_PROCESS_TEMP_ROOT)
        ironic.setUp()
        atexit.register(ironic.cleanUp)
        _shared = ironic
    _shared.start()
    return _shared
