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

"""upper-constraints.txt covers what tox.ini installs, and every tox
environment but two installs with it."""

import configparser

import fixtures
from oslotest import base
from packaging import requirements

from tools import constraints

UNCONSTRAINED = {'testenv:latest', 'testenv:constraints'}
"""The newest releases on purpose, and the environment that writes the
pins."""


class TestUpperConstraints(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.pins = constraints.read_pins(constraints.OUTPUT)

    def test_every_requirement_is_pinned_within_its_range(self):
        wrong = []
        for line in constraints.tox_requirements() + list(
                constraints.ALWAYS):
            wanted = requirements.Requirement(line)
            pin = self.pins.get(constraints.canonical(wanted.name))
            if pin is None:
                wrong.append('%s: not pinned' % line)
            elif not wanted.specifier.contains(pin[1], prereleases=True):
                wrong.append('%s: pinned at %s' % (line, pin[1]))
        self.assertEqual(
            [], wrong, 'tox -e constraints writes upper-constraints.txt')

    def test_the_file_says_how_it_is_made(self):
        self.assertIn('tox -e constraints',
                      constraints.OUTPUT.read_text().split('\n\n')[0])

    def test_every_environment_installs_with_the_pins(self):
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(constraints.ROOT / 'tox.ini')
        pinned = '-c{env:TOX_CONSTRAINTS_FILE:{toxinidir}/upper-constraints'
        self.assertIn(pinned, parser['testenv']['install_command'])
        overriding = {section for section in parser.sections()
                      if 'install_command' in parser[section]}
        self.assertEqual({'testenv'} | UNCONSTRAINED, overriding)
        for section in UNCONSTRAINED:
            self.assertNotIn('-c', parser[section]['install_command'])


class TestReadPins(base.BaseTestCase):

    def test_openstack_lists_with_markers_and_comments(self):
        path = self.useFixture(fixtures.TempDir()).join('uc')
        with open(path, 'w') as stream:
            stream.write('# a comment\noslo.db===18.0.0\n'
                         "numpy===2.2.6;python_version=='2.7'\n"
                         "numpy===2.3.1;python_version>='3.10'\n"
                         'Paste==3.10.1  # old style\n-e .\n')
        self.assertEqual(
            {'oslo-db': ('oslo.db', '18.0.0'), 'numpy': ('numpy', '2.3.1'),
             'paste': ('Paste', '3.10.1')},
            constraints.read_pins(path))
