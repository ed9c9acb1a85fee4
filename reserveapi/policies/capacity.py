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

"""Policy rules for ``/v1/capacity``."""

from reserveapi.policies import base

GET = 'reserveapi:capacity:get'

rules = [
    base.rule(
        GET, base.ADMIN_OR_SERVICE,
        "Show capacity per resource class: the whole cloud's, and every "
        "compute host's reservations, as Placement's usages are. Set it "
        'to "role:reader" to open it to readers, as before microversion '
        '1.4.',
        'GET', '/v1/capacity'),
]


def list_rules():
    return rules
