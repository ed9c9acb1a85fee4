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

"""Every tools/bench command's ``--help`` formats.

argparse fills ``%(default)s`` and the like into help strings only when
``--help`` runs, so a stray ``%`` (``"10 % of them"``) crashes that and
nothing else. Each module's parser is built here as its ``main`` builds
it, stopped where it would parse, and its help formatted.
"""

import argparse
import importlib
import importlib.abc
import importlib.util
import pathlib
import sys
import types
from unittest import mock

import testtools

BENCH = pathlib.Path(__file__).resolve().parents[2] / 'tools' / 'bench'


class _Built(Exception):
    """Raised where a parser would parse: it is complete by then."""

    def __init__(self, parser):
        super().__init__(parser.prog)
        self.parser = parser


def _stop_at_parse(parser, args=None, namespace=None):
    raise _Built(parser)


class _AnythingMeta(type):
    def __getattr__(cls, name):
        if name.startswith('__'):
            raise AttributeError(name)
        return _AnythingMeta(name, (_Anything,), {})

    def __call__(cls, *args, **kwargs):
        return cls

    def __getitem__(cls, key):
        return cls

    def __iter__(cls):
        return iter(())


class _Anything(metaclass=_AnythingMeta):
    """Whatever a missing package's module is asked for: a class that
    can be subclassed, called and read from, so that a module importing
    Nova can be imported where Nova is not installed."""


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        return _AnythingMeta(name, (_Anything,), {})


class _MissingPackages(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on the import path: stubs the packages this environment
    lacks (Nova and Placement, for the Nova benchmarks), which no parser
    needs."""

    def __init__(self):
        self.stubbed = set()

    def find_spec(self, name, path=None, target=None):
        top = name.partition('.')[0]
        if top != name and top not in self.stubbed:
            return None
        self.stubbed.add(top)
        return importlib.util.spec_from_loader(name, self, is_package=True)

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def bench_modules():
    """The tools/bench modules that build an argparse parser."""
    return sorted(path.stem for path in BENCH.glob('*.py')
                  if 'ArgumentParser(' in path.read_text(encoding='utf-8'))


def import_bench_module(name):
    """``tools.bench.<name>``, with stubs for the packages missing here;
    what it imported beside stubs is forgotten again afterwards."""
    full = 'tools.bench.' + name
    try:
        return importlib.import_module(full)
    except ImportError:
        pass
    before = set(sys.modules)
    finder = _MissingPackages()
    sys.meta_path.append(finder)
    try:
        return importlib.import_module(full)
    finally:
        sys.meta_path.remove(finder)
        for added in set(sys.modules) - before:
            del sys.modules[added]


def built_parser(module):
    """The parser ``module`` builds, caught where it would parse."""
    with mock.patch.object(argparse.ArgumentParser, 'parse_known_args',
                           _stop_at_parse), \
            mock.patch.object(sys, 'argv', [module.__name__]):
        try:
            if hasattr(module, 'parse_args'):
                module.parse_args([])
            else:
                module.main()
        except _Built as built:
            return built.parser
    raise AssertionError('%s built no parser' % module.__name__)


def subparsers(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield child
                yield from subparsers(child)


class BenchHelpTestCase(testtools.TestCase):

    def test_found_the_modules(self):
        # The glob must keep finding the runner and its neighbours.
        self.assertIn('run', bench_modules())
        self.assertIn('releases', bench_modules())

    def test_every_help_formats(self):
        crashed = []
        for name in bench_modules():
            parser = built_parser(import_bench_module(name))
            for each in [parser, *subparsers(parser)]:
                try:
                    text = each.format_help()
                except (TypeError, ValueError, KeyError) as exc:
                    crashed.append('%s: %s: %s' % (
                        each.prog, type(exc).__name__, exc))
                    continue
                self.assertIn('usage:', text, name)
        self.assertEqual([], crashed)
