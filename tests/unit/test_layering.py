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

"""The layering of doc/source/architecture.rst, enforced: no module
imports what it must not, and only reserveapi/db/ talks SQL.
"""

import ast
import pathlib

from oslotest import base

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / 'reserveapi'

SERVER = ('reserveapi.api', 'reserveapi.db', 'reserveapi.reservations',
          'reserveapi.holds', 'reserveapi.pinning', 'reserveapi.mirror',
          'reserveapi.inventory', 'reserveapi.matcher',
          'reserveapi.policies', 'reserveapi.policy', 'reserveapi.common',
          'reserveapi.conf', 'reserveapi.cmd', 'reserveapi.wsgi',
          'reserveapi.notifications', 'reserveapi.peers', 'reserveapi.fleet',
          'reserveapi.monitoring', 'reserveapi.compat', 'reserveapi.rendering')
DOMAIN = ('reserveapi.reservations', 'reserveapi.holds', 'reserveapi.mirror',
          'reserveapi.inventory', 'reserveapi.pinning')
CLIENT_LIBRARIES = ('ironicclient', 'keystoneauth1', 'oslo_limit')
# What talks to a peer: the client libraries, peers/clients.py that
# builds every client on them, and the mirror's calls over it. (holds/
# reads Keystone's limits through peers/limits.py, before its turn.)
PEERS = CLIENT_LIBRARIES + (
    'reserveapi.peers.clients', 'reserveapi.mirror.placement',
    'reserveapi.mirror.nova', 'reserveapi.mirror.hosts')
WEB = ('pecan', 'wsme', 'webob')

# Layer (a top-level package or module of reserveapi, or a dotted module
# inside one) -> import prefixes it must never use. The most specific
# key applies, with its package's rules.
FORBIDDEN = {
    'api': ('reserveapi.db', 'reserveapi.notifications') + PEERS,
    'reservations': ('reserveapi.api', 'reserveapi.pinning') + WEB,
    # The holds' lives: above reservations, which it pins with.
    'pinning': ('reserveapi.api',) + WEB,
    # Domain packages side by side: reservations may use holds,
    # inventory and mirror; none of them uses reservations or another.
    'holds': ('reserveapi.api', 'reserveapi.reservations',
              'reserveapi.mirror', 'reserveapi.inventory') + WEB + PEERS,
    # Pure: admission's arithmetic, testable without a database.
    'holds.timeline': ('reserveapi.db', 'reserveapi.conf', 'oslo_config',
                       'reserveapi.matcher'),
    'holds.limits': ('reserveapi.db', 'reserveapi.conf', 'oslo_config',
                     'reserveapi.matcher'),
    'mirror': ('reserveapi.api', 'reserveapi.reservations',
               'reserveapi.holds', 'reserveapi.inventory',
               'ironicclient') + WEB,
    # Pure: the API's type and the CLI both parse with it.
    'mirror.desired': ('reserveapi.conf', 'reserveapi.db', 'oslo_config',
                       'oslo_log', 'reserveapi.peers') + PEERS,
    # Only the Ironic source speaks to Ironic, through peers/.
    'inventory': ('reserveapi.api', 'reserveapi.reservations',
                  'reserveapi.holds', 'reserveapi.mirror')
                 + WEB + CLIENT_LIBRARIES,
    'inventory.file': ('reserveapi.peers',),
    'inventory.nodes': ('reserveapi.peers',),
    # Builds the clients and checks their options: below the domain.
    'peers': ('reserveapi.api', 'reserveapi.db', 'reserveapi.matcher',
              'reserveapi.policies', 'reserveapi.policy',
              'reserveapi.notifications') + DOMAIN + WEB,
    'matcher': ('reserveapi.db', 'reserveapi.conf', 'reserveapi.api',
                'oslo_config', 'keystoneauth1', 'requests', 'socket',
                'urllib', 'reserveapi.peers') + DOMAIN + WEB,
    'db': ('reserveapi.api', 'reserveapi.matcher', 'reserveapi.conf',
           'reserveapi.policies', 'reserveapi.policy', 'reserveapi.client',
           'reserveapi.notifications', 'reserveapi.peers',
           'reserveapi.monitoring')
          + DOMAIN + WEB + PEERS,
    'common': ('reserveapi.api', 'reserveapi.db', 'reserveapi.matcher',
               'reserveapi.policies', 'reserveapi.policy',
               'reserveapi.peers', 'reserveapi.monitoring')
              + DOMAIN + WEB + PEERS,
    # Serves the metrics; reads the database's gauges beside the domain,
    # deciding nothing.
    'monitoring': ('reserveapi.api', 'reserveapi.notifications',
                   'reserveapi.policies', 'reserveapi.policy',
                   'reserveapi.peers', 'reserveapi.matcher')
                  + DOMAIN + WEB + PEERS,
    # Called by the domain modules after their commits; sends, decides
    # nothing.
    'notifications': ('reserveapi.api', 'reserveapi.db',
                      'reserveapi.matcher', 'reserveapi.policies',
                      'reserveapi.policy', 'reserveapi.common',
                      'reserveapi.peers') + DOMAIN + WEB + PEERS,
    'policies': ('reserveapi.api', 'reserveapi.db', 'reserveapi.matcher',
                 'reserveapi.policy', 'reserveapi.conf', 'reserveapi.peers')
                + DOMAIN + WEB + PEERS,
    # The releases serving the database: read by the commands, started
    # by the API and the worker.
    'fleet': ('reserveapi.api', 'reserveapi.notifications',
              'reserveapi.policies', 'reserveapi.policy', 'reserveapi.peers')
             + DOMAIN + WEB + PEERS,
    # Reaches into the libraries' private APIs (lazily, talking no SQL)
    # for the API and db/: imports no layer but the exception family.
    'compat': tuple(layer for layer in SERVER
                    if layer != 'reserveapi.common') + PEERS,
    # A reservation as the API and the events show it: pure.
    'rendering': SERVER + WEB + PEERS + ('oslo_config',),
    'client': SERVER + WEB,
    # The Nova side and the openstackclient plugin use reserveapi.client.
    'nova': SERVER + WEB,
    # Blazar's resource plugin, inside blazar-manager: the client too.
    'blazar': SERVER + WEB,
    'osc': SERVER + WEB + ('oslo_db', 'oslo_config'),
}
# Entry points and glue, which may import any layer.
UNRESTRICTED = {'cmd', 'wsgi', 'conf', 'policy', 'version', '__init__'}
# WSME types stay inside api/.
WSME_ONLY_IN = 'api'
# Talking SQL: only reserveapi/db/ may import these. (conf/ imports
# oslo.db's option definitions, which talk no SQL.)
SQL = ('sqlalchemy', 'alembic', 'oslo_db.api', 'oslo_db.exception',
       'oslo_db.sqlalchemy')
