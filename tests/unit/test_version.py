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

"""One version, from setup.cfg and git through pbr: the installed
package's, which every command's ``--version`` prints in full."""

import configparser
import importlib
import importlib.metadata
import io
import pathlib

import fixtures
from oslo_config import cfg
from oslotest import base

from reserveapi import version

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMMANDS = ('reserveapi-api', 'reserveapi-dbsync', 'reserveapi-manage',
            'reserveapi-status', 'reserveapi-worker')


class TestVersionString(base.BaseTestCase):

    def test_the_installed_package_version_in_full(self):
        self.assertEqual(importlib.metadata.version('reserveapi'),
                         version.version_string())
        self.assertRegex(version.version_string(),
                         r'^\d+\.\d+\.\d+(\.0(a|b|rc)\d+)?(\.dev\d+)?$')

    def test_the_release_setup_cfg_names(self):
        """Between versions, a pre-release of setup.cfg's version (with
        or without the last version's tag in the clone); on the tagged
        commit, that version."""
        setup_cfg = configparser.ConfigParser()
        setup_cfg.read(ROOT / 'setup.cfg')
        planned = version.version_tuple(setup_cfg['metadata']['version'])
        self.assertTrue(planned.final)
        self.assertEqual(
            planned[:3], version.version_tuple()[:3],
            'the installed %s is not of setup.cfg\'s version: install the '
            'package again after changing it; pbr reads setup.cfg only '
            'through setup.py' % version.version_string())


class TestVersionTuple(base.BaseTestCase):

    def test_releases_in_order(self):
        ordered = ['1.0.0', '1.0.3', '1.1.0.dev5', '1.1.0', '1.1.1',
                   '1.10.0.dev1', '1.10.0', '2.0.0.dev1']
        self.assertEqual(
            ordered, sorted(reversed(ordered), key=version.version_tuple))
        self.assertEqual((1, 1, 0, False), version.version_tuple('1.1.0.dev5'))
        self.assertEqual((1, 1, 0, True), version.version_tuple('1.1.0'))

    def test_a_series_is_its_first_two_numbers(self):
        self.assertLess(version.version_tuple('1.0.7')[:2],
                        version.version_tuple('1.1.0.dev5')[:2])
        self.assertEqual(version.version_tuple('1.1.0.dev5')[:2],
                         version.version_tuple('1.1.2')[:2])

    def test_the_dev_count_is_not_compared(self):
        # A clone with the 1.0.0 tag counts from it; one without, from
        # the first commit.
        self.assertEqual(version.version_tuple('1.1.0.dev3'),
                         version.version_tuple('1.1.0.dev291'))
        self.assertEqual(version.version_tuple('1.1.0.dev3'),
                         version.version_tuple('1.1.0.0rc1'))

    def test_this_code(self):
        self.assertEqual(version.version_tuple(version.version_string()),
                         version.version_tuple())

    def test_not_a_version(self):
        for text in ('', 'latest', '1.x'):
            self.assertRaises(ValueError, version.version_tuple, text)


class TestVersionOption(base.BaseTestCase):

    def test_every_command_prints_the_version(self):
        scripts = {
            entry_point.name: entry_point
            for entry_point in importlib.metadata.distribution(
                'reserveapi').entry_points
            if entry_point.group == 'console_scripts'
            and entry_point.value.startswith('reserveapi.cmd.')}
        self.assertEqual(set(), set(COMMANDS) - set(scripts))
        for name, entry_point in sorted(scripts.items()):
            self.assertEqual((0, version.version_string() + '\n'),
                             self._version_of(entry_point), name)

    def _version_of(self, entry_point):
        """``main(['--version'])``'s exit code and stdout, on a
        configuration of its own (the real one refuses options registered
        after it parsed a command line)."""
        conf = cfg.ConfigOpts()
        importlib.import_module(entry_point.module)
        stdout = io.StringIO()
        with fixtures.MonkeyPatch('sys.stdout', stdout), \
                fixtures.MonkeyPatch(
                    'reserveapi.common.service.CONF', conf), \
                fixtures.MonkeyPatch(
                    '%s.CONF' % entry_point.module, conf):
            stopped = self.assertRaises(SystemExit, entry_point.load(),
                                        ['--version'])
        return stopped.code, stdout.getvalue()
