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

"""tools/database_test_summary.py: the line after ``tox -e py3``."""

import io

from oslotest import base
import subunit

from tools import database_test_summary


def stream(**statuses):
    """A subunit v2 stream of tests ``id=status``."""
    data = io.BytesIO()
    output = subunit.StreamResultToBytes(data)
    for test_id, status in statuses.items():
        output.status(test_id=test_id, test_status='inprogress')
        output.status(test_id=test_id, test_status=status)
    data.seek(0)
    return data


class TestDatabaseTestSummary(base.BaseTestCase):

    def summary(self, **statuses):
        return database_test_summary.summary(
            database_test_summary.outcomes(stream(**{
                name.replace('__', '.').replace('_PG', '(PostgreSQL)')
                .replace('_MY', '(MySQL)').replace('_SQ', '(SQLite)'): value
                for name, value in statuses.items()})))

    def test_skipped_backends_are_counted_and_the_fix_named(self):
        self.assertEqual(
            'Database tests: 3 of 4 skipped (PostgreSQL 2, MariaDB/MySQL '
            '1): their servers, or the openstack_citest user and database, '
            'are missing; tools/ensure-test-databases.sh sets them up on '
            'this machine, then run the tests again.',
            self.summary(a__test_x_PG='skip', a__test_y_PG='skip',
                         a__test_x_MY='skip', a__test_y_MY='success',
                         a__test_x_SQ='success', a__test_plain='skip'))

    def test_none_skipped(self):
        self.assertEqual(
            'Database tests: all 2 PostgreSQL and MariaDB/MySQL tests ran, '
            'none skipped.',
            self.summary(a__test_x_PG='success', a__test_x_MY='fail',
                         a__test_x_SQ='skip'))

    def test_a_run_without_them(self):
        self.assertEqual(
            'Database tests: none of this run is on PostgreSQL or MariaDB.',
            self.summary(a__test_x_SQ='success'))

    def test_ids_with_several_scenarios_are_counted(self):
        found = database_test_summary.outcomes(stream(**{
            'a.test_x(PostgreSQL,mirror_hosts)': 'skip',
            'a.test_x(mirror_hosts,MySQL)': 'skip',
            'a.test_x(SQLite,mirror_hosts)': 'success',
            'a.test_y(PostgreSQL)': 'success'}))
        self.assertEqual(
            'Database tests: 2 of 3 skipped (PostgreSQL 1, MariaDB/MySQL '
            '1): their servers, or the openstack_citest user and database, '
            'are missing; tools/ensure-test-databases.sh sets them up on '
            'this machine, then run the tests again.',
            database_test_summary.summary(found))
