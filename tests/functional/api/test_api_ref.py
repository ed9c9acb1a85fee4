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

"""The API reference documents every route, and its samples are real.

Routes come from the controller tree itself (``routes.py``), so a new
endpoint is caught the day it is written. Samples must be read by a
functional test, which compares them with real responses or posts them
as requests.
"""

import glob
import json
import os
import re

import testtools

from tests.functional.api import routes

ROOT = os.path.join(os.path.dirname(__file__), '..', '..', '..')
SOURCE = os.path.join(ROOT, 'api-ref', 'source')
SAMPLES = os.path.join(SOURCE, 'samples')
FUNCTIONAL_TESTS = os.path.join(ROOT, 'tests', 'functional')

_REST_METHOD = re.compile(r'^\.\. rest_method:: +([A-Z]+) +(\S+)\s*$',
                          re.MULTILINE)
_LITERALINCLUDE = re.compile(r'^\.\. literalinclude:: +samples/(\S+)\s*$',
                             re.MULTILINE)
_PARAM = re.compile(r'\{[^}]*\}')


def _normalized(method, path):
    """``('GET', '/v1/nodes/{}')``: parameter names do not matter."""
    return method, _PARAM.sub('{}', path.rstrip('/') or '/')


def _read(path):
    with open(path, encoding='utf-8') as stream:
        return stream.read()


def _includes():
    return {os.path.basename(path): _read(path)
            for path in glob.glob(os.path.join(SOURCE, '*.inc'))}


def _routes():
    return {_normalized(method, path) for method, path in routes.routes()}


def _samples():
    """Sample paths relative to samples/, e.g. ``nodes/show-response.json``.
    """
    return sorted(os.path.relpath(path, SAMPLES) for path in glob.glob(
        os.path.join(SAMPLES, '**', '*.json'), recursive=True))


class TestApiRef(testtools.TestCase):

    def test_every_route_is_documented(self):
        documented = {_normalized(method, path)
                      for text in _includes().values()
                      for method, path in _REST_METHOD.findall(text)}
        self.assertEqual([], sorted(_routes() - documented))

    def test_every_documented_route_exists(self):
        stale = sorted(
            (name, method, path)
            for name, text in _includes().items()
            for method, path in _REST_METHOD.findall(text)
            if _normalized(method, path) not in _routes())
        self.assertEqual([], stale)

    def test_samples_parse(self):
        self.assertGreater(len(_samples()), 10)
        for sample in _samples():
            try:
                json.loads(_read(os.path.join(SAMPLES, sample)))
            except ValueError as exc:
                self.fail('%s: %s' % (sample, exc))

    def test_every_sample_is_used_by_a_test(self):
        this = os.path.abspath(__file__)
        tests = ''.join(
            _read(path) for path in glob.glob(
                os.path.join(FUNCTIONAL_TESTS, '**', '*.py'), recursive=True)
            if os.path.abspath(path) != this)
        # As a string of its own, or ending one (SAMPLES_DIR + '/x.json').
        self.assertEqual([], [
            sample for sample in _samples()
            if not re.search(r'[\'"/]%s[\'"]' % re.escape(sample), tests)])

    def test_every_sample_is_shown_and_exists(self):
        included = {sample for text in _includes().values()
                    for sample in _LITERALINCLUDE.findall(text)}
        self.assertEqual([], sorted(set(_samples()) - included))
        self.assertEqual([], sorted(included - set(_samples())))
