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

"""An operator's mistakes, as an operator makes them: every console
script and the WSGI application run as subprocesses on a configuration
that is wrong in one way. Each says so in one line naming the file, the
option and what would be valid, with exit code 2 for a mistake in the
command line or the configuration and 1 for a failure the command could
not get past, and no traceback unless --debug. And where the
configuration comes from without --config-file: the same file for all,
said at start, and no database made by a command that only reads.
"""

import os
import re
import subprocess
import sys

import fixtures
from oslotest import base

from reserveapi_testing import deployment
from tests.functional.test_startup import KEYSTONE_MISSING

IRONIC_MISSING = (
    '[ironic] lacks auth_type, auth_url, username or user_id, password, '
    'project_name or project_id: set them (see the sample configuration). '
    '[inventory] source is ironic: the inventory sync and the claims in '
    'Ironic need them.')
PLACEMENT_MISSING = (
    '[placement] lacks auth_type, auth_url, username or user_id, password, '
    'project_name or project_id: set them (see the sample configuration). '
    'Until then the aggregate mirror cannot reach Placement and every '
    'change stays pending.')
NO_SCHEMA = ('The database has no schema yet, or an older one: run '
             '"reserveapi-dbsync upgrade"')


WSGI = [sys.executable, '-c', 'import reserveapi.wsgi.api']
"""The WSGI application as a server imports it."""


BARE = '<no value>'
# A value written as nothing: the option's name alone on its line.

