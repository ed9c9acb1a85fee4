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

"""reserveapi scraped by a real Prometheus (the distribution's
``prometheus`` package, on loopback), and the shipped rules checked and
unit-tested with ``promtool``; run by ``tox -e prometheus``. Unless
``RESERVEAPI_TEST_SUITE=prometheus`` this package contributes no tests at
all.
"""

from tests import suites

load_tests = suites.gate('prometheus', __file__)
