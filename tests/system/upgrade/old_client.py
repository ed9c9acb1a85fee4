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

"""The previous version's client against the new version's API: what a
nova-compute not yet upgraded does once the APIs are.

Run by the old version's interpreter, isolated (``python -I``) so that
only its own ``reserveapi.client`` can be imported; it imports nothing
of this checkout. Reserves one node, confirms it, reads it back,
releases it, and prints what happened as one JSON document::

    python -I tests/system/upgrade/old_client.py URL HOST SPEC_JSON
"""

import json
import sys
import uuid

from keystoneauth1 import session as ks_session

from reserveapi import client


def main(url, host, spec):
    reservations = client.ReservationClient(ks_session.Session(),
                                            endpoint_override=url)
    instance_uuid = str(uuid.uuid4())
    done = {'client_module': client.__file__, 'instance_uuid': instance_uuid}
    try:
        reservation = reservations.reserve(instance_uuid, host, spec)
        done['microversion'] = reservations.api_version
        done['reserved'] = reservation
        done['confirmed_state'] = reservations.confirm(
            reservation['uuid'])['state']
        done['read_back'] = reservations.get(reservation['uuid'])
        done['released'] = reservations.release(reservation['uuid'])
    except client.ClientError as exc:
        done['error'] = '%s %s: %s' % (exc.status, exc.code, exc.detail)
    print(json.dumps(done))
    return 0 if 'error' not in done else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
