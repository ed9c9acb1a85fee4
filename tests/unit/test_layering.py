"""DESIGN.md's layering, enforced: no package imports what it must not."""

import ast
import pathlib

from oslotest import base

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / 'reserveapi'

# package (or module) -> import prefixes it must never use
FORBIDDEN = {
    'api': ('reserveapi.db', 'sqlalchemy', 'ironicclient', 'keystoneauth1',
            'reserveapi.mirror.placement', 'reserveapi.mirror.hosts'),
    'reservations': ('reserveapi.api', 'pecan', 'wsme'),
    'mirror': ('reserveapi.api', 'pecan', 'wsme', 'sqlalchemy'),
    'inventory': ('reserveapi.api', 'pecan', 'wsme', 'sqlalchemy'),
    'matcher': ('reserveapi.db', 'reserveapi.conf', 'reserveapi.api',
                'sqlalchemy', 'oslo_db', 'oslo_config', 'pecan', 'wsme',
                'keystoneauth1', 'requests', 'socket', 'urllib'),
    'db': ('reserveapi.api', 'reserveapi.reservations', 'reserveapi.mirror',
           'reserveapi.inventory', 'reserveapi.matcher', 'pecan', 'wsme'),
    'client': ('reserveapi.api', 'reserveapi.db', 'reserveapi.reservations',
               'reserveapi.mirror', 'pecan', 'wsme', 'sqlalchemy'),
    'common': ('reserveapi.api', 'reserveapi.db', 'reserveapi.reservations',
               'reserveapi.mirror', 'reserveapi.inventory', 'pecan', 'wsme'),
}
# WSME types stay inside api/.
WSME_ONLY_IN = 'api'


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


def _layer(path):
    relative = path.relative_to(PACKAGE)
    return relative.parts[0].removesuffix('.py')


class TestLayering(base.BaseTestCase):

    def test_no_forbidden_imports(self):
        violations = []
        checked = 0
        for path in sorted(PACKAGE.rglob('*.py')):
            layer = _layer(path)
            forbidden = FORBIDDEN.get(layer, ())
            if layer != WSME_ONLY_IN:
                forbidden += ('wsme',)
            checked += 1
            for name in _imports(path):
                if any(name == prefix or name.startswith(prefix + '.')
                       for prefix in forbidden):
                    violations.append('%s imports %s' % (
                        path.relative_to(PACKAGE.parent), name))
        self.assertGreater(checked, 30)
        self.assertEqual([], violations)

    def test_only_db_api_talks_sql(self):
        talkers = sorted(
            str(path.relative_to(PACKAGE.parent))
            for path in PACKAGE.rglob('*.py')
            if any(name.startswith('sqlalchemy') for name in _imports(path))
            and 'migrations' not in path.parts)
        self.assertEqual(['reserveapi/db/api.py',
                          'reserveapi/db/connection_errors.py',
                          'reserveapi/db/healthcheck.py',
                          'reserveapi/db/models.py'], talkers)
