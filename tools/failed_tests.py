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

"""The failed tests of the last stestr run, each with the end of its
traceback: what .ci/run prints last when a suite fails.

A failed test's attachments (container and service logs) can run to
thousands of lines, and a CI log is often read from its end. Run with
the suite's own Python: ``.tox/ENV/bin/python -m tools.failed_tests``.
"""

import sys

from tools import database_test_summary

TRACEBACK_LINES = 25


def report(tests, lines=TRACEBACK_LINES):
    """The text naming each failed test and its traceback's last lines."""
    out = []
    for test in tests:
        if test['status'] != 'fail':
            continue
        out.append('FAILED %s' % test['id'])
        traceback = test['details'].get('traceback')
        text = traceback.as_text() if traceback is not None else ''
        out.extend('    ' + line
                   for line in text.rstrip().splitlines()[-lines:])
    return '\n'.join(out)


def main():
    stream, why_not = database_test_summary.last_run()
    if stream is None:
        print('No stestr run to read (%s).' % why_not)
        return 0
    print(report(database_test_summary.records(stream))
          or 'No test failed: the suite failed outside its tests.')
    return 0


if __name__ == '__main__':
    sys.exit(main())
