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

"""The install guide as a program: its pages' blocks, run as written on a
fresh host of their own.

``steps(page)`` reads a page of ``doc/source/install/``. A ``console``
block holds commands: after ``$`` run as an ordinary user, after ``#``
as root; a line without a prompt continues the command before it. An
``ini`` block is an edit, captioned with the file it goes in (``add to
FILE``, ``in FILE``): its options are set there. Directions to the test,
RST comments that readers do not see, say what a block alone cannot::

    .. install-guide: only TAG...                 the next block is for the
                                                  variants with one of TAGs
    .. install-guide: background until URL        the next block's command
    .. install-guide: background until output X   serves in a terminal of its
                                                  own: ready once URL answers,
                                                  or once it printed X
    .. install-guide: replace placeholders in FILE   the reader's edit of
                                                  CONTROLLER, passwords...
    .. install-guide: wait until URL answers
    .. install-guide: not run, REASON             the next block needs what
                                                  no test host has (a
                                                  Kubernetes cluster...)

``Machine`` is the fresh host: a mount namespace in which ``/etc``,
``/opt``, ``/var/lib``, ``/home`` and ``/root`` are overlays on this
machine's (``useradd``, ``pip`` and the configuration change nothing
outside it), an ordinary user ``evaluator``, a copy of the checkout, and
``systemctl``/``journalctl`` played by ``fake_systemd.py``. The network,
the PostgreSQL and MariaDB servers and PyPI are this machine's; so are
the directories of ``shared`` (the containers path keeps podman's image
store, ``/var/lib/containers``, as pip's cache is kept: a cache, which
the base and dependency layers come from). The
guide's port 6390, in its commands and in the files it copies, is a free
port instead, so that the test runs beside a demo. ``Cloud`` is what the
production page expects to exist: Keystone, Ironic and Placement.
"""

import dataclasses
import os
import pathlib
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import fixtures

from reserveapi_testing import dbservers
from reserveapi_testing import loopback

ROOT = pathlib.Path(__file__).resolve().parents[1]
GUIDE = ROOT / 'doc' / 'source' / 'install'
PAGES = ('evaluation.rst', 'production.rst')
CONTAINERS_PAGE = 'containers.rst'
"""The third path, podman's: run by ``tox -e install-guide`` too, once
podman is installed (``tests/install_guide``)."""
VARIANTS = {
    # page: {variant: its tags}
    'evaluation.rst': {'sqlite': {'sqlite'}, 'postgresql': {'postgresql'},
                       'mariadb': {'mariadb'}},
    'production.rst': {'postgresql': {'postgresql', 'systemd'},
                       'mariadb': {'mariadb', 'foreground'}},
    CONTAINERS_PAGE: {'postgresql': {'postgresql'}},
}
"""Every way through each page that the test takes: together they run
every block (``tests/unit/test_install_guide.py`` insists for PAGES,
``tests/install_guide`` for the containers page)."""
PODMAN_STORE = ('/var/lib/containers',)
"""What the containers path shares with this machine (``Machine``)."""

OVERLAID = ('/etc', '/opt', '/var/lib', '/home', '/root')
USER = 'evaluator'
PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
GUIDE_PORT = re.compile(r'(?<![\d.])6390(?!\d)')
PORT_FILES = ('etc/reserveapi/reserveapi-evaluation.conf',
              'etc/systemd/reserveapi-api.service')
"""The files the guide copies that name port 6390."""
PIP_CACHE = '/var/tmp/reserveapi-install-guide-pip'
"""pip's cache, one per user, kept from run to run (outside the
overlays) so that an install takes seconds, not a minute."""

SCRATCH = '/var/tmp'
"""Where a host's overlays and checkout go: a directory every user may
traverse (the ordinary user works in its checkout), outside the
overlaid ones."""

COMMAND_TIMEOUT = 900
READY_TIMEOUT = 120
STOP_TIMEOUT = 30

ANNOTATION = re.compile(r'^\.\. install-guide: (.+)$')
DIRECTIVE = re.compile(r'^\.\. code-block:: (\w+)\s*$')
PROMPT = re.compile(r'^([$#]) ')


