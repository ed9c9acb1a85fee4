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

from pecan import compat as pecan_compat
from pecan import util as pecan_util
import testtools

from reserveapi import compat
from reserveapi.api import expose
from reserveapi.api import types


class Controller:

    @expose.expose(query={'detail': types.boolean})
    def get_one(self, reservation_uuid, detail=None):
        return reservation_uuid


class RememberArgspecsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        original = pecan_util._getargspec
        self.addCleanup(setattr, pecan_util, '_getargspec', original)
        compat.remember_pecan_argspecs()

    def test_same_answer_as_pecan(self):
        controller = Controller()
        remembered = pecan_util.getargspec(controller.get_one)
        self.assertEqual(pecan_compat.getargspec(Controller.get_one),
                         remembered)

    def test_asked_once_per_function(self):
        first, second = Controller(), Controller()
        self.assertIs(pecan_util.getargspec(first.get_one),
                      pecan_util.getargspec(second.get_one))

    def test_installed_once(self):
        installed = pecan_util._getargspec
        compat.remember_pecan_argspecs()
        self.assertIs(installed, pecan_util._getargspec)
