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

"""Write upper-constraints.txt: one pin for every package any install
path of ours takes, direct or transitive.

``requirements.txt`` keeps ranges, because Nova's side installs us as a
library. The pins make every install reproducible: tox, ``.ci/run``, the
README, the install guide and the container image all install with
``-c upper-constraints.txt``, as OpenStack projects do with each
series' upper-constraints.

What is pinned is everything tox.ini installs in any environment (its
``deps`` and ``extras``, and the files they name), our extras, and tox
itself. pip resolves all of it at once (``--dry-run --report``, nothing
is installed), starting from a seed: by default the pins already
written, so adding a requirement moves only what it must. A seed pin
that conflicts with a requirement is dropped, and the run says which
requirement moved it. ``--upgrade`` starts from no seed: every package
at its newest version our ranges admit. ``--seed FILE`` starts from
another list, such as an OpenStack series' upper-constraints.

    tox -e constraints                      # after changing requirements
    tox -e constraints -- --upgrade         # raise everything
"""

import argparse
import configparser
import json
import pathlib
import re
import subprocess
import sys
import tempfile

from packaging import markers

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUTPUT = ROOT / 'upper-constraints.txt'
EXTRAS = ('nova', 'postgresql', 'mysql')
ALWAYS = ('tox',)
"""Installed beside us on the README's path, so pinned too."""

HEADER = """\
# Every package reserveapi's install paths take, pinned to the versions
# the whole suite passed with. Written by tools/constraints.py
# (tox -e constraints); do not edit by hand. Resolved for CPython %s.
# Install with: pip install -c upper-constraints.txt ...
"""

_CONFLICT = re.compile(
    r'The user requested \(constraint\) ([A-Za-z0-9._-]+)===?(\S+)')
_DEPENDS = re.compile(r'^\s*(\S+ \S+) depends on (.+)$')


def canonical(name):
    return re.sub(r'[-_.]+', '-', name).lower()


def read_pins(path):
    """``{canonical name: (name, version)}`` of a constraints file."""
    pins = {}
    for line in pathlib.Path(path).read_text().splitlines():
        line = line.split('#', 1)[0].strip()
        if not line or line.startswith('-'):
            continue
        line, _sep, marker = line.partition(';')
        # OpenStack's lists pin some packages once per Python version.
        if marker and not markers.Marker(marker).evaluate():
            continue
        name, _sep, version = line.partition('===')
        if not version:
            name, _sep, version = line.partition('==')
        version = version.strip()
        if version:
            pins[canonical(name.strip())] = (name.strip(), version)
    return pins


def _requirement_lines(path):
    for line in pathlib.Path(path).read_text().splitlines():
        line = line.split('#', 1)[0].strip()
        if line:
            yield line


def tox_requirements(tox_ini=ROOT / 'tox.ini'):
    """Every requirement tox.ini installs, in any environment."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(tox_ini)
    found = []
    for section in parser.sections():
        for line in parser[section].get('deps', '').splitlines():
            line = line.split('#', 1)[0].strip()
            if not line or line.startswith(('{[', '-c')):
                continue
            if line.startswith('-r'):
                path = line[2:].strip().replace('{toxinidir}', str(ROOT))
                found.extend(_requirement_lines(path))
            else:
                found.append(line)
    return sorted(set(found))


def resolve(requirements, seed):
    """pip's resolution of ``requirements`` under ``seed``: ``{canonical
    name: (name, version)}``, and ``{dropped name: why}``."""
    seed = dict(seed)
    dropped = {}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = pathlib.Path(scratch)
        while True:
            constraints = scratch / 'seed.txt'
            constraints.write_text(''.join(
                '%s===%s\n' % pin for pin in seed.values()))
            report = scratch / 'report.json'
            result = subprocess.run(
                [sys.executable, '-m', 'pip', 'install', '--dry-run',
                 '--ignore-installed', '--report', str(report),
                 '-c', str(constraints), '-e',
                 '%s[%s]' % (ROOT, ','.join(EXTRAS))] + requirements,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                check=False)
            if result.returncode == 0:
                break
            conflicts = _CONFLICT.findall(result.stdout)
            if not conflicts:
                sys.exit('pip could not resolve the requirements:\n'
                         + result.stdout)
            needs = [match.groups() for match in map(
                _DEPENDS.match, result.stdout.splitlines()) if match]
            for name, _version in conflicts:
                seed.pop(canonical(name), None)
                dropped[canonical(name)] = '; '.join(
                    '%s needs %s' % (dependent, wanted)
                    for dependent, wanted in needs
                    if canonical(re.split(r'[<>=!~ \[]', wanted)[0]) == (
                        canonical(name)))
        resolved = {}
        for item in json.loads(report.read_text())['install']:
            metadata = item['metadata']
            if canonical(metadata['name']) != 'reserveapi':
                resolved[canonical(metadata['name'])] = (
                    metadata['name'], metadata['version'])
    return resolved, dropped


def write(resolved, path=OUTPUT):
    python = '%d.%d' % sys.version_info[:2]
    lines = ['%s===%s\n' % resolved[key] for key in sorted(resolved)]
    pathlib.Path(path).write_text(HEADER % python + ''.join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    start = parser.add_mutually_exclusive_group()
    start.add_argument('--seed', type=pathlib.Path,
                       help='Start from this constraints file (default: '
                            'the pins already in upper-constraints.txt).')
    start.add_argument('--upgrade', action='store_true',
                       help='Start from no pin: the newest versions.')
    args = parser.parse_args(argv)
    if args.upgrade:
        seed = {}
    else:
        seed = read_pins(args.seed or OUTPUT) if (
            args.seed or OUTPUT.exists()) else {}
    requirements = tox_requirements() + list(ALWAYS)
    resolved, dropped = resolve(requirements, seed)
    for key in sorted(resolved):
        name, version = resolved[key]
        if key not in seed:
            print('%s %s: not in the seed' % (name, version))
        elif seed[key][1] != version:
            print('%s %s, not the seed\'s %s (%s)' % (
                name, version, seed[key][1],
                dropped.get(key, 'no longer constrained')))
    write(resolved)
    print('Wrote %d pins to %s.' % (len(resolved), OUTPUT.name))
    return 0


if __name__ == '__main__':
    sys.exit(main())
