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

"""reserveapi on a private three-node MariaDB Galera cluster, one API
process per node (``reserveapi_testing/galera.py``).

The cluster takes half a minute to start and the suite several, so only
the ``galera`` tox env runs it; that env sets
RESERVEAPI_TEST_SUITE=galera. Anywhere else this package loads no test
at all (rather than skipping each one), so that ``tox -e py3`` neither
fails nor reports skips for it.
"""

from tests import suites

load_tests = suites.gate('galera', __file__)
