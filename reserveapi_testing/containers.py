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

"""reserveapi's image (``Containerfile``) run by podman, for the
containers suite (``tests/containers/``).

``image()`` builds the image of this checkout or of an older commit with
``tools.containers.build`` (the base and every layer cached by podman),
one build at a time across the suite's processes. ``Configuration``
writes the directory mounted as ``/etc/reserveapi``; ``Container`` runs
one role detached on the host's network (the databases listen on
loopback) and removes it; ``run_once`` runs a one-off command (a schema
step). Every container is named ``reserveapi-test-...`` and labelled,
so that nothing else on the machine is touched.
"""

import fcntl
import os
import pathlib
import shutil
import tempfile
import textwrap
import time
import uuid

import fixtures

from reserveapi_testing import loopback
from tools.containers import build

ROOT = pathlib.Path(__file__).resolve().parent.parent
NODES = ROOT / 'etc' / 'reserveapi' / 'nodes.yaml'
LOCK = pathlib.Path(tempfile.gettempdir()) / 'reserveapi-containers.lock'
LABEL = 'org.openstack.reserveapi.test'
CHECKOUT_TAG = build.IMAGE + ':checkout'
IMAGE_GID = 64390
"""The group of the image's user, ``reserveapi`` (``Containerfile``)."""
NAME_PREFIX = 'reserveapi-test-'
RUN_TIMEOUT = 300
STOP_TIMEOUT = 25
"""Seconds podman waits after SIGTERM (gunicorn's graceful timeout is
20 s in the image) before it kills."""


class ContainerError(Exception):
    """podman refused, or a container did not become ready."""


def available():
    """Why the suite cannot run here, or None."""
    if os.geteuid() != 0:
        return 'podman with the system storage needs root'
    for tool in ('podman', 'mmdebstrap'):
        if shutil.which(tool) is None:
            return '%s not installed (apt-get install %s)' % (tool, tool)
    return None


