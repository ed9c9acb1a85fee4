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


"""The guides cannot drift from the code.

Every ``.. code-block:: ini`` snippet in ``doc/source`` is read by
oslo.config with the options of every namespace the sample configuration
is generated from (plus the options of each group's keystoneauth1
plugin): an unknown group or option, or a value the option refuses,
fails. A snippet captioned ``nova.conf`` is checked against the Nova
side's namespaces instead, in the groups we own (Nova's own groups are
Nova's to check). The CLI reference names every console script and every
``reserveapi-manage`` command. The operator guide's "Who may do what"
table says what the RBAC matrix the Keystone suite walks says, and the
install guide registers and names the catalog type the code uses.
"""

import configparser
import copy
import importlib.metadata
import pathlib
import re
import tempfile

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslotest import base
import yaml

from reserveapi.api import microversion
from reserveapi.cmd import manage
from reserveapi_testing import keystone as keystone_fixture

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / 'doc' / 'source'
GENERATOR = ROOT / 'etc' / 'reserveapi' / 'config-generator.conf'
NOVA_GENERATOR = ROOT / 'etc' / 'reserveapi' / 'nova-config-generator.conf'
NOVA_CAPTION = re.compile(r'^\s*:caption: nova\.conf\s*$')
BLAZAR_GENERATOR = (ROOT / 'etc' / 'reserveapi'
                    / 'blazar-config-generator.conf')
BLAZAR_CAPTION = re.compile(r'^\s*:caption: blazar\.conf\s*$')
OTHER_SERVICES = ((NOVA_CAPTION, NOVA_GENERATOR),
                  (BLAZAR_CAPTION, BLAZAR_GENERATOR))
"""Another service's file, by its caption, and the generator of what of
it is ours (its ``[reserveapi]``)."""
FOREIGN_CAPTION = re.compile(r'^\s*:caption: kolla-build\.conf\s*$')
# Another program's file, with options of its own (Kolla's build).
DIRECTIVE = re.compile(r'^(\s*)\.\. code-block:: ini\s*$')
SECTION = re.compile(r'^\[([^\]]+)\]$')
RBAC_MATRIX = ROOT / 'tests' / 'keystone' / 'rbac_matrix.yaml'
ADMIN_GUIDE = DOC / 'admin' / 'index.rst'
INSTALL_GUIDE = DOC / 'install' / 'production.rst'
PRODUCTION_CONF = ROOT / 'etc' / 'reserveapi' / 'reserveapi.conf'
OWNER_LESSEE_ROW = "a node's owner and lessee"
COLUMNS = {
    # the table's column: the matrix's personas it speaks for
    'admin': ('admin', 'other_domain_admin'),
    'service': ('service',),
    'member': ('member_a',),
    'manager': ('manager_a',),
    'reader': ('reader_a', 'reader_b', 'other_domain_reader'),
    'no role': ('no_role',),
}
NOT_PROJECT_SCOPED = ('domain_admin', 'system_admin', 'system_reader')
UNAUTHENTICATED = ('no_token', 'bogus_token', 'expired_token',
                   'revoked_token')


def ini_snippets():
    """``(file, line, text, generator)`` of every ini code block in the
    guides; ``generator`` is the config-generator file its options come
    from.
    """
    for path in sorted(DOC.rglob('*.rst')):
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            match = DIRECTIVE.match(line)
            if match and not any(FOREIGN_CAPTION.match(option) for option
                                 in lines[number + 1:number + 4]):
                generator = next(
                    (generator for caption, generator in OTHER_SERVICES
                     if any(caption.match(option)
                            for option in lines[number + 1:number + 4])),
                    GENERATOR)
                yield (path.relative_to(ROOT), number + 1,
                       _block(lines[number + 1:], len(match.group(1))),
                       generator)


def _block(lines, indent):
    """The directive's content: the lines indented deeper than it, but
    its options (``:caption: ...``).
    """
    content = []
    for line in lines:
        if not content and line.strip().startswith(':'):
            continue
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        content.append(line)
    body = [line for line in content if line.strip()]
    margin = min(len(line) - len(line.lstrip()) for line in body)
    return '\n'.join(line[margin:] for line in content).strip() + '\n'


