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

"""What every reservation story starts from: nodes, a request, checks.

Every story runs on SQLite, PostgreSQL and MariaDB: matching is split
between SQL and Python, and the guarantees come from the database.
"""

import copy
import uuid

from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.functional import base

HOST = 'compute-3'
NEW_HOST = 'compute-7'
# The project the request samples reserve for (Nova passes the instance's).
SAMPLE_PROJECT = '7c3e1f5a9b2d4e6f8a0b1c2d3e4f5a6b'
OTHER_PROJECT = '0ddba11000000000000000000000beef'


def spec(**changes):
    """The example spec with top-level fields and extra specs changed;
    an extra spec or image property set to None is removed.
    """
    result = copy.deepcopy(examples.REQUEST_SPEC)
    extra_specs = changes.pop('extra_specs', {})
    properties = changes.pop('image_properties', {})
    result.update(changes)
    for target, updates in ((result['extra_specs'], extra_specs),
                            (result['image']['properties'], properties)):
        for key, value in updates.items():
            if value is None:
                target.pop(key, None)
            else:
                target[key] = value
    return result


# Switches sizing off, as modern bare metal flavors do.
NO_SIZING = {'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
             'resources:DISK_GB': '0'}


class ReservationTestCase(base.APITestCase):

    def nodes(self, *nodes):
        return inventory.sync(self, nodes)

    def reserve(self, request_spec=None, host=HOST, instance_uuid=None,
                headers=None, **fields):
        body = {'instance_uuid': instance_uuid or str(uuid.uuid4()),
                'host': host,
                'request_spec': (examples.REQUEST_SPEC
                                 if request_spec is None else request_spec)}
        body.update(fields)
        return self.request('POST', '/v1/reservations', body,
                            headers=headers)

    def release(self, reservation_uuid):
        response = self.request('DELETE',
                                '/v1/reservations/' + reservation_uuid)
        self.assertEqual(204, response.status_int, response.text)

    def list_reservations(self, query=''):
        response = self.request('GET', '/v1/reservations' + query)
        self.assertEqual(200, response.status_int, response.text)
        return response.json['reservations']

    def node(self, ident):
        response = self.request('GET', '/v1/nodes/' + ident)
        self.assertEqual(200, response.status_int, response.text)
        return response.json

    def assertReserved(self, response, node_name):
        """A 201 for ``node_name``, and the node now shows it."""
        self.assertEqual(201, response.status_int, response.text)
        reservation = response.json
        self.assertEqual(node_name, reservation['node_name'])
        self.assertEqual(inventory.node_uuid(node_name),
                         reservation['node_uuid'])
        self.assertEqual('reserved', reservation['state'])
        self.assertEqual(reservation['uuid'],
                         self.node(node_name)['reservation']['uuid'])
        return reservation

    def assertChooses(self, node_name, request_spec, **fields):
        """Reserve, check the node, release it for the next check."""
        reservation = self.assertReserved(
            self.reserve(request_spec, **fields), node_name)
        self.release(reservation['uuid'])

    def assertNoValidNode(self, response, detail=None):
        error = self.assertError(response, 409, 'reserveapi.no_valid_node')
        if detail is not None:
            self.assertEqual('No valid node: ' + detail, error['detail'])
        return error['detail']

    def assertNothingReserved(self):
        self.assertEqual([], self.list_reservations())
        nodes = self.request('GET', '/v1/nodes?reserved=true').json['nodes']
        self.assertEqual([], nodes)