# (what, command and arguments, {section: {option: value}} changed in a
#  working configuration, exit code, the one line);
# {config} is the configuration file, {dir} its directory, {garbage} the
# number of the line that is no option.
MISTAKES = [
    ('a config file that is not there',
     ['reserveapi-manage', '--config-file', '{dir}/nope.conf',
      'mirror-status'], {}, 2,
     'Configuration file {dir}/nope.conf not found (named by '
     '--config-file).'),
    ('a config file that is not there, named after the command',
     ['reserveapi-dbsync', 'current', '--config-file', '{dir}/nope.conf'],
     {}, 2,
     'Configuration file {dir}/nope.conf not found (named by '
     '--config-file).'),
    ('a config directory that is not there',
     ['reserveapi-worker', '--config-dir', '{dir}/nope.d', '--once'], {}, 2,
     'Configuration directory {dir}/nope.d not found (named by '
     '--config-dir).'),
    ('a line that is no option',
     ['reserveapi-dbsync', '--config-file', '{config}', 'current'],
     {'api': {'garbage line': BARE}}, 2,
     "Cannot parse the configuration file {config}: line {garbage}, No ':' "
     "or '=' "
     "found in assignment: 'garbage line'."),
    ('a word for a number',
     ['reserveapi-worker', '--config-file', '{config}', '--once'],
     {'inventory': {'sync_interval': 'sixty'}}, 2,
     '[inventory] sync_interval = sixty in {config} is not valid: expected '
     'an integer of at least 0.'),
    ('a misspelt choice',
     ['reserveapi-api', '--config-file', '{config}'],
     {'api': {'auth_strategy': 'keystnoe'}}, 2,
     '[api] auth_strategy = keystnoe in {config} is not valid: expected '
     'one of keystone, noauth.'),
    ('a port out of range',
     ['reserveapi-api', '--config-file', '{config}'],
     {'api': {'port': '99999'}}, 2,
     '[api] port = 99999 in {config} is not valid: expected an integer '
     'from 0 to 65535.'),
    ('an option of a mode not chosen, still checked',
     ['reserveapi-manage', '--config-file', '{config}', 'sync-nodes'],
     {'ironic': {'claim_nodes': 'maybe'}}, 2,
     '[ironic] claim_nodes = maybe in {config} is not valid: expected true '
     'or false.'),
    ('an inventory source there is none of',
     ['reserveapi-status', '--config-file', '{config}', 'upgrade', 'check'],
     {'inventory': {'source': 'nova'}}, 2,
     '[inventory] source = nova in {config} is not valid: expected one of '
     'file, ironic.'),
    ('a database kind SQLAlchemy does not know',
     ['reserveapi-dbsync', '--config-file', '{config}', 'current'],
     {'database': {'connection': 'postgres://reserveapi:secret@db/x'}}, 2,
     '[database] connection = postgres://reserveapi:***@db/x in {config} '
     'names no database SQLAlchemy knows (postgres): expected '
     'postgresql+psycopg2://, mysql+pymysql:// or sqlite:///.'),
    ('a database driver that is not installed',
     ['reserveapi-manage', '--config-file', '{config}', 'mirror-status'],
     {'database': {'connection': 'postgresql+pg8000://u:secret@db/x'}}, 2,
     '[database] connection = postgresql+pg8000://u:***@db/x in {config} '
     'needs the Python module pg8000, which is not installed: write '
     "postgresql+psycopg2:// and pip install 'reserveapi[postgresql]'."),
    ('no database URL at all',
     ['reserveapi-worker', '--config-file', '{config}', '--once'],
     {'database': {'connection': 'reserveapi on the controller'}}, 2,
     '[database] connection in {config} is not a database URL: expected '
     'one such as postgresql+psycopg2://USER:PASSWORD@HOST/reserveapi, '
     'mysql+pymysql://USER:PASSWORD@HOST/reserveapi or '
     'sqlite:////PATH/reserveapi.sqlite.'),
    ('a log directory that is not there',
     ['reserveapi-manage', '--config-file', '{config}', 'mirror-status'],
     {'DEFAULT': {'log_dir': '{dir}/no-such-dir'}}, 2,
     'Cannot write the log file {dir}/no-such-dir/reserveapi-manage.log: No '
     'such file or directory ([DEFAULT] log_dir and log_file).'),
    ('keystone without its section',
     ['reserveapi-api', '--config-file', '{config}'],
     {'api': {'auth_strategy': 'keystone'}}, 2, KEYSTONE_MISSING),
    ('ironic as the source without its section',
     ['reserveapi-worker', '--config-file', '{config}', '--once'],
     {'inventory': {'source': 'ironic'},
      'placement': {'auth_type': 'none',
                    'endpoint_override': 'http://127.0.0.1:9'}}, 2,
     IRONIC_MISSING),
    ('placement required without its section',
     ['reserveapi-worker', '--config-file', '{config}', '--once'],
     {'mirror': {'require_placement_credentials': 'true'}}, 2,
     PLACEMENT_MISSING),
    ('a sub-command without its argument',
     ['reserveapi-status', '--config-file', '{config}', 'upgrade'], {}, 2,
     'usage: reserveapi-status upgrade [-h] [--json] {{check}}\n'
     'reserveapi-status upgrade: error: the following arguments are '
     'required: check'),
    ('the schema never made',
     ['reserveapi-manage', '--config-file', '{config}', 'mirror-status'],
     {'database': {'connection': 'sqlite:///{dir}/empty.sqlite'}}, 1,
     NO_SCHEMA + ' (OperationalError no such table: mirror_hosts).'),
    ('the database file never made',
     ['reserveapi-manage', '--config-file', '{config}', 'expire-reservations'],
     {'database': {'connection': 'sqlite:///{dir}/none/reserveapi.sqlite'}},
     1, NO_SCHEMA + ' (FileNotFoundError {dir}/none/reserveapi.sqlite does '
     'not exist ([database] connection)).'),
    ('an inventory file that is not there',
     ['reserveapi-manage', '--config-file', '{config}', 'sync-nodes'],
     {'inventory': {'file': '{dir}/nodes.yml'}}, 1,
     "Inventory not synced: Invalid input: cannot read the inventory: "
     "[Errno 2] No such file or directory: '{dir}/nodes.yml'"),
    ('a directory for a file',
     ['reserveapi-manage', '--config-file', '{dir}', 'mirror-status'], {},
     2, 'Configuration file {dir} is a directory (--config-dir reads the '
     'files of one).'),
    ('a revision there is none of',
     ['reserveapi-dbsync', '--config-file', '{config}', 'upgrade',
      '--revision', '0099_nothing'], {}, 2,
     "Can't locate revision identified by '0099_nothing': --revision takes "
     'head or a revision of reserveapi/db/migrations/versions/.'),
    ('a policy file that does not parse',
     ['reserveapi-api', '--config-file', '{config}'],
     {'oslo_policy': {'policy_file': '{dir}/policy.yaml'}}, 2,
     '[oslo_policy] policy_file {dir}/policy.yaml is not valid: while '
     "parsing a flow node expected the node content, but found '<stream "
     """end>' in "<unicode string>", line 2, column 1: ^."""),
    ('a policy rule that does not parse',
     ['reserveapi-api', '--config-file', '{config}'],
     {'oslo_policy': {'policy_file': '{dir}/rule.yaml'}}, 2,
     '[oslo_policy] policy_file {dir}/rule.yaml: '
     '"reserveapi:reservation:create": "role:admin or" does not parse: see '
     '"oslopolicy-sample-generator --namespace reserveapi" for the '
     'syntax.'),
    ('a misspelt rule name',
     ['reserveapi-api', '--config-file', '{config}'],
     {'oslo_policy': {'policy_file': '{dir}/name.yaml'}}, 2,
     '[oslo_policy] policy_file {dir}/name.yaml names '
     'reserveapi:reservaton:create, which reserveapi has no rule of and no '
     'rule refers to (did you mean reserveapi:reservation:create?).'),
    ('a policy file that is not there',
     ['reserveapi-api', '--config-file', '{config}'],
     {'oslo_policy': {'policy_file': '{dir}/nope.yaml'}}, 2,
     '[oslo_policy] policy_file {dir}/nope.yaml is not there: write it, or '
     'remove the option to use the default rules.'),
    ('a sync from ironic without its section',
     ['reserveapi-manage', '--config-file', '{config}', 'sync-nodes'],
     {'inventory': {'source': 'ironic'}}, 2, IRONIC_MISSING),
    ('the WSGI application on a file that is not there',
     ['RESERVEAPI_CONFIG_FILE={dir}/nope.conf'] + WSGI, {}, 3,
     'Configuration file {dir}/nope.conf not found (named by '
     'RESERVEAPI_CONFIG_FILE).'),
    ('the WSGI application on a misspelt choice',
     ['RESERVEAPI_CONFIG_FILE={config}'] + WSGI,
     {'inventory': {'source': 'irnoic'}}, 3,
     '[inventory] source = irnoic in {config} is not valid: expected one of '
     'file, ironic.'),
]


