#!/usr/bin/env python3
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

"""Fail when a source file lacks the Apache 2.0 license header.

Every Python file under reserveapi/, reserveapi_testing/, tests/ and
tools/, and every shell script (tools/*.sh, .ci/run), starts with the
OpenStack header, after a shebang line if it has one. Empty files
(package markers) are exempt. Run by ``tox -e pep8``; exits 1 and
lists the files otherwise.
"""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEADER = """\
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
"""


def sources(root=ROOT):
    """Every file that must carry the header."""
    for directory in ('reserveapi', 'reserveapi_testing', 'tests',
                      'tools'):
        yield from sorted((root / directory).rglob('*.py'))
        yield from sorted((root / directory).rglob('*.sh'))
    ci = root / '.ci' / 'run'
    if ci.exists():
        yield ci


def has_header(path):
    text = path.read_text(encoding='utf-8')
    if not text.strip():
        return True
    if text.startswith('#!'):
        text = text.split('\n', 1)[1] if '\n' in text else ''
    return text.startswith(HEADER)


def main():
    missing = [path.relative_to(ROOT) for path in sources()
               if not has_header(path)]
    for path in missing:
        print('%s: no Apache 2.0 license header' % path)
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
