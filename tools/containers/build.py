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

"""Build reserveapi's image (``Containerfile``) with podman, offline
from any container registry::

    python -m tools.containers.build                    # this checkout
    python -m tools.containers.build --revision d005916 # version 1.0.0
    python -m tools.containers.build --target nova-api  # Nova's side

First the base: a Debian bookworm minbase with python3, made by
mmdebstrap from the machine's own apt sources and imported with
``podman import`` as ``localhost/reserveapi-base:bookworm``; kept, and
reused while its recipe is unchanged (``--rebuild-base`` for a fresh
one, with the day's security updates). Then the image, from a context
of the source tree (this checkout's files, tracked and untracked but
not ignored; or ``git archive`` of ``--revision``) with this checkout's
``upper-constraints.txt``, ``Containerfile``, entry point and nova-api's
gunicorn settings laid over it, so an old version installs with today's pins as
``reserveapi_testing/old_version.py`` does. pip inside the build reaches
its index with the host's CA bundle as a build secret.

podman and buildah read ``tools/containers/containers.conf``
(``CONTAINERS_CONF``): runc, cgroupfs, ulimits under the host's. Run as
root, from the repository's root; needs podman and mmdebstrap
(doc/source/install/containers.rst).
"""

import argparse
import hashlib
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
HERE = pathlib.Path(__file__).resolve().parent
CONTAINERS_CONF = HERE / 'containers.conf'
CONTAINERFILE = ROOT / 'Containerfile'
ENTRYPOINT = HERE / 'entrypoint.sh'
NOVA_API_GUNICORN = HERE / 'nova-api-gunicorn.py'
CONSTRAINTS = ROOT / 'upper-constraints.txt'
IMAGE = 'localhost/reserveapi'
TARGETS = {'reserveapi': IMAGE,
           'nova-compute': 'localhost/reserveapi-nova-compute',
           'nova-api': 'localhost/reserveapi-nova-api'}
"""The Containerfile's targets: the service's image (every role) and
Nova's side (nova-compute with our driver, nova-api with our aggregate
hook)."""
TARGET_TITLES = {'reserveapi': 'reserveapi',
                 'nova-compute': 'reserveapi-nova-compute',
                 'nova-api': 'reserveapi-nova-api'}
"""Each target's ``org.opencontainers.image.title`` label."""
BASE_IMAGE = 'localhost/reserveapi-base:bookworm'
SUITE = 'bookworm'
APT_SOURCES = '/etc/apt/sources.list.d/debian.sources'
BASE_PACKAGES = ('python3', 'python3-venv', 'ca-certificates')
# What no service reads: manuals, translations, documentation but the
# copyright files.
DPKG_OPTIONS = (
    'path-exclude=/usr/share/man/*',
    'path-exclude=/usr/share/locale/*',
    'path-include=/usr/share/locale/locale.alias',
    'path-exclude=/usr/share/doc/*',
    'path-include=/usr/share/doc/*/copyright',
    'path-exclude=/usr/share/info/*',
)
MERGED_USR_HOOK = '/usr/share/mmdebstrap/hooks/merged-usr'
RECIPE_LABEL = 'org.openstack.reserveapi.base-recipe'
CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt'
KNOWN_VERSIONS = {'d005916': '1.0.0'}
"""Each known version by the short id of its commit, as the docs write
it."""
BUILD_TIMEOUT = 1800


class BuildError(Exception):
    """A step of the build failed; the message says which."""


def environ():
    """The environment podman runs in: the project's containers.conf."""
    return dict(os.environ, CONTAINERS_CONF=str(CONTAINERS_CONF))


def podman(*args, check=True, capture=True, timeout=None):
    """``podman ARGS`` with the project's containers.conf."""
    result = subprocess.run(['podman', *args], env=environ(),
                            capture_output=capture, text=True,
                            timeout=timeout, check=False)
    if check and result.returncode:
        raise BuildError('podman %s exited %d: %s' % (
            ' '.join(args[:2]), result.returncode,
            (result.stderr or '').strip()[-2000:]))
    return result


def _git(*args, repo=ROOT, text=True):
    return subprocess.run(['git', '-C', str(repo), *args],
                          capture_output=True, text=text,
                          check=True).stdout


def image_exists(name):
    return podman('image', 'exists', name, check=False).returncode == 0


def _image_id(name):
    result = podman('image', 'inspect', '--format', '{{.Id}}', name,
                    check=False)
    return result.stdout.strip() if result.returncode == 0 else None