def _entries(text):
    """``(section, key)`` in file order; oslo.config ignores unknown keys,
    so they are listed here.
    """
    section = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(('#', ';')):
            continue
        match = SECTION.match(line)
        if match:
            section = match.group(1)
            yield section, None
        else:
            yield section, line.split('=', 1)[0].strip()


def _namespaces(generator):
    """The generator file's ``namespace = ...`` lines (repeated keys,
    which configparser would collapse).
    """
    return [line.split('=', 1)[1].strip()
            for line in generator.read_text().splitlines()
            if line.split('=', 1)[0].strip() == 'namespace']


def _options(generator=GENERATOR):
    """``[(group, opts)]`` of every namespace a sample comes from."""
    wanted = set(_namespaces(generator))
    found = []
    for entry_point in importlib.metadata.entry_points(
            group='oslo.config.opts'):
        if entry_point.name in wanted:
            found.extend(entry_point.load()())
    return found


def problems(text, options, only_our_groups=False):
    """What oslo.config finds wrong in one snippet: a list of strings.

    ``only_our_groups`` checks just the groups ``options`` define (a
    nova.conf snippet also shows Nova's own groups).
    """
    conf = cfg.ConfigOpts()
    groups = set()
    for group, opts in options:
        name = getattr(group, 'name', group)
        groups.add(name)
        for opt in opts:
            try:
                conf.register_opt(_optional(opt),
                                  group=None if name == 'DEFAULT' else name)
            except cfg.DuplicateOptError:
                # oslo.limit lists options of several keystoneauth1
                # plugins (username...), alike but for their help: the
                # generator keeps one of each name, and so does this.
                pass
    entries = [(section, key) for section, key in _entries(text)
               if not only_our_groups or section in groups]
    for section, key in entries:
        if key == 'auth_type' and section != 'DEFAULT':
            _register_plugin(conf, section, text)
    with tempfile.NamedTemporaryFile('w', suffix='.conf') as snippet:
        snippet.write(text)
        snippet.flush()
        conf([], project='reserveapi', default_config_files=[snippet.name],
             default_config_dirs=[], use_env=False)
        return [problem for problem in (
            _check(conf, section, key) for section, key in entries)
            if problem]


def _optional(opt):
    """A copy that a snippet may leave unset (a snippet shows a part of
    a file: ``auth_url`` is required only where a plugin needs it).
    """
    opt = copy.copy(opt)
    opt.required = False
    return opt


def _register_plugin(conf, section, text):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    loader = ks_loading.get_plugin_loader(parser.get(section, 'auth_type'))
    for opt in ks_loading.get_auth_plugin_conf_options(loader):
        try:
            conf.register_opt(_optional(opt), group=section)
        except cfg.DuplicateOptError:
            pass


def _check(conf, section, key):
    """One entry's problem, or None; an unknown group is reported once,
    at its header.
    """
    if section == 'DEFAULT':
        where = conf
    else:
        try:
            where = conf[section]
        except cfg.NoSuchOptError:
            return 'unknown group [%s]' % section if key is None else None
    if key is None:
        return None
    try:
        getattr(where, key)
    except (cfg.NoSuchOptError, AttributeError):
        return 'unknown option [%s] %s' % (section, key)
    except cfg.ConfigFileValueError:
        return 'bad value for [%s] %s' % (section, key)
    return None