class GuideError(Exception):
    """A page the test cannot follow: say where."""


class StepFailed(Exception):
    """A step of the guide failed as written."""


@dataclasses.dataclass(frozen=True)
class Step:
    page: str
    line: int
    kind: str
    """``console``, ``ini``, ``replace`` or ``wait``."""
    text: str = ''
    target: str = ''
    """The file of an ``ini`` or ``replace`` step, the URL of a ``wait``."""
    only: frozenset = frozenset()
    background: tuple = None
    """``('url', URL)`` or ``('output', TEXT)``: when it is ready."""

    def __str__(self):
        return '%s:%d' % (self.page, self.line)

    def runs_in(self, tags):
        return not self.only or bool(self.only & set(tags))

    def commands(self):
        """``[(prompt, command)]``, continuation lines included."""
        found = []
        for line in self.text.splitlines():
            match = PROMPT.match(line)
            if match:
                found.append([match.group(1), line[2:]])
            elif found:
                found[-1][1] += '\n' + line
            elif line.strip():
                raise GuideError('%s: %r follows no prompt' % (self, line))
        return [tuple(command) for command in found]


def steps(page):
    """The steps of ``doc/source/install/PAGE``, in order."""
    lines = (GUIDE / page).read_text().splitlines()
    found, only, background, skip = [], set(), None, False
    number = 0
    while number < len(lines):
        line = lines[number]
        annotation = ANNOTATION.match(line)
        directive = DIRECTIVE.match(line)
        where = '%s:%d' % (page, number + 1)
        if annotation:
            words = annotation.group(1).split()
            if words[:2] == ['not', 'run,'] and words[2:]:
                skip = True
            elif words[0] == 'only' and words[1:]:
                only |= set(words[1:])
            elif words[:2] == ['background', 'until'] and words[2:]:
                background = (('output', ' '.join(words[3:]))
                              if words[2] == 'output' else ('url', words[2]))
            elif words[:3] == ['replace', 'placeholders', 'in'] and words[3:]:
                found.append(Step(page, number + 1, 'replace',
                                  target=words[3], only=frozenset(only)))
                only = set()
            elif words[:2] == ['wait', 'until'] and words[3:] == ['answers']:
                found.append(Step(page, number + 1, 'wait', target=words[2],
                                  only=frozenset(only)))
                only = set()
            else:
                raise GuideError('%s: no such direction: %s'
                                 % (where, annotation.group(1)))
            number += 1
        elif directive:
            language = directive.group(1)
            start = number + 1
            number, caption, text = _block(lines, number + 1)
            if skip:
                if only or background:
                    raise GuideError('%s: a block not run takes no other '
                                     'direction' % where)
                skip = False
                continue
            if language == 'console':
                found.append(Step(page, start, 'console', text=text,
                                  only=frozenset(only),
                                  background=background))
            elif language == 'ini' and caption and not background:
                found.append(Step(page, start, 'ini', text=text,
                                  target=caption.split()[-1],
                                  only=frozenset(only)))
            else:
                raise GuideError(
                    '%s: a %s block the test cannot run (console blocks, '
                    'and ini blocks captioned with their file, only)'
                    % (where, language))
            only, background = set(), None
        else:
            if (only or background or skip) and line.strip():
                raise GuideError('%s: a direction to the test must come '
                                 'right before a block' % where)
            number += 1
    return found


def _block(lines, number):
    """(the line after the block, its caption, its text)."""
    caption = None
    while number < len(lines) and lines[number].strip().startswith(':'):
        option = lines[number].strip()
        if option.startswith(':caption:'):
            caption = option[len(':caption:'):].strip()
        number += 1
    body = []
    while number < len(lines) and (not lines[number].strip()
                                   or lines[number].startswith(' ')):
        body.append(lines[number])
        number += 1
    return number, caption, textwrap.dedent('\n'.join(body)).strip() + '\n'


