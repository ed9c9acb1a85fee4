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

"""reserveapi's image (``Containerfile``, ``tools/containers/``) built
and run by podman: every role against private PostgreSQL and MariaDB
servers, and the rolling upgrade from version 1.0.0's image; run by
``tox -e containers`` (as root). Unless
``RESERVEAPI_TEST_SUITE=containers`` this package contributes no tests
at all.
"""

from tests import suites

load_tests = suites.gate('containers', __file__)
