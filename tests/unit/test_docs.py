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
``reserveapi-manage`` command.
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

from reserveapi.cmd import manage

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / 'doc' / 'source'
GENERATOR = ROOT / 'etc' / 'reserveapi' / 'config-generator.conf'
NOVA_GENERATOR = ROOT / 'etc' / 'reserveapi' / 'nova-config-generator.conf'
NOVA_CAPTION = re.compile(r'^\s*:caption: nova\.conf\s*$')
DIRECTIVE = re.compile(r'^(\s*)\.\. code-block:: ini\s*$')
SECTION = re.compile(r'^\[([^\]]+)\]$')


def ini_snippets():
    """``(file, line, text, generator)`` of every ini code block in the
    guides; ``generator`` is the config-generator file its options come
    from.
    """
    for path in sorted(DOC.rglob('*.rst')):
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            match = DIRECTIVE.match(line)
            if match:
                nova = any(NOVA_CAPTION.match(option)
                           for option in lines[number + 1:number + 4])
                yield (path.relative_to(ROOT), number + 1,
                       _block(lines[number + 1:], len(match.group(1))),
                       NOVA_GENERATOR if nova else GENERATOR)


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
        conf.register_opts([_optional(opt) for opt in opts],
                           group=None if name == 'DEFAULT' else name)
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
        self.assertIn(NOVA_GENERATOR, [item[3] for item in snippets])
        found = {}
        for path, line, text, generator in snippets:
            nova = generator == NOVA_GENERATOR
            options = _options(generator) if nova else self.options
            found.update({'%s:%d: %s' % (path, line, problem): text
                          for problem in problems(text, options, nova)})
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
