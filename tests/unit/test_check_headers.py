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

"""tools/check_headers.py, the license-header lint of ``tox -e pep8``."""

import pathlib

import fixtures
import testtools

from tools import check_headers


class TestCheckHeaders(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = pathlib.Path(self.useFixture(fixtures.TempDir()).path)

    def write(self, name, text):
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def test_which_files_pass(self):
        header = check_headers.HEADER
        good = [
            self.write('reserveapi/a.py', header + '\n"""A."""\n'),
            self.write('tools/b.py', '#!/usr/bin/env python3\n' + header),
            self.write('tools/c.sh', '#!/bin/bash\n' + header + 'true\n'),
            self.write('tests/__init__.py', ''),
        ]
        bad = [
            self.write('reserveapi/d.py', '"""No header."""\n'),
            self.write('tests/e.py', '# Copyright nobody\n' + header),
            self.write('.ci/run', '#!/bin/bash\nset -e\n'),
        ]
        self.write('reserveapi/template.mako', 'not checked\n')

        self.assertEqual(sorted(good + bad),
                         sorted(check_headers.sources(self.root)))
        self.assertEqual(good, [path for path in good + bad
                                if check_headers.has_header(path)])

    def test_this_repository_passes(self):
        self.assertEqual(0, check_headers.main())
