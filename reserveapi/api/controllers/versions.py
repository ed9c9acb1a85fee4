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

"""The version document served by ``GET /`` and ``GET /v1``."""

from reserveapi.api import microversion
from reserveapi.api.controllers import link


def version_document():
    return {
        'id': 'v1',
        'status': 'CURRENT',
        'min_version': str(microversion.MIN_VERSION),
        'max_version': str(microversion.MAX_VERSION),
        'links': [link.make('v1/')],
    }