class TestConfigurationSnippets(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.options = _options()

    def test_every_snippet_parses_with_our_options(self):
        snippets = list(ini_snippets())
        self.assertGreaterEqual(len(snippets), 7)
        for _caption, generator in OTHER_SERVICES:
            self.assertIn(generator, [item[3] for item in snippets])
        found = {}
        for path, line, text, generator in snippets:
            other = generator != GENERATOR
            options = _options(generator) if other else self.options
            found.update({'%s:%d: %s' % (path, line, problem): text
                          for problem in problems(text, options, other)})
        self.assertEqual({}, found)

    def test_the_check_catches_drift(self):
        self.assertEqual(
            ['unknown group [mirorr]', 'unknown option [mirror] retry_every',
             'bad value for [mirror] retry_interval',
             'unknown option [placement] user_name'],
            problems('[mirorr]\nx = 1\n'
                     '[mirror]\nretry_every = 5\nretry_interval = 0\n'
                     '[placement]\nauth_type = password\n'
                     'username = reserveapi\nuser_name = reserveapi\n',
                     self.options))


class TestShippedConfiguration(base.BaseTestCase):

    def test_the_production_file_parses_with_our_options(self):
        text = (ROOT / 'etc' / 'reserveapi' / 'reserveapi.conf').read_text()
        self.assertIn('[database]', text)
        self.assertEqual([], problems(text, _options()))

    def test_the_demo_file_parses_with_our_options(self):
        text = (ROOT / 'etc' / 'reserveapi' /
                'reserveapi-demo.conf').read_text()
        self.assertEqual([], problems(text, _options()))

    def test_the_evaluation_file_parses_with_our_options(self):
        text = (ROOT / 'etc' / 'reserveapi' /
                'reserveapi-evaluation.conf').read_text()
        self.assertIn('auth_strategy = noauth', text)
        self.assertEqual([], problems(text, _options()))


class TestCLIReference(base.BaseTestCase):

    def test_every_command_is_documented(self):
        text = (DOC / 'cli' / 'index.rst').read_text()
        scripts = [entry_point.name for entry_point
                   in importlib.metadata.entry_points(group='console_scripts')
                   if entry_point.value.startswith('reserveapi.')]
        self.assertIn('reserveapi-status', scripts)
        for name in scripts + ['``%s' % command
                               for command in manage.COMMANDS]:
            self.assertIn(name, text)


class TestReadme(base.BaseTestCase):

    def test_no_link_leaves_the_repository(self):
        text = (ROOT / 'README.md').read_text()
        self.assertNotIn('../', text)
        for url in re.findall(r'https?://[^\s`)]+', text):
            self.assertRegex(url, r'^http://(127\.0\.0\.1|localhost)[:/]')
        for path in re.findall(r'`((?:doc|api-ref|releasenotes|etc|tools)'
                               r'/[^`\s]*)`', text):
            if not path.endswith('.sample'):
                self.assertTrue((ROOT / path).exists(), path)


def simple_table(text, after):
    """The rows of the first simple rst table after the line ``after``,
    header first: lists of cell texts, without inline literal marks.
    """
    lines = text.splitlines()
    lines = lines[lines.index(after):]
    borders = [number for number, line in enumerate(lines)
               if re.fullmatch(r'=+( +=+)+', line)]
    first, last = borders[0], borders[2]
    spans = [match.span() for match in re.finditer('=+', lines[first])]
    rows = []
    for line in lines[first + 1:last]:
        if line == lines[first]:
            continue
        cells = [line[start:end if index < len(spans) - 1 else None]
                 for index, (start, end) in enumerate(spans)]
        rows.append([cell.replace('``', '').strip() for cell in cells])
    return rows


def route_cell(entry, personas, every_project):
    """What the table must say for these personas on one matrix route:
    ``yes``, ``own``, ``no``, or why it can say nothing.
    """
    statuses = {entry['expect'][persona] for persona in personas}
    if statuses == {403}:
        return 'no'
    if not statuses <= {200, 201, 202, 204, 404} or statuses == {404}:
        return 'statuses %s' % sorted(statuses)
    if (entry.get('own_project') or entry.get('own_nodes')
            or entry.get('project_nodes')) and not set(
            personas) <= set(every_project):
        return 'own'
    return 'yes' if 404 not in statuses else 'a 404 on a route not own_project'


def owner_lessee_cell(section, personas):
    """The same for ``node_owner_lessee``: who sees which owner and
    lessee."""
    nodes = section['nodes']
    named = {name for name, node in nodes.items()
             if node.get('owner') or node.get('lessee')}
    seen = [set(section['sees'][persona]) for persona in personas
            if persona in section['sees']]
    if not seen:
        return 'no'
    if len(seen) == len(personas) and all(item == named for item in seen):
        return 'yes'
    own = [{name for name in named
            if keystone_fixture.project_of(persona) in (
                nodes[name].get('owner'), nodes[name].get('lessee'))}
           for persona in personas]
    if seen == own:
        return 'own'
    return 'seen %s' % seen


def expected_table(matrix):
    """The table's rows, header first, from the matrix."""
    columns = list(COLUMNS)
    rows = [['request'] + columns]
    for route, entry in matrix['routes'].items():
        rows.append([route] + [route_cell(entry, COLUMNS[column],
                                          matrix['every_project'])
                               for column in columns])
        if route == 'GET /v1/nodes/{node_ident}':
            rows.append([OWNER_LESSEE_ROW] + [
                owner_lessee_cell(matrix['node_owner_lessee'],
                                  COLUMNS[column]) for column in columns])
    return rows


def load_matrix():
    with open(RBAC_MATRIX) as stream:
        return yaml.safe_load(stream)


class TestWhoMayDoWhat(base.BaseTestCase):
    """The operator guide's table against tests/keystone/rbac_matrix.yaml,
    the matrix the Keystone suite holds the API to with real tokens."""

    def setUp(self):
        super().setUp()
        self.matrix = load_matrix()
        self.text = ADMIN_GUIDE.read_text()

    def test_the_table_says_what_the_matrix_says(self):
        table = simple_table(self.text, 'Who may do what')
        self.assertEqual(len(self.matrix['routes']) + 2, len(table))
        self.assertEqual(expected_table(self.matrix), table)

    def test_every_persona_of_the_matrix_has_a_column_or_a_sentence(self):
        personas = set(next(iter(self.matrix['routes'].values()))['expect'])
        spoken_for = set(NOT_PROJECT_SCOPED + UNAUTHENTICATED).union(
            *COLUMNS.values())
        self.assertEqual(sorted(personas), sorted(spoken_for))

    def test_the_sentences_hold(self):
        for sentence, personas, status in (
                ('A domain- or system-scoped token is refused (403) on '
                 'every route', NOT_PROJECT_SCOPED, 403),
                ('No token, or an expired, revoked or forged one, is '
                 'refused (401) on every route', UNAUTHENTICATED, 401)):
            self.assertTrue(sentence in ' '.join(self.text.split()),
                            sentence)
            self.assertEqual(
                {status}, {entry['expect'][persona]
                           for entry in self.matrix['routes'].values()
                           for persona in personas})

    def test_the_check_catches_drift(self):
        """The guide as it was: members reserved for their own project."""
        drifted = self.text.replace(
            '``POST /v1/reservations``                                yes'
            '    yes      no ',
            '``POST /v1/reservations``                                yes'
            '    yes      own')
        self.assertNotEqual(self.text, drifted)
        self.assertNotEqual(expected_table(self.matrix),
                            simple_table(drifted, 'Who may do what'))
        matrix = load_matrix()
        matrix['node_owner_lessee']['sees']['reader_b'].append('owned-by-a')
        self.assertNotEqual(expected_table(matrix), expected_table(
            self.matrix))


class TestCatalogType(base.BaseTestCase):
    """The install guide registers, and sets for auth_token, the catalog
    type the code answers to (reserveapi.api.microversion.SERVICE_TYPE)."""

    def test_one_type_throughout(self):
        # The guide, and the file it has the reader install.
        text = INSTALL_GUIDE.read_text() + PRODUCTION_CONF.read_text()
        found = (re.findall(r'^\s*service_type = (\S+)$', text, re.M)
                 + re.findall(r'openstack service create .*?\s(\S+)\n',
                              text.replace('\\\n', ' '))
                 + re.findall(r'openstack endpoint create --region \S+\s+'
                              r'(\S+)', text.replace('\\\n', ' ')))
        self.assertGreaterEqual(len(found), 5)
        self.assertEqual({microversion.SERVICE_TYPE}, set(found))


class TestGunicornStarts(base.BaseTestCase):
    """Every documented start of the API under gunicorn loads our
    settings: without them each scrape shows one worker's counters,
    which go back when gunicorn replaces it."""

    SETTINGS = '-c python:reserveapi.wsgi.gunicorn_config'

    def starts(self):
        for path in sorted(list(ROOT.glob('doc/source/**/*.rst'))
                           + list(ROOT.glob('etc/systemd/*.service'))
                           + [ROOT / 'README.md']):
            text = path.read_text().replace('\\\n', ' ')
            for line in text.splitlines():
                if re.search(r'\bgunicorn\b.*--bind.*reserveapi\.wsgi\.api:'
                             r'application', line):
                    yield path.relative_to(ROOT), ' '.join(line.split())

    def test_every_start_sums_its_workers(self):
        starts = list(self.starts())
        self.assertGreaterEqual(len(starts), 4)
        self.assertEqual([], [(str(path), line) for path, line in starts
                              if self.SETTINGS not in line])