def merged(text, snippet):
    """``text``, an ini file, with the options of ``snippet`` set: an
    option's line replaced where its section has it, added at the end of
    the section otherwise, a missing section added at the end; comments
    and everything else kept, as an editor would.
    """
    lines = text.rstrip('\n').splitlines()
    section = None
    for line in snippet.splitlines():
        header = re.match(r'^\[(.+)\]$', line.strip())
        if header:
            section = header.group(1)
            if '[%s]' % section not in [item.strip() for item in lines]:
                lines += ['', '[%s]' % section]
            continue
        if not line.strip() or line.lstrip().startswith('#'):
            continue
        key = line.split('=', 1)[0].strip()
        start = [item.strip() for item in lines].index('[%s]' % section)
        end = next((index for index in range(start + 1, len(lines))
                    if lines[index].strip().startswith('[')), len(lines))
        for index in range(start + 1, end):
            if re.match(r'^\s*%s\s*=' % re.escape(key), lines[index]):
                lines[index] = line
                break
        else:
            while end > start + 1 and not lines[end - 1].strip():
                end -= 1
            lines.insert(end, line)
    return '\n'.join(lines) + '\n'


def _gone(pid):
    """Whether process ``pid`` has exited (a zombie nobody reaps has)."""
    try:
        with open('/proc/%d/stat' % pid) as stat:
            return stat.read().rsplit(')', 1)[1].split()[0] == 'Z'
    except OSError:
        return True