# reserveapi/db/ in layers: a module imports only the db modules of the
# layers before its own.
DB_LAYERS = (('connection_errors', 'backends', 'sessions'),
             ('models', 'base', 'records', 'node_texts', 'documents'),
             ('summary',),
             ('matching', 'migration', 'services', 'counters', 'leases'),
             ('nodes', 'mirror', 'healthcheck', 'holds'),
             ('inventory', 'derived'),
             ('reservations', 'node_sync'))


def _imports(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            for alias in node.names:
                yield '%s.%s' % (node.module, alias.name)


def _matches(name, prefixes):
    return any(name == prefix or name.startswith(prefix + '.')
               for prefix in prefixes)


def _module(path):
    """``mirror.desired`` for reserveapi/mirror/desired.py."""
    parts = path.relative_to(PACKAGE).with_suffix('').parts
    return '.'.join(part for part in parts if part != '__init__') or (
        '__init__')


def _forbidden(module):
    layer = module.split('.')[0]
    forbidden = FORBIDDEN.get(layer, ())
    if module in FORBIDDEN and module != layer:
        forbidden += FORBIDDEN[module]
    if layer != WSME_ONLY_IN:
        forbidden += ('wsme',)
    return forbidden


def _sources():
    return sorted(path for path in PACKAGE.rglob('*.py')
                  if 'migrations' not in path.parts)


class TestLayering(base.BaseTestCase):

    def test_every_layer_has_rules(self):
        layers = {_module(path).split('.')[0] for path in _sources()}
        self.assertEqual([], sorted(layers - set(FORBIDDEN) - UNRESTRICTED))

    def test_no_forbidden_imports(self):
        violations = []
        checked = 0
        for path in _sources():
            forbidden = _forbidden(_module(path))
            checked += 1
            violations.extend(
                '%s imports %s' % (path.relative_to(PACKAGE.parent), name)
                for name in _imports(path) if _matches(name, forbidden))
        self.assertGreater(checked, 50)
        self.assertEqual([], violations)

    def assertUsesOnlyTheClient(self, side):
        """reserveapi/<side>/ runs inside another service's process: of
        reserveapi it may import only the client (and itself)."""
        modules = sorted((PACKAGE / side).rglob('*.py'))
        self.assertGreaterEqual(len(modules), 2)
        outside = [
            '%s imports %s' % (path.relative_to(PACKAGE.parent), name)
            for path in modules for name in _imports(path)
            if name.startswith('reserveapi.')
            and not name.startswith(('reserveapi.client',
                                     'reserveapi.' + side))]
        self.assertEqual([], outside)

    def test_nova_side_uses_only_the_client(self):
        self.assertUsesOnlyTheClient('nova')

    def test_blazar_plugin_uses_only_the_client(self):
        self.assertUsesOnlyTheClient('blazar')

    def test_only_the_notifications_module_talks_to_the_bus(self):
        # And loads oslo.messaging only when notifications are configured
        # (its import takes over a second): no module imports it.
        importers = sorted(
            str(path.relative_to(PACKAGE.parent)) for path in _sources()
            if any(_matches(name, ('oslo_messaging',))
                   for name in _imports(path)))
        self.assertEqual([], importers)
        talkers = sorted(
            str(path.relative_to(PACKAGE.parent)) for path in _sources()
            if "'oslo_messaging" in path.read_text())
        self.assertEqual(['reserveapi/notifications.py'], talkers)

    def test_every_package_says_what_it_holds(self):
        packages = sorted(PACKAGE.rglob('__init__.py'))
        self.assertGreater(len(packages), 15)
        silent = [str(path.relative_to(PACKAGE.parent)) for path in packages
                  if not ast.get_docstring(ast.parse(path.read_text()))]
        self.assertEqual([], silent)

    def test_only_db_talks_sql(self):
        talkers = sorted(
            str(path.relative_to(PACKAGE.parent)) for path in _sources()
            if any(_matches(name, SQL) for name in _imports(path)))
        self.assertIn('reserveapi/db/matching.py', talkers)
        self.assertEqual([], [path for path in talkers
                              if not path.startswith('reserveapi/db/')])

    def test_migrations_import_only_alembic_and_sqlalchemy(self):
        """A migration installs the same thing whenever it runs: it
        reads neither another migration nor the product's code, which
        change after it is released (triggers it carries as text)."""
        versions = sorted(
            (PACKAGE / 'db' / 'migrations' / 'versions').glob('*.py'))
        self.assertGreater(len(versions), 10)
        found = ['%s imports %s' % (path.name, name) for path in versions
                 for name in _imports(path)
                 if not _matches(name, ('alembic', 'sqlalchemy'))]
        self.assertEqual([], found)

    def test_db_modules_import_only_lower_layers(self):
        rank = {module: index for index, layer in enumerate(DB_LAYERS)
                for module in layer}
        found, violations = set(), []
        for path in sorted((PACKAGE / 'db').glob('*.py')):
            module = path.stem
            if module == '__init__':
                continue
            found.add(module)
            for name in _imports(path):
                other = name.split('.')[2] if _matches(
                    name, ('reserveapi.db',)) and name.count('.') >= 2 else (
                    None)
                if other and other in rank and other != module and (
                        rank[other] >= rank.get(module, -1)):
                    violations.append('db/%s.py imports db.%s'
                                      % (module, other))
        self.assertEqual(set(rank), found)
        self.assertEqual([], violations)

    def test_tools_reach_no_test_module_and_no_sys_path(self):
        """tools/ runs as a package from the repository's root and shares
        fixtures with the tests through reserveapi_testing/."""
        tools = sorted((PACKAGE.parent / 'tools').rglob('*.py'))
        self.assertGreater(len(tools), 20)
        found = []
        for path in tools:
            name = str(path.relative_to(PACKAGE.parent))
            if 'sys.path' in path.read_text():
                found.append('%s changes sys.path' % name)
            found.extend('%s imports %s' % (name, module)
                         for module in _imports(path)
                         if _matches(module, ('tests',)))
        self.assertEqual([], found)

    def test_one_query_style(self):
        # sa.select and friends, never the legacy session.query().
        calls = [
            '%s:%d' % (path.name, node.lineno)
            for path in sorted((PACKAGE / 'db').glob('*.py'))
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == 'query']
        self.assertEqual([], calls)
