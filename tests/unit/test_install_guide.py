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

"""The install guide can be followed by ``tox -e install-guide``
(reserveapi_testing/install_guide.py): its variants together take every
block of both paths, its directions are understood, and what it says to
run without systemd is what the units run.
"""

import configparser
import shlex
from unittest import mock

from oslotest import base

from reserveapi_testing import install_guide

UNITS = install_guide.ROOT / 'etc' / 'systemd'


def unit(name):
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    parser.read(UNITS / name)
    return parser['Service']


class TestEveryBlockRuns(base.BaseTestCase):

    def test_the_variants_take_every_step_of_both_paths(self):
        for page in install_guide.PAGES:
            steps = install_guide.steps(page)
            variants = install_guide.VARIANTS[page].values()
            self.assertGreater(len(steps), 10, page)
            self.assertEqual([], [str(step) for step in steps if not any(
                step.runs_in(tags) for tags in variants)], page)
            known = set().union(*variants)
            self.assertEqual([], [str(step) for step in steps
                                  if step.only - known], page)

    def test_each_database_is_some_variants(self):
        for page in install_guide.PAGES:
            for tags in install_guide.VARIANTS[page].values():
                servers = {server for server, _kind, _name
                           in install_guide.created_databases(page, tags)}
                self.assertEqual(tags & {'postgresql', 'mariadb'}, servers,
                                 (page, tags))

    def test_commands_need_no_sudo(self):
        for page in install_guide.PAGES:
            for step in install_guide.steps(page):
                if step.kind == 'console':
                    for _prompt, command in step.commands():
                        self.assertNotIn('sudo ', command, str(step))


class TestUnitsAreTheGuidesCommands(base.BaseTestCase):
    """The production page's commands without systemd run the units'
    ExecStart, as their User, with their Environment."""

    def foreground_commands(self):
        return [command for step in install_guide.steps('production.rst')
                if step.only == {'foreground'}
                for _prompt, command in step.commands()]

    def as_the_unit_runs_it(self, name):
        service = unit(name)
        environment = service.get('Environment')
        return ' '.join(['runuser', '-u', service['User'], '--']
                        + (['env', environment] if environment else [])
                        + [service['ExecStart']])

    def test_both_units(self):
        self.assertEqual(
            [self.as_the_unit_runs_it('reserveapi-api.service'),
             self.as_the_unit_runs_it('reserveapi-worker.service')],
            self.foreground_commands())

    def test_the_api_logs_each_request(self):
        self.assertIn('--access-logfile -', shlex.join(shlex.split(
            unit('reserveapi-api.service')['ExecStart'])))


class TestDirections(base.BaseTestCase):

    def steps(self, text):
        with mock.patch.object(install_guide.pathlib.Path, 'read_text',
                               return_value=text):
            return install_guide.steps('page.rst')

    def test_blocks_and_directions(self):
        steps = self.steps(
            'Text.\n\n'
            '.. install-guide: only postgresql\n'
            '.. code-block:: console\n\n'
            '   # psql -c "x"\n'
            '   $ pip install \\\n'
            '       x\n\n'
            '.. code-block:: ini\n'
            '   :caption: add to ~/a.conf\n\n'
            '   [database]\n'
            '   connection = x\n\n'
            '.. install-guide: background until output Jobs:\n'
            '.. code-block:: console\n\n'
            '   $ worker\n\n'
            '.. install-guide: wait until http://127.0.0.1:6390/v1 answers\n')
        self.assertEqual(
            [('console', frozenset({'postgresql'}), None, ''),
             ('ini', frozenset(), None, '~/a.conf'),
             ('console', frozenset(), ('output', 'Jobs:'), ''),
             ('wait', frozenset(), None, 'http://127.0.0.1:6390/v1')],
            [(step.kind, step.only, step.background, step.target)
             for step in steps])
        self.assertEqual([('#', 'psql -c "x"'),
                          ('$', 'pip install \\\n    x')],
                         steps[0].commands())

    def test_what_it_cannot_follow_is_refused(self):
        for text in ('.. install-guide: only\n',
                     '.. install-guide: skip this\n',
                     '.. install-guide: only mariadb\n\nText.\n',
                     '.. code-block:: ini\n\n   [api]\n   port = 1\n',
                     '.. code-block:: none\n\n   x\n'):
            self.assertRaises(install_guide.GuideError, self.steps, text)


class TestEdits(base.BaseTestCase):

    def test_options_are_set_where_they_belong(self):
        self.assertEqual(
            '# head\n[api]\nport = 1\n# kept\nhost_ip = ::1\n\n'
            '[database]\nconnection = b\n\n[new]\nx = 1\n',
            install_guide.merged(
                '# head\n[api]\nport = 6390\n# kept\n\n'
                '[database]\nconnection = a\n',
                '[api]\nport = 1\nhost_ip = ::1\n[database]\n'
                'connection = b\n[new]\nx = 1\n'))

    def test_the_port_and_placeholders_are_this_hosts(self):
        machine = install_guide.Machine(substitutions=[
            ('CONTROLLER:5000', '127.0.0.1:35357'),
            ('CONTROLLER', '127.0.0.1'), ('RESERVEAPI_PASS', 'secret')])
        machine.port = 16390
        self.assertEqual(
            'http://127.0.0.1:16390 http://127.0.0.1:35357 secret 63901 '
            '1.6390',
            machine.localize('http://CONTROLLER:6390 http://CONTROLLER:5000 '
                             'RESERVEAPI_PASS 63901 1.6390'))