class TestOneLinePerMistake(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.deployment = self.useFixture(deployment.Deployment())
        self.deployment.migrate()
        self.dir = self.deployment.path
        self.working = {section: dict(values) for section, values
                        in self.deployment.config.items()}
        # An empty database file: no schema in it.
        open(os.path.join(self.dir, 'empty.sqlite'), 'w').close()
        with open(os.path.join(self.dir, 'policy.yaml'), 'w') as stream:
            stream.write('"reserveapi:nodes:list": [\n')
        with open(os.path.join(self.dir, 'rule.yaml'), 'w') as stream:
            # An alias other rules use is no unknown name.
            stream.write('"reserveapi:reservation:create": "role:admin or"\n'
                         '"admins": "role:admin"\n'
                         '"reserveapi:reservation:delete": "rule:admins"\n')
        with open(os.path.join(self.dir, 'name.yaml'), 'w') as stream:
            stream.write('"reserveapi:reservaton:create": "role:admin"\n')

    def expand(self, text):
        with open(self.deployment.config_file) as stream:
            lines = stream.read().splitlines()
        garbage = [number for number, line in enumerate(lines, 1)
                   if line.startswith('garbage line')]
        return text.format(config=self.deployment.config_file, dir=self.dir,
                           garbage=garbage[0] if garbage else None)

    def make(self, changes):
        config = {section: dict(values)
                  for section, values in self.working.items()}
        for section, values in changes.items():
            for option, value in values.items():
                config.setdefault(section, {})[option] = self.expand(value)
        self.deployment.config = config
        self.deployment.write_config()
        with open(self.deployment.config_file) as stream:
            text = stream.read()
        with open(self.deployment.config_file, 'w') as stream:
            stream.write(text.replace(' = %s\n' % BARE, '\n'))

    def run_mistake(self, argv, debug=False):
        """Run ``argv``: ``NAME=VALUE`` words first set the environment,
        a console script's name is this virtualenv's."""
        argv = [self.expand(arg) for arg in argv]
        env = dict(os.environ)
        while '=' in argv[0]:
            name, value = argv.pop(0).split('=', 1)
            env[name] = value
        if argv[0] != sys.executable:
            argv[0] = deployment.script(argv[0])
        return subprocess.run(
            argv + (['--debug'] if debug else []), capture_output=True,
            text=True, check=False, env=env,
            timeout=deployment.COMMAND_TIMEOUT)

    def test_every_mistake_is_one_line(self):
        self.assertGreaterEqual(len(MISTAKES), 15)
        wrong = {}
        for what, argv, changes, code, line in MISTAKES:
            self.make(changes)
            process = self.run_mistake(argv)
            said = deployment.not_logged(process.stderr)
            expected = (code, self.expand(line).splitlines(), False)
            actual = (process.returncode, said,
                      'Traceback' in process.stdout + process.stderr)
            if actual != expected:
                wrong[what] = (expected, actual, process.stderr[-1500:])
        self.assertEqual({}, wrong)

    def test_a_worker_before_dbsync_says_what_to_do(self):
        self.make({'database': {
            'connection': 'sqlite:///{dir}/empty.sqlite'}})
        process = self.run_mistake(
            ['reserveapi-worker', '--config-file', '{config}', '--once'])
        self.assertEqual(1, process.returncode)
        self.assertNotIn('Traceback', process.stderr)
        failed = [line.split(' [-] ', 1)[1]
                  for line in process.stderr.splitlines()
                  if ' failed: ' in line]
        # One line for every job: the cure is one command.
        self.assertEqual(1, len(failed), process.stderr)
        self.assertRegex(failed[0], r'^Every job failed: database: '
                         r'OperationalError: no such table: \w+: '
                         + re.escape(NO_SCHEMA) + r'\.$')

    def test_debug_adds_the_traceback(self):
        self.make({'inventory': {'source': 'ironic'}})
        process = self.run_mistake(
            ['reserveapi-worker', '--config-file', '{config}', '--once'],
            debug=True)
        self.assertEqual(2, process.returncode)
        self.assertIn('Traceback', process.stderr)
        self.assertEqual(IRONIC_MISSING, process.stderr.splitlines()[-1])


class TestMisspeltNames(base.BaseTestCase):

    def test_are_warned_of_with_the_name_meant(self):
        fixture = self.useFixture(deployment.Deployment())
        fixture.migrate()
        fixture.config['inventory']['sourse'] = 'ironic'
        fixture.config['inventroy'] = {'source': 'ironic'}
        # Not ours to judge: a library's section, a plugin's option.
        fixture.config['oslo_messaging_rabbit'] = {'heartbeat_rate': '3'}
        fixture.config['ironic'] = {'username': 'reserveapi'}
        fixture.write_config()
        process = fixture.run('reserveapi-manage', 'mirror-status')
        self.assertEqual(0, process.returncode, process.stderr)
        self.assertEqual(
            ['[inventory] sourse in %s is no option, so it is ignored (did '
             'you mean source?).' % fixture.config_file,
             '[inventroy] in %s is no section, so it is ignored (did you '
             'mean [inventory]?).' % fixture.config_file],
            [line.split(' [-] ', 1)[1] for line in process.stderr
             .splitlines() if ' WARNING ' in line])

    def test_the_misspelling_comes_before_what_it_caused(self):
        fixture = self.useFixture(deployment.Deployment())
        del fixture.config['api']['auth_strategy']
        fixture.config['api']['auth_stratgy'] = 'noauth'
        fixture.write_config()
        process = fixture.run('reserveapi-api')
        said = [line.split(' [-] ', 1)[-1]
                for line in process.stderr.splitlines()]
        self.assertEqual(
            (2, ['Configuration: %s' % fixture.config_file,
                 '[api] auth_stratgy in %s is no option, so it is ignored '
                 '(did you mean auth_strategy?).' % fixture.config_file,
                 KEYSTONE_MISSING]),
            (process.returncode, said))

    def test_a_misspelt_database_url_never_falls_back_to_the_default(self):
        fixture = self.useFixture(deployment.Deployment())
        fixture.migrate()
        url = fixture.config['database'].pop('connection')
        fixture.config['database']['conection'] = url
        fixture.write_config()
        process = fixture.run('reserveapi-manage', 'sync-nodes')
        self.assertEqual(
            (2, ['[database] conection in %s is no option (did you mean '
                 'connection?), and [database] connection is not set: every '
                 'command would use its default instead. Correct the name.'
                 % fixture.config_file]),
            (process.returncode, deployment.not_logged(process.stderr)))
        # Beside the option itself, the misspelling is only a warning.
        fixture.config['database']['connection'] = url
        fixture.write_config()
        process = fixture.run('reserveapi-manage', 'sync-nodes')
        self.assertEqual(0, process.returncode, process.stderr)
        self.assertIn('[database] conection in %s is no option, so it is '
                      'ignored (did you mean connection?).'
                      % fixture.config_file, process.stderr)


class TestGunicornRefusesOnce(base.BaseTestCase):
    """Under gunicorn a mistake stops the master: one line, no traceback,
    no worker started again and again."""

    def test_a_wrong_value_stops_gunicorn(self):
        fixture = self.useFixture(deployment.Deployment())
        fixture.config['api']['auth_strategy'] = 'keystnoe'
        fixture.write_config()
        process = subprocess.run(
            [deployment.script('gunicorn'), '--workers', '4', '--bind',
             '127.0.0.1:%d' % fixture.port,
             'reserveapi.wsgi.api:application'],
            env=dict(os.environ, RESERVEAPI_CONFIG_FILE=fixture.config_file),
            capture_output=True, text=True, check=False,
            timeout=deployment.COMMAND_TIMEOUT)
        self.assertEqual(3, process.returncode, process.stderr[-2000:])
        self.assertNotIn('Traceback', process.stderr)
        mistake = ('[api] auth_strategy = keystnoe in %s is not valid: '
                   'expected one of keystone, noauth.' % fixture.config_file)
        self.assertEqual([mistake], [line for line in process.stderr
                                     .splitlines() if 'auth_strategy' in line])
        self.assertIn('Reason: Worker failed to boot.', process.stderr)


class TestOneDefaultFile(base.BaseTestCase):
    """Without --config-file every command and the WSGI application read
    the first reserveapi.conf of ~/.reserveapi/, ~/, /etc/reserveapi/ and
    /etc/, and say which."""

    def setUp(self):
        super().setUp()
        for path in ('/etc/reserveapi/reserveapi.conf',
                     '/etc/reserveapi.conf'):
            if os.path.exists(path):
                self.skipTest('%s exists: this machine has a configuration '
                              'every command would read' % path)
        self.home = self.useFixture(fixtures.TempDir()).path
        self.env = dict(os.environ, HOME=self.home)
        self.env.pop('RESERVEAPI_CONFIG_FILE', None)

    def run_command(self, *argv):
        argv = list(argv)
        if argv[0] != sys.executable:
            argv[0] = deployment.script(argv[0])
        return subprocess.run(argv, cwd=self.home, env=self.env,
                              capture_output=True, text=True, check=False,
                              timeout=deployment.COMMAND_TIMEOUT)

    def test_commands_and_the_application_read_the_same_file(self):
        state = os.path.join(self.home, '.reserveapi')
        os.mkdir(state)
        config_file = os.path.join(state, 'reserveapi.conf')
        with open(config_file, 'w') as stream:
            stream.write('[DEFAULT]\nservice_heartbeat_interval = 0\n'
                         '[api]\nauth_strategy = noauth\n'
                         '[database]\nconnection = sqlite:///%s/x.sqlite\n'
                         % state)
        said = 'INFO reserveapi.common.service [-] Configuration: %s' % (
            config_file)
        upgrade = self.run_command('reserveapi-dbsync', 'upgrade')
        self.assertEqual(0, upgrade.returncode, upgrade.stderr)
        self.assertIn(said, upgrade.stderr)
        self.assertTrue(os.path.exists(os.path.join(state, 'x.sqlite')))
        application = self.run_command(sys.executable, '-c',
                                       'import reserveapi.wsgi.api')
        self.assertEqual(0, application.returncode, application.stderr)
        self.assertIn(said, application.stderr)

    def test_without_any_file_it_says_so_and_creates_nothing(self):
        for argv in (['reserveapi-dbsync', 'current'],
                     ['reserveapi-status', 'upgrade', 'check']):
            process = self.run_command(*argv)
            self.assertIn('No configuration file: none of %s/.reserveapi/'
                          'reserveapi.conf, %s/reserveapi.conf, '
                          '/etc/reserveapi/reserveapi.conf, '
                          '/etc/reserveapi.conf exists' % (
                              self.home, self.home), process.stderr)
            self.assertNotIn('Traceback', process.stderr)
            self.assertEqual([], os.listdir(self.home), argv)
        self.assertEqual('The database has no schema yet.\n',
                         self.run_command('reserveapi-dbsync',
                                          'current').stdout)
