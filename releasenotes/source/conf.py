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

"""Sphinx configuration for the reserveapi release notes (reno)."""

import pathlib
import subprocess

extensions = ['reno.sphinxext', 'openstackdocstheme']

html_theme = 'openstackdocs'
openstackdocs_repo_name = 'openstack/reserveapi'
openstackdocs_bug_project = 'reserveapi'
openstackdocs_bug_tag = 'releasenotes'
openstackdocs_auto_name = False

project = 'reserveapi Release Notes'
copyright = '2026, reserveapi developers'
master_doc = 'index'
source_suffix = {'.rst': 'restructuredtext'}
pygments_style = 'native'
html_static_path = []


def _release_tags():
    """The release tags (``1.0.0``) of this clone, or None without git."""
    try:
        listed = subprocess.run(
            ['git', 'tag', '--list', '[0-9]*'], capture_output=True,
            check=True, cwd=pathlib.Path(__file__).parent, text=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return listed.stdout.split()


# reno groups the notes by release from these tags; a clone without them
# (git clone does not always bring them) builds, with every note in one
# section, and unreleased.rst says why.
if _release_tags() == []:
    tags.add('untagged')  # noqa: F821 - Sphinx provides tags.