def image(revision=None, version=None, by_id=True):
    """The image of ``revision`` (None: this checkout), built now or
    found in podman's layer cache (seconds then): its id, so that every
    container of a test runs the same image even if another test
    rebuilds the tag meanwhile (the work tree changed), or its tag.
    This checkout's is always ``CHECKOUT_TAG``, whatever its version, so
    that a rebuild replaces the last one instead of piling up beside
    it."""
    tags = [CHECKOUT_TAG] if revision is None else None
    with open(LOCK, 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        build.ensure_base(log=lambda message: None)
        tag, _took = build.build_image(revision, version, tags=tags,
                                       log=lambda message: None)
        if not by_id:
            return tag
        return podman('image', 'inspect', '--format', '{{.Id}}',
                      tag).stdout.strip()


def podman(*args, check=True, timeout=RUN_TIMEOUT):
    return build.podman(*args, check=check, timeout=timeout)


def _common_args(config_dir, env=None):
    args = ['--network', 'host', '--label', '%s=1' % LABEL,
            # No systemd here to run the image's HEALTHCHECK on a timer:
            # the tests run it themselves (podman healthcheck run).
            '--health-interval', 'disable',
            '--volume', '%s:/etc/reserveapi:ro' % config_dir]
    for key, value in sorted((env or {}).items()):
        args += ['--env', '%s=%s' % (key, value)]
    return args


def run_once(image_tag, config_dir, *command, env=None,
             timeout=RUN_TIMEOUT):
    """A one-off container of ``image_tag`` running ``command`` (a role
    and its arguments), removed when it exits: CompletedProcess."""
    name = NAME_PREFIX + uuid.uuid4().hex[:12]
    args = ['run', '--rm', '--name', name] + _common_args(config_dir, env)
    try:
        return podman(*args, image_tag, *command, check=False,
                      timeout=timeout)
    finally:
        podman('rm', '--force', '--ignore', name, check=False)


class Configuration(fixtures.Fixture):
    """A directory to mount as ``/etc/reserveapi``: ``reserveapi.conf``
    for ``database_url``, no Keystone, the file inventory (``nodes``,
    the sample's 300 nodes by default), metrics on; owned by root and
    readable by the image's group, as production.rst has it."""

    def __init__(self, database_url, nodes=NODES, worker_port=None,
                 sync_interval=2, extra=''):
        super().__init__()
        self.database_url = database_url
        self.nodes = nodes
        self.worker_port = worker_port or loopback.free_port()
        self.sync_interval = sync_interval
        self.extra = extra

    def _setUp(self):
        self.path = self.useFixture(fixtures.TempDir()).path
        os.chown(self.path, 0, IMAGE_GID)
        os.chmod(self.path, 0o750)  # noqa: S103 - the group traverses it
        shutil.copy(self.nodes, os.path.join(self.path, 'nodes.yaml'))
        self.write()

    def write(self):
        text = textwrap.dedent("""\
            [DEFAULT]
            state_path = /var/lib/reserveapi

            [api]
            auth_strategy = noauth

            [database]
            connection = %(url)s

            [inventory]
            source = file
            file = /etc/reserveapi/nodes.yaml
            sync_interval = %(interval)d

            [metrics]
            enabled = true
            worker_host = 127.0.0.1
            worker_port = %(port)d
            """) % {'url': self.database_url,
                    'interval': self.sync_interval,
                    'port': self.worker_port}
        path = os.path.join(self.path, 'reserveapi.conf')
        with open(path, 'w') as stream:
            stream.write(text + self.extra)
        for name in os.listdir(self.path):
            os.chown(os.path.join(self.path, name), 0, IMAGE_GID)
            os.chmod(os.path.join(self.path, name), 0o640)


class Container(fixtures.Fixture):
    """One role of ``image_tag`` (``api``, ``worker``...) running
    detached; removed at cleanup, after its log is read (``log()``).
    For ``api``, ``port`` is where it listens (``RESERVEAPI_BIND``)."""

    def __init__(self, image_tag, config_dir, *command, port=None,
                 env=None, name=None):
        super().__init__()
        self.image_tag = image_tag
        self.config_dir = config_dir
        self.command = command or ('api',)
        self.port = port
        self.env = dict(env or {})
        if port is not None:
            self.env['RESERVEAPI_BIND'] = '127.0.0.1:%d' % port
        self.name = NAME_PREFIX + (name or '') + uuid.uuid4().hex[:8]
        self.exit_code = None

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    def _setUp(self):
        self.addCleanup(self.remove)
        podman('run', '--detach', '--name', self.name,
               *_common_args(self.config_dir, self.env), self.image_tag,
               *self.command)

    def log(self):
        result = podman('logs', self.name, check=False)
        return result.stdout + result.stderr

    def running(self):
        result = podman('inspect', '--format', '{{.State.Running}}',
                        self.name, check=False)
        return result.stdout.strip() == 'true'

    def wait_ready(self, path='/healthcheck', timeout=90):
        """Until the API answers ``path`` with 200."""
        ready = wait(
            lambda: loopback.answers(self.url + path) or not self.running(),
            timeout, interval=0.5)
        if not ready or not self.running():
            raise ContainerError('%s is not ready: %s' % (
                self.name, self.log()[-3000:]))

    def healthcheck(self):
        """The image's HEALTHCHECK, run now: podman's verdict."""
        result = podman('healthcheck', 'run', self.name, check=False)
        return result.returncode, (result.stdout + result.stderr).strip()

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM, then SIGKILL after ``timeout`` s: the exit code."""
        podman('stop', '--time', str(timeout), self.name, check=False,
               timeout=timeout + 60)
        result = podman('inspect', '--format', '{{.State.ExitCode}}',
                        self.name, check=False)
        self.exit_code = int(result.stdout.strip() or -1)
        return self.exit_code

    def remove(self):
        podman('rm', '--force', '--ignore', '--time', '5', self.name,
               check=False)


def leftovers():
    """Containers of the suite still present (none after a run)."""
    out = podman('ps', '--all', '--filter', 'label=%s' % LABEL,
                 '--format', '{{.Names}}', check=False).stdout
    return [name for name in out.split() if name]


def wait(predicate, timeout, interval=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
