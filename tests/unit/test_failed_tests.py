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

"""tools/failed_tests.py: what .ci/run prints last when a suite fails."""

import io

from oslotest import base
import subunit

from tools import database_test_summary
from tools import failed_tests


def stream(*tests):
    """A subunit v2 stream of ``(id, status, traceback text or None)``."""
    data = io.BytesIO()
    output = subunit.StreamResultToBytes(data)
    for test_id, status, traceback in tests:
        output.status(test_id=test_id, test_status='inprogress')
        if traceback is not None:
            output.status(test_id=test_id, file_name='traceback',
                          file_bytes=traceback.encode(),
                          mime_type='text/plain; charset=utf8', eof=True)
        output.status(test_id=test_id, test_status=status)
    data.seek(0)
    return data


class TestFailedTests(base.BaseTestCase):

    def test_only_failures_each_with_its_traceback_end(self):
        traceback = '\n'.join('line %d' % number for number in range(40))
        tests = database_test_summary.records(stream(
            ('a.test_passes', 'success', None),
            ('a.test_fails', 'fail', traceback),
            ('a.test_skips', 'skip', None)))
        self.assertEqual(
            ['FAILED a.test_fails'] + ['    line %d' % number
                                       for number in range(37, 40)],
            failed_tests.report(tests, lines=3).splitlines())

    def test_a_failure_without_traceback_is_still_named(self):
        tests = database_test_summary.records(stream(
            ('a.test_fails', 'fail', None)))
        self.assertEqual('FAILED a.test_fails', failed_tests.report(tests))

    def test_nothing_failed(self):
        tests = database_test_summary.records(stream(
            ('a.test_passes', 'success', None)))
        self.assertEqual('', failed_tests.report(tests))