def _forget_replaced(target):
    """Remove the images of ``target`` that a rebuild left without a
    name (their layers shared with the new one stay); one a container
    still runs stays until the next time. The build stages' cache has
    no such label and is kept."""
    title = TARGET_TITLES[target]
    out = podman('images', '--quiet', '--no-trunc', '--filter',
                 'dangling=true', '--filter',
                 'label=org.opencontainers.image.title=%s' % title,
                 check=False).stdout
    for image_id in sorted(set(out.split())):
        podman('rmi', image_id, check=False)


def image_size(name):
    """The image's size in bytes, as ``podman images`` counts it."""
    return int(podman('image', 'inspect', '--format', '{{.Size}}',
                      name).stdout.strip())


def image_labels(name):
    out = podman('image', 'inspect', '--format', '{{json .Labels}}',
                 name).stdout
    return json.loads(out) or {}


def base_recipe():
    """What the base is made from: a change makes a new one."""
    recipe = {'suite': SUITE, 'packages': BASE_PACKAGES,
              'dpkg': DPKG_OPTIONS,
              'sources': pathlib.Path(APT_SOURCES).read_text()}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()
                          ).hexdigest()[:16]


def ensure_base(rebuild=False, log=print):
    """The base image, made unless present with this recipe. Returns
    the seconds it took (0 when reused)."""
    recipe = base_recipe()
    if (not rebuild and image_exists(BASE_IMAGE)
            and image_labels(BASE_IMAGE).get(RECIPE_LABEL) == recipe):
        log('base %s: reused (recipe %s)' % (BASE_IMAGE, recipe))
        return 0.0
    if shutil.which('mmdebstrap') is None:
        raise BuildError('mmdebstrap not found: apt-get install mmdebstrap')
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix='reserveapi-base-') as tmp:
        tar = os.path.join(tmp, 'base.tar')
        command = ['mmdebstrap', '--quiet', '--variant=minbase',
                   '--include=' + ','.join(BASE_PACKAGES)]
        if os.path.isdir(MERGED_USR_HOOK):
            # Merged /usr without the usrmerge package (and its perl).
            command.append('--hook-dir=' + MERGED_USR_HOOK)
        command += ['--dpkgopt=' + option for option in DPKG_OPTIONS]
        command += [SUITE, tar, APT_SOURCES]
        result = subprocess.run(command, capture_output=True, text=True,
                                check=False, timeout=BUILD_TIMEOUT)
        if result.returncode:
            raise BuildError('mmdebstrap exited %d: %s' % (
                result.returncode, result.stderr.strip()[-2000:]))
        podman('import', '--change', 'CMD ["/bin/bash"]',
               '--change', 'LABEL %s=%s' % (RECIPE_LABEL, recipe),
               tar, BASE_IMAGE)
    took = time.monotonic() - started
    log('base %s: built in %.1f s (%d MB)' % (
        BASE_IMAGE, took, image_size(BASE_IMAGE) // 10**6))
    return took


def resolve(revision):
    return _git('rev-parse', '--verify', '%s^{commit}' % revision).strip()


def default_version(commit=None):
    """The version pbr would give: this checkout's installed version,
    or for a commit that of a known version."""
    if commit is None:
        from reserveapi import version
        return version.version_string()
    for short, known in KNOWN_VERSIONS.items():
        if commit.startswith(short):
            return known
    raise BuildError('no version known for %s: give --version' % commit)


def _work_tree_files():
    out = _git('ls-files', '-z', '--cached', '--others', '--exclude-standard')
    return [name for name in out.split('\0') if name]


def make_context(directory, commit=None):
    """The build context in ``directory``: the source tree of ``commit``
    (None: this checkout's files), with this checkout's pins,
    Containerfile, entry point and nova-api's gunicorn settings."""
    directory = pathlib.Path(directory)
    if commit is None:
        for name in _work_tree_files():
            source = ROOT / name
            if not source.is_file() or source.is_symlink():
                continue  # deleted in the work tree, or a link
            target = directory / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    else:
        archive = _git('archive', '--format=tar', commit, text=False)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            # Our own repository's archive; the 'data' filter where this
            # Python has it (not Debian bookworm's 3.11.2).
            if hasattr(tarfile, 'data_filter'):
                tar.extractall(directory, filter='data')
            else:
                tar.extractall(directory)  # noqa: S202
    for source, name in ((CONSTRAINTS, 'upper-constraints.txt'),
                         (CONTAINERFILE, 'Containerfile'),
                         (ENTRYPOINT, 'tools/containers/entrypoint.sh'),
                         (NOVA_API_GUNICORN,
                          'tools/containers/nova-api-gunicorn.py')):
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def _ca_bundle():
    return os.environ.get('PIP_CERT') or CA_BUNDLE


def _index_url():
    """The index the machine's pip uses, when it is one a container can
    reach (not a file:// directory): passed as a build argument."""
    url = os.environ.get('PIP_INDEX_URL', '')
    return url if url.startswith(('http://', 'https://')) else ''


def _source_url():
    result = subprocess.run(['git', '-C', str(ROOT), 'remote', 'get-url',
                             'origin'], capture_output=True, text=True,
                            check=False)
    return result.stdout.strip() or 'unknown'


def build_image(revision=None, version=None, tags=None, log=print,
                quiet=True, target='reserveapi'):
    """Build the image ``target`` of ``revision`` (None: this checkout).
    Returns ``(first tag, seconds)``."""
    commit = resolve(revision) if revision else None
    version = version or default_version(commit)
    if commit:
        label_revision = commit
    else:
        label_revision = resolve('HEAD')
        if _git('status', '--porcelain', '--untracked-files=no').strip():
            label_revision += '-dirty'
    # This checkout's build is also :latest, what the install guide runs.
    tags = list(tags or ['%s:%s' % (TARGETS[target], version)] + (
        [] if commit else ['%s:latest' % TARGETS[target]]))
    before = _image_id(tags[0])
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix='reserveapi-context-') as ctx:
        make_context(ctx, commit)
        command = ['build', '--format', 'docker', '--network', 'host',
                   '--layers', '--pull=never', '--target', target,
                   '--secret', 'id=ca,src=%s' % _ca_bundle(),
                   '--build-arg', 'BASE=%s' % BASE_IMAGE,
                   '--build-arg', 'PBR_VERSION=%s' % version,
                   '--build-arg', 'REVISION=%s' % label_revision,
                   '--build-arg', 'SOURCE=%s' % _source_url()]
        if _index_url():
            command += ['--build-arg', 'PIP_INDEX_URL=%s' % _index_url()]
        for tag in tags:
            command += ['--tag', tag]
        command += ['--file', os.path.join(ctx, 'Containerfile'), ctx]
        result = podman(*command, check=False, capture=quiet,
                        timeout=BUILD_TIMEOUT)
        if result.returncode:
            raise BuildError('podman build exited %d: %s' % (
                result.returncode, (result.stdout or '')[-3000:]
                + (result.stderr or '')[-3000:]))
    took = time.monotonic() - started
    if before and before != _image_id(tags[0]):
        _forget_replaced(target)
    log('image %s (%s, revision %s): built in %.1f s, %d MB' % (
        ', '.join(tags), version, label_revision, took,
        image_size(tags[0]) // 10**6))
    return tags[0], took


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m tools.containers.build',
        description=__doc__.split('\n\n')[0])
    parser.add_argument('--revision', metavar='REV',
                        help='build this commit (git archive), e.g. '
                             'd005916 for version 1.0.0; default: this '
                             "checkout's files as they are")
    parser.add_argument('--version',
                        help="pbr's version (PBR_VERSION); default: this "
                             "checkout's, or a known version's")
    parser.add_argument('--target', choices=sorted(TARGETS),
                        default='reserveapi',
                        help="the service's image (default), or Nova's "
                             'side: nova-compute with our driver, nova-api '
                             'with our aggregate hook')
    parser.add_argument('--tag', action='append',
                        help='name the image (repeatable); default: '
                             'the target\'s, e.g. %s:VERSION or '
                             '%s:VERSION' % (IMAGE, TARGETS['nova-api']))
    parser.add_argument('--rebuild-base', action='store_true',
                        help='make the base again even if present')
    parser.add_argument('--base-only', action='store_true',
                        help='make (or reuse) the base, nothing more')
    parser.add_argument('--verbose', action='store_true',
                        help="show podman build's output")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error('run as root (podman with the system storage)')
    try:
        ensure_base(rebuild=args.rebuild_base)
        if not args.base_only:
            build_image(args.revision, args.version, args.tag,
                        quiet=not args.verbose, target=args.target)
    except (BuildError, subprocess.CalledProcessError) as exc:
        print('build failed: %s' % exc, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
