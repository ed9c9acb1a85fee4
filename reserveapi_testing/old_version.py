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

"""A past version of reserveapi in a virtualenv of its own.

An upgrade test runs the previous version ("N-1") beside this checkout
("N"): its API, its worker, its client. The version is built from git,
as its source tarball would be (``git archive`` of the commit, so the
work tree's changes never leak in), and installed with its database
drivers and gunicorn into a virtualenv that nothing else shares. pbr
cannot count commits without ``.git``, so the version string is
given (``PBR_VERSION``).

It installs with this checkout's pins (``-c upper-constraints.txt``),
not with whatever the index holds that day: an old version compared
with this one, or upgraded to it, must run on the same libraries, or
a difference between them may be a library's. Version 1.0.0 has no
pins of its own.

A virtualenv is built once per commit, version and pinned set, and
reused: a marker file written last says it is complete, and with which
pins. The cache keeps the few used last (``KEPT``); each weighs a
quarter of a gigabyte.
"""

import dataclasses
import hashlib
import io
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_CACHE = ROOT / '.tox' / 'upgrade-old'
CONSTRAINTS = ROOT / 'upper-constraints.txt'
EXTRAS = 'postgresql,mysql'
SERVER_PACKAGES = ('gunicorn>=22.0.0',)
READY = 'ready'
KEPT = 3
INSTALL_TIMEOUT = 1200


class OldVersionError(Exception):
    """The commit is unknown, or its version could not be installed."""


@dataclasses.dataclass(frozen=True)
class OldVersion:
    """An installed version: ``bin_dir`` holds its console scripts and
    gunicorn, ``python`` its interpreter."""

    commit: str
    version: str
    path: pathlib.Path

    @property
    def bin_dir(self):
        return str(self.path / 'venv' / 'bin')

    @property
    def python(self):
        return os.path.join(self.bin_dir, 'python')

    @property
    def source(self):
        return self.path / 'src'


def resolve(revision, repo=ROOT):
    """The full commit id of ``revision`` (``d005916``, ``HEAD``...)."""
    result = subprocess.run(
        ['git', '-C', str(repo), 'rev-parse', '--verify', '--quiet',
         '%s^{commit}' % revision], capture_output=True, text=True,
        check=False)
    if result.returncode:
        raise OldVersionError('%s is not a commit of %s' % (revision, repo))
    return result.stdout.strip()


def _run(command, log_path, **kwargs):
    with open(log_path, 'ab') as log:
        result = subprocess.run(command, stdout=log, stderr=log,
                                check=False, **kwargs)
    if result.returncode:
        raise OldVersionError('%s exited %d; see %s' % (
            ' '.join(str(part) for part in command[:3]), result.returncode,
            log_path))


def _forget_all_but_latest(cache_dir, count):
    """Remove the builds in ``cache_dir`` but the ``count`` used last
    (and those under way, which have no marker yet)."""
    built = sorted(cache_dir.glob('*/' + READY),
                   key=lambda marker: marker.stat().st_mtime, reverse=True)
    for marker in built[count:]:
        shutil.rmtree(marker.parent, ignore_errors=True)


def _marker(commit, version, constraints):
    """What the marker file of a complete build says: the commit, the
    version and the digest of the pins it was installed with."""
    digest = hashlib.sha256(pathlib.Path(constraints).read_bytes())
    return '%s %s %s\n' % (commit, version, digest.hexdigest()[:16])


def build(revision, version, cache_dir=DEFAULT_CACHE, repo=ROOT,
          constraints=CONSTRAINTS):
    """The code of ``revision`` installed as ``version`` with the pins
    of ``constraints``: reused from ``cache_dir`` when it was built
    before with the same pins, else built there (a few minutes the
    first time, half a minute with pip's cache)."""
    commit = resolve(revision, repo)
    if not pathlib.Path(constraints).is_file():
        raise OldVersionError('%s not found: the old version installs with '
                              "this checkout's pins" % constraints)
    marker = _marker(commit, version, constraints)
    path = pathlib.Path(cache_dir).resolve() / ('%s-%s' % (commit[:12],
                                                         version))
    old = OldVersion(commit, version, path)
    ready = path / READY
    if ready.exists() and ready.read_text() == marker:
        ready.touch()
        return old
    _forget_all_but_latest(path.parent, KEPT - 1)
    shutil.rmtree(path, ignore_errors=True)
    old.source.mkdir(parents=True)
    log_path = path / 'build.log'
    archive = subprocess.run(
        ['git', '-C', str(repo), 'archive', '--format=tar', commit],
        capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(old.source, filter='data')
    # The interpreter this runs on, not a virtualenv's copy of it.
    _run([getattr(sys, '_base_executable', sys.executable), '-m', 'venv',
          str(path / 'venv')], log_path)
    # PBR_VERSION for our wheel alone: in the install it would also
    # version every dependency pbr builds from an sdist (testresources
    # 2.0.2 would call itself 1.0.0, and the pins could not be met).
    wheels = path / 'wheel'
    _run([old.python, '-m', 'pip', 'wheel', '--quiet', '--no-deps',
          '--wheel-dir', str(wheels), str(old.source)], log_path,
         env=dict(os.environ, PBR_VERSION=version), timeout=INSTALL_TIMEOUT)
    (wheel,) = wheels.glob('*.whl')
    _run([old.python, '-m', 'pip', 'install', '--quiet',
          '-c', str(pathlib.Path(constraints).resolve()),
          '%s[%s]' % (wheel, EXTRAS)] + list(SERVER_PACKAGES),
         log_path, timeout=INSTALL_TIMEOUT)
    ready.write_text(marker)
    return old
