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


"""``reserveapi-manage release-orphans``, and ``reconcile-reservations``
still working as its deprecated alias. (Orphans themselves, inside real
Nova: tests/nova/test_host_failure.py.)"""

import fixtures

from reserveapi_testing import inventory
from tests.functional import base

NOTHING_FOUND = ('0 orphaned reservations found (dry run: nothing '
                 'released).\n')


class TestReleaseOrphans(base.DBTestCase):

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger(
            name='reserveapi.cmd.manage'))

    def test_nothing_to_release(self):
        code, out, err = inventory.manage(self, 'release-orphans',
                                          '--dry-run')
        self.assertEqual((0, NOTHING_FOUND, ''), (code, out, err))
        self.assertNotIn('deprecated', self.logger.output)

    def test_old_name_is_a_deprecated_alias(self):
        code, out, err = inventory.manage(self, 'reconcile-reservations',
                                          '--dry-run')
        self.assertEqual((0, NOTHING_FOUND, ''), (code, out, err))
        self.assertIn('"reserveapi-manage reconcile-reservations" is '
                      'deprecated and will be removed: use '
                      '"reserveapi-manage release-orphans".',
                      self.logger.output)
