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

"""Which version this code is: the one answer, for every command.

pbr writes the version into the package's metadata when it is built or
installed: setup.cfg's ``[metadata] version`` is the version main is
heading for, and git says how far it is (``1.1.0.dev290`` between
versions, ``1.1.0`` on the commit tagged ``1.1.0``). ``--version`` and
the processes' heartbeats ask here, so they say what ``pip show
reserveapi`` says; doc/source/contributor/releases.rst has the policy.
"""

import typing

import pbr.version

version_info = pbr.version.VersionInfo('reserveapi')


class Version(typing.NamedTuple):
    """A version's place in the order of versions; tuples compare."""

    major: int
    minor: int
    patch: int
    final: bool
    """False for a build before the final version (``1.1.0.dev290``,
    ``1.1.0.0rc1``), which sorts before it. The dev count is left out:
    it counts commits since the last tag the clone has, so two builds of
    one commit may differ in it."""


def version_string():
    """The full version of the installed package: ``'1.1.0.dev290'``
    (pbr's ``release_string``, not its shorter ``version_string``)."""
    return version_info.release_string()


def version_tuple(text=None):
    """``Version(major, minor, patch, final)`` of ``text``, a version
    string such as another process reported, or of this code.

    ``version_tuple('1.0.3') < version_tuple('1.1.0.dev5') <
    version_tuple('1.1.0')``; ``ValueError`` for a string that is not a
    version.
    """
    parts = pbr.version.SemanticVersion.from_pip_string(
        version_string() if text is None else text).version_tuple()
    return Version(*parts[:3], final=parts[3] == 'final')