class Machine(fixtures.Fixture):
    """A fresh host to follow the guide on (see the module's docstring).

    ``substitutions``: ``[(placeholder, value)]``, what the reader writes
    for ``CONTROLLER`` and the passwords, applied in order after the
    port. ``checkout_owner``: who cloned the repository, the ordinary
    user for the evaluation, root for production.
    """

    def __init__(self, substitutions=(), checkout_owner='root', shared=()):
        super().__init__()
        self.substitutions = list(substitutions)
        self.checkout_owner = checkout_owner
        self.shared = tuple(shared)
        self.port = loopback.free_port()

    def _setUp(self):
        self.path = tempfile.mkdtemp(prefix='reserveapi-install-guide-',
                                     dir=SCRATCH)
        self.addCleanup(shutil.rmtree, self.path, ignore_errors=True)
        os.chmod(self.path, 0o711)  # noqa: S103 - the user reaches its checkout
        self.units = os.path.join(self.path, 'systemd')
        self.shims = os.path.join(self.path, 'bin')
        for directory in (self.units, self.shims):
            os.mkdir(directory)
        self._write_shims()
        self._background = []
        self._stopped = []
        self.caches = {}
        self._start_namespace()
        self.addCleanup(self._stop_services)
        self._must('#', 'useradd --create-home --shell /bin/bash ' + USER)
        uid = int(self._must('#', 'id -u ' + USER))
        for prompt, owner in (('#', 0), ('$', uid)):
            self.caches[prompt] = os.path.join(PIP_CACHE, str(owner))
            os.makedirs(self.caches[prompt], exist_ok=True)
            subprocess.run(['chown', '-R', '%d:%d' % (owner, owner),
                            self.caches[prompt]], check=True)
        self.checkout = self._copy_checkout(
            uid if self.checkout_owner == USER else 0)

    def localize(self, text):
        """``text`` as the reader types it on this host."""
        text = GUIDE_PORT.sub(str(self.port), text)
        for placeholder, value in self.substitutions:
            text = text.replace(placeholder, value)
        return text

    def _write_shims(self):
        script = os.path.join(os.path.dirname(__file__), 'fake_systemd.py')
        for name in ('systemctl', 'journalctl'):
            path = os.path.join(self.shims, name)
            with open(path, 'w') as shim:
                shim.write('#!/bin/sh\nexec %s %s %s "$@"\n' % (
                    shlex.quote(sys.executable), shlex.quote(script), name))
            os.chmod(path, 0o755)  # noqa: S103 - a command

    def _start_namespace(self):
        """A process whose mount namespace has the overlays: every
        command enters it (nsenter)."""
        script = ['set -e']
        # This machine's directories that stay as they are: bound aside
        # before the overlays, bound back over them after.
        kept = []
        for number, directory in enumerate(self.shared):
            aside = os.path.join(self.path, 'shared-%d' % number)
            os.makedirs(aside)
            os.makedirs(directory, exist_ok=True)
            script.append('mount --bind %s %s' % (directory, aside))
            kept.append('mount --bind %s %s' % (aside, directory))
        for directory in OVERLAID:
            layer = os.path.join(self.path, 'overlay' + directory)
            for part in ('upper', 'work'):
                os.makedirs(os.path.join(layer, part))
            script.append(
                'mount -t overlay overlay -o lowerdir=%s,upperdir=%s/upper,'
                'workdir=%s/work %s' % (directory, layer, layer, directory))
        script += kept + ['echo ready', 'exec sleep infinity']
        self._namespace = subprocess.Popen(
            ['unshare', '--mount', '--propagation', 'private', '--', 'sh',
             '-c', '\n'.join(script)], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.addCleanup(self._end_namespace)
        if self._namespace.stdout.readline().strip() != 'ready':
            raise StepFailed('No mount namespace with overlays (needs root '
                             'and overlayfs): %s' % self._namespace.stderr
                             .read())

    def _end_namespace(self):
        self._namespace.kill()
        self._namespace.wait()
        self._namespace.stdout.close()
        self._namespace.stderr.close()

    def _copy_checkout(self, owner):
        """The working tree (what git tracks or would, changes included)
        and its history, as a clone would have them."""
        target = os.path.join(self.path, 'checkout')
        listed = subprocess.run(
            ['git', 'ls-files', '-z', '--cached', '--others',
             '--exclude-standard'], cwd=ROOT, capture_output=True,
            check=True).stdout.decode().split('\0')
        for name in listed:
            source = ROOT / name
            if name and source.is_file():
                os.makedirs(os.path.join(target, os.path.dirname(name)),
                            exist_ok=True)
                shutil.copy2(source, os.path.join(target, name))
        shutil.copytree(ROOT / '.git', os.path.join(target, '.git'),
                        symlinks=True)
        for name in PORT_FILES:
            path = pathlib.Path(target, name)
            path.write_text(GUIDE_PORT.sub(str(self.port), path.read_text()))
        subprocess.run(['chown', '-R', '%d:%d' % (owner, owner), target],
                       check=True)
        return target

    def _argv(self, prompt, script):
        """A bash ``script`` run as ``prompt`` says, in the namespace, from
        the checkout (entering a mount namespace moves to its root)."""
        argv = ['bash', '-c', 'cd %s || exit 1\n%s' % (
            shlex.quote(getattr(self, 'checkout', self.path)), script)]
        if prompt == '$':
            argv = ['runuser', '-u', USER, '--'] + argv
        return ['nsenter', '--target', str(self._namespace.pid), '--mount',
                '--'] + argv

    def _env(self, prompt):
        env = {key: value for key, value in os.environ.items()
               if key.startswith('PIP_') or key.lower() in (
                   'http_proxy', 'https_proxy', 'no_proxy')}
        # runuser sets the user's own HOME, USER and LOGNAME.
        env.update(LANG='C.UTF-8',
                   PIP_CACHE_DIR=self.caches.get(prompt, PIP_CACHE),
                   PATH=PATH if prompt == '$' else self.shims + ':' + PATH,
                   HOME='/root', USER='root', LOGNAME='root',
                   RESERVEAPI_FAKE_SYSTEMD_DIR=self.units)
        return env

    def run(self, prompt, script, stdin=None):
        """``(exit code, output)`` of a bash ``script`` run as the user
        (``$``) or root (``#``) from the checkout."""
        result = subprocess.run(
            self._argv(prompt, script),
            env=self._env(prompt), input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=COMMAND_TIMEOUT, check=False)
        return result.returncode, result.stdout

    def _must(self, prompt, script, stdin=None):
        code, output = self.run(prompt, script, stdin)
        if code:
            raise StepFailed('%s %s: exit %d\n%s' % (prompt, script, code,
                                                     output[-3000:]))
        return output

    @staticmethod
    def _in_shell(path):
        """``path`` for bash: ``~/x`` stays the user's home."""
        if path.startswith('~/'):
            return '~/' + shlex.quote(path[2:])
        return shlex.quote(path)

    def read_file(self, prompt, path):
        return self._must(prompt, 'cat ' + self._in_shell(path))

    def write_file(self, prompt, path, text):
        """Replace the file's content; its owner and mode stay."""
        self._must(prompt, 'cat > ' + self._in_shell(path), stdin=text)

    def follow(self, page, tags):
        """Run the steps of ``page`` for a variant, in order, then stop
        what serves; the steps run. Raises StepFailed at the first step
        that fails as written, naming it."""
        done = []
        try:
            for step in steps(page):
                if step.runs_in(tags):
                    self._take(step)
                    done.append(step)
        except StepFailed as exc:
            raise StepFailed('%s (%s step) failed as written: %s%s' % (
                step, step.kind, exc, self._logs()))
        self._stop_services()
        return done

    def _take(self, step):
        if step.kind == 'wait':
            self._wait(('url', self.localize(step.target)), None, None)
        elif step.kind == 'replace':
            text = self.read_file('#', step.target)
            self.write_file('#', step.target, self.localize(text))
        elif step.kind == 'ini':
            prompt = '$' if step.target.startswith('~') else '#'
            text = self.read_file(prompt, step.target)
            self.write_file(prompt, step.target,
                            merged(text, self.localize(step.text)))
        elif step.background:
            (prompt, command), = step.commands()
            self._serve(prompt, self.localize(command), step)
        else:
            for prompt, script in self._shells(step.commands()):
                self._must(prompt, script)

    def _shells(self, commands):
        """One script per run of commands with the same prompt, as one
        terminal would run them (``. ~/admin-openrc`` holds for the rest);
        each command echoed first, so the output shows which failed."""
        scripts = []
        for prompt, command in commands:
            line = 'echo %s\n%s' % (shlex.quote('%s %s' % (
                prompt, command.splitlines()[0])), self.localize(command))
            if scripts and scripts[-1][0] == prompt:
                scripts[-1][1].append(line)
            else:
                scripts.append((prompt, ['set -e', line]))
        return [(prompt, '\n'.join(lines)) for prompt, lines in scripts]

    def _serve(self, prompt, command, step):
        log_path = os.path.join(self.path, 'serve-%d.log' % step.line)
        with open(log_path, 'wb') as log:
            process = subprocess.Popen(
                self._argv(prompt, 'exec ' + command),
                env=self._env(prompt),
                stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        self._background.append((process, log_path, command))
        ready = step.background
        if ready[0] == 'url':
            ready = ('url', self.localize(ready[1]))
        self._wait(ready, process, log_path)

    def _wait(self, ready, process, log_path):
        kind, target = ready

        def is_ready():
            if kind == 'url':
                return loopback.answers(target)
            return target in dbservers.tail(log_path, 100000)

        if loopback.wait_until(is_ready, READY_TIMEOUT, process,
                               interval=0.3):
            return
        if process is not None and process.poll() is not None:
            raise StepFailed('it exited (%d) instead of serving:\n%s' % (
                process.returncode, dbservers.tail(log_path)))
        raise StepFailed('not ready (%s %s) after %d s' % (
            kind, target, READY_TIMEOUT))

    def _log_files(self):
        """``[(what, path)]`` of what the services wrote."""
        logs = [(command, path) for _process, path, command
                in self._background + self._stopped]
        return logs + [(name, os.path.join(self.units, name))
                       for name in sorted(os.listdir(self.units))
                       if name.endswith('.log')]

    def _logs(self):
        """What the services wrote, for a failure's message."""
        return ''.join('\n--- %s:\n%s' % (what, dbservers.tail(path))
                       for what, path in self._log_files())

    def logged(self, text):
        """The lines of the services' logs that hold ``text``."""
        found = []
        for _what, path in self._log_files():
            with open(path, errors='replace') as log:
                found += [line.rstrip('\n') for line in log if text in line]
        return found

    def _stop_services(self):
        """Ctrl-C each terminal's command, which must exit 0; stop the
        units as systemd would (SIGTERM to the unit's processes)."""
        stopped = []
        for process, log_path, command in self._background:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGINT)
                try:
                    process.wait(STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
            stopped.append((command, process.returncode, log_path))
            self._stopped.append((process, log_path, command))
        self._background = []
        for name in os.listdir(self.units):
            if name.endswith('.pid'):
                with open(os.path.join(self.units, name)) as pid_file:
                    pid = int(pid_file.read())
                os.unlink(os.path.join(self.units, name))
                self._terminate(pid)
        failed = [(command, code, path) for command, code, path in stopped
                  if code != 0]
        if failed:
            raise StepFailed('Ctrl-C did not stop it with exit 0: %s'
                             % ''.join('\n--- %s (exit %s):\n%s' % (
                                 command, code, dbservers.tail(path))
                                 for command, code, path in failed))

    @staticmethod
    def _terminate(pid):
        for number, wait in ((signal.SIGTERM, STOP_TIMEOUT),
                             (signal.SIGKILL, 5)):
            try:
                os.killpg(pid, number)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                if _gone(pid):
                    return
                time.sleep(0.1)


def created_databases(page, tags):
    """``[(server, kind, name)]`` that the page's steps for a variant
    create on this machine's servers: ``('postgresql', 'database',
    'reserveapi')``, ``('mariadb', 'user', 'reserveapi')``..."""
    found = []
    for step in steps(page):
        if step.kind != 'console' or not step.runs_in(tags):
            continue
        for _prompt, command in step.commands():
            server = ('postgresql' if 'psql' in command else
                      'mariadb' if command.startswith('mysql') else None)
            for kind, name in re.findall(
                    r"CREATE (DATABASE|USER) '?(\w+)'?", command):
                if server:
                    found.append((server, kind.lower(), name))
    return found


_SQL = {
    ('postgresql', 'database'): (
        "SELECT 1 FROM pg_database WHERE datname = '%s'",
        'DROP DATABASE IF EXISTS %s WITH (FORCE)'),
    ('postgresql', 'user'): ("SELECT 1 FROM pg_roles WHERE rolname = '%s'",
                             'DROP ROLE IF EXISTS %s'),
    ('mariadb', 'database'): (
        "SELECT 1 FROM information_schema.schemata WHERE schema_name = '%s'",
        'DROP DATABASE IF EXISTS %s'),
    ('mariadb', 'user'): ("SELECT 1 FROM mysql.user WHERE user = '%s'",
                          "DROP USER IF EXISTS '%s'@'%%'"),
}
"""Per server and kind: is it there, and how to remove it."""


TABLES = {
    'postgresql': "SELECT count(*) FROM information_schema.tables WHERE "
                  "table_schema = 'public'",
    'mariadb': "SELECT count(*) FROM information_schema.tables WHERE "
               "table_schema = '%s'",
}


def _sql(server, statement, database=None):
    argv = (['runuser', '-u', 'postgres', '--', 'psql', '-tAq', '-v',
             'ON_ERROR_STOP=1', '-d', database or 'postgres', '-c',
             statement] if server == 'postgresql'
            else ['mysql', '-N', '-e', statement])
    result = subprocess.run(argv, capture_output=True, text=True,
                            timeout=60, check=False)
    if result.returncode:
        raise StepFailed('%s: %s' % (' '.join(argv), result.stderr.strip()))
    return result.stdout.strip()


class Databases(fixtures.Fixture):
    """What a variant creates on this machine's database servers: none of
    it may exist before (it would be someone else's), all of it goes
    after. ``unavailable`` says why a server cannot be used, if so."""

    def __init__(self, created):
        super().__init__()
        self.created = created

    def _setUp(self):
        self.unavailable = None
        for server in sorted({server for server, _kind, _name
                              in self.created}):
            try:
                _sql(server, 'SELECT 1')
            except (StepFailed, OSError) as exc:
                self.unavailable = '%s: %s' % (server, exc)
                return
        for server, kind, name in self.created:
            if _sql(server, _SQL[server, kind][0] % name):
                raise StepFailed(
                    'The %s %s %s exists on this machine: the install guide '
                    'would create it. Drop it (%s) and run the test again.'
                    % (server, kind, name, _SQL[server, kind][1] % name))
        self.addCleanup(self._drop)

    def tables(self):
        """``{database: how many tables it holds now}``."""
        return {name: int(_sql(server, TABLES[server] % name
                               if server == 'mariadb' else TABLES[server],
                               database=name))
                for server, kind, name in self.created if kind == 'database'}

    def _drop(self):
        order = {'database': 0, 'user': 1}
        for server, kind, name in sorted(
                self.created, key=lambda item: order[item[1]]):
            _sql(server, _SQL[server, kind][1] % name)


class Cloud(fixtures.Fixture):
    """What the production page expects to run already: Keystone (the
    ``admin`` user and the ``service`` project), Ironic with available
    nodes, Placement validating Keystone's tokens, both in Keystone's
    catalog; and ``admin_openrc``, the administrator's credentials."""

    NODES = 4

    def _setUp(self):
        from reserveapi_testing import ironic
        from reserveapi_testing import keystone
        from reserveapi_testing import placement

        self.keystone = self.useFixture(keystone.KeystoneFixture(
            identities=False))
        # An Ironic of this test's own, its files in the test's temporary
        # directory: the process-wide one, imported here inside a test,
        # would keep them in the first test's, gone once that test ends.
        self.ironic = self.useFixture(ironic.IronicFixture())
        self.ironic.seed_nodes(self.NODES)
        password = secrets.token_urlsafe(16)
        self._service_user('placement', password)
        self.placement = self.useFixture(placement.PlacementFixture(
            keystone_authtoken={
                'auth_type': 'password', 'auth_url': self.keystone.auth_url,
                'www_authenticate_uri': self.keystone.url,
                'username': 'placement', 'password': password,
                'user_domain_name': 'Default', 'project_name': 'service',
                'project_domain_name': 'Default'}))
        for service_type, url in (('baremetal', self.ironic.endpoint),
                                  ('placement', self.placement.endpoint)):
            service = self.keystone.api('POST', '/services', {'service': {
                'type': service_type, 'name': service_type}})['service']
            for interface in ('public', 'internal', 'admin'):
                self.keystone.api('POST', '/endpoints', {'endpoint': {
                    'service_id': service['id'], 'interface': interface,
                    'url': url, 'region_id': keystone.REGION}})
        self.passwords = {'RESERVEAPI_DBPASS': secrets.token_hex(12),
                          'RESERVEAPI_PASS': secrets.token_hex(12)}

    def _service_user(self, name, password):
        user = self.keystone.api('POST', '/users', {'user': {
            'name': name, 'domain_id': 'default',
            'password': password}})['user']
        roles = {role['name']: role['id']
                 for role in self.keystone.api('GET', '/roles')['roles']}
        for role in ('service', 'admin'):
            self.keystone.api('PUT', '/projects/%s/users/%s/roles/%s' % (
                self.keystone.project_ids['service'], user['id'],
                roles[role]))

    @property
    def substitutions(self):
        """What an operator of this cloud writes for the placeholders."""
        keystone = self.keystone.url.split('//', 1)[1]
        return ([('CONTROLLER:5000', keystone),
                 ('CONTROLLER', '127.0.0.1')]
                + sorted(self.passwords.items()))

    @property
    def admin_openrc(self):
        return ''.join('export %s=%s\n' % item for item in (
            ('OS_USERNAME', 'admin'),
            ('OS_PASSWORD', self.keystone.passwords['admin']),
            ('OS_PROJECT_NAME', 'admin'),
            ('OS_USER_DOMAIN_NAME', 'Default'),
            ('OS_PROJECT_DOMAIN_NAME', 'Default'),
            ('OS_AUTH_URL', self.keystone.auth_url),
            ('OS_IDENTITY_API_VERSION', '3')))
