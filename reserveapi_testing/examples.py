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

"""The example request spec every test starts from.

It is read from the api-ref's create-request sample, so
the documentation, the unit tests and the functional tests all show the
same spec. The default functional test node satisfies it, with 31 GiB of
disk needed (20 root + 10 ephemeral + 2 MiB swap rounded up).
"""

import json
import os

SAMPLES_DIR = os.path.join(os.path.dirname(__file__), '..', 'api-ref',
                           'source', 'samples')


def sample(name):
    """An api-ref sample, parsed."""
    with open(os.path.join(SAMPLES_DIR, name), encoding='utf-8') as stream:
        return json.load(stream)


REQUEST_SPEC = sample('reservations/create-request.json')['request_spec']
