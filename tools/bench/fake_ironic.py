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

"""An Ironic-shaped node list for benchmarks at sizes real Ironic cannot
serve on one small machine (100,000 nodes: its own list takes minutes).

Serves ``GET /v1/nodes`` and ``/v1/nodes/detail`` exactly as far as the
Ironic source uses them: ``fields`` (without ``detail``), ``limit``,
``marker``, ``sort_key`` (``id``, ``updated_at``, ``created_at``) and
``sort_dir``, with Ironic's ``next`` links. Anything else is a 400, so a
request the fake does not understand cannot pass unnoticed. Nodes come
from ``tools/generate_inventory.py`` (same count and seed, same nodes),
with Ironic's other detail fields so pages weigh what Ironic's do, every
``updated_at`` in the past (a quiet cloud). Each node is serialized once,
at start-up, so serving costs what copying bytes costs.

Run it as its own process; it prints ``serving on PORT`` when ready::

    python -m tools.bench.fake_ironic --nodes 100000 [--port 0]
"""

import argparse
import datetime
import http.server
import json
import urllib.parse

from tools import generate_inventory

MAX_LIMIT = 1000
VERSION = '1.115'
SORT_KEYS = ('id', 'updated_at', 'created_at')
LIST_PARAMS = frozenset(('fields', 'limit', 'marker', 'sort_key',
                         'sort_dir'))
EPOCH = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)

# Detail fields a real Ironic 39 node has beyond the ones we read.
DETAIL_EXTRAS = {
    'driver': 'ipmi', 'driver_info': {'ipmi_address': '10.0.0.1',
                                      'ipmi_username': 'admin',
                                      'ipmi_password': '******'},
    'driver_internal_info': {}, 'extra': {}, 'instance_info': {},
    'chassis_uuid': None, 'clean_step': {}, 'deploy_step': {},
    'console_enabled': False, 'last_error': None, 'maintenance_reason': None,
    'fault': None, 'inspection_finished_at': None,
    'inspection_started_at': None, 'provision_updated_at': None,
    'raid_config': {}, 'target_raid_config': {}, 'reservation': None,
    'target_power_state': None, 'target_provision_state': None,
    'protected': False, 'protected_reason': None, 'retired_reason': None,
    'automated_clean': None, 'allocation_uuid': None, 'description': None,
    'conductor': 'conductor-1', 'network_data': {}, 'parent_node': None,
    'boot_interface': 'ipxe', 'deploy_interface': 'direct',
    'power_interface': 'ipmitool', 'management_interface': 'ipmitool',
    'network_interface': 'neutron', 'storage_interface': 'noop',
    'vendor_interface': 'ipmitool', 'bios_interface': 'no-bios',
    'console_interface': 'no-console', 'inspect_interface': 'agent',
    'raid_interface': 'agent', 'rescue_interface': 'agent',
    'firmware_interface': 'no-firmware', 'disable_power_off': False,
    'firmware_interface_name': None, 'instance_name': None,
}


class Inventory:
    """Every node serialized twice (detail, and the subset the source
    asks for), and each sort order as a list of positions."""

    def __init__(self, count, seed, subset):
        self.fields = ','.join(subset)
        self.detail, self.subset, self.uuids = [], [], []
        updated, created = [], []
        for index, node in enumerate(
                generate_inventory.generate_nodes(count, seed)):
            node.setdefault('shard', None)
            created_at = EPOCH + datetime.timedelta(seconds=index)
            updated_at = created_at + datetime.timedelta(
                seconds=(index * 7919) % count)
            stamps = {'created_at': created_at.isoformat(),
                      'updated_at': updated_at.isoformat()}
            links = {'links': [{'href': 'http://fake/v1/nodes/%s'
                                % node['uuid'], 'rel': 'self'}]}
            self.detail.append(json.dumps(dict(
                node, **stamps, **DETAIL_EXTRAS, **links)))
            self.subset.append(json.dumps(dict(
                {field: node.get(field) for field in subset}, **links)))
            self.uuids.append(node['uuid'])
            updated.append((updated_at, index))
            created.append((created_at, index))
        self.position = {uuid: index for index, uuid in enumerate(self.uuids)}
        self.orders = {
            'id': list(range(count)),
            'updated_at': [index for _stamp, index in sorted(updated)],
            'created_at': [index for _stamp, index in sorted(created)],
        }
        self.rank = {key: {index: rank for rank, index in enumerate(order)}
                     for key, order in self.orders.items()}

    def page(self, detail, params, host):
        """The body of one page, or raise ValueError (a 400)."""
        unknown = set(params) - LIST_PARAMS
        if unknown:
            raise ValueError('unsupported parameters: %s' % sorted(unknown))
        if detail and 'fields' in params:
            raise ValueError('fields cannot be used with detail')
        if params.get('fields', self.fields) != self.fields:
            raise ValueError('this fake serves fields=%s only' % self.fields)
        limit = min(int(params.get('limit', MAX_LIMIT)), MAX_LIMIT)
        sort_key = params.get('sort_key', 'id')
        descending = params.get('sort_dir', 'asc') == 'desc'
        if sort_key not in SORT_KEYS:
            raise ValueError('unsupported sort_key %s' % sort_key)
        order = self.orders[sort_key]
        ranks = range(len(order) - 1, -1, -1) if descending else range(
            len(order))
        start = 0
        if 'marker' in params:
            rank = self.rank[sort_key][self.position[params['marker']]]
            start = (len(order) - rank) if descending else rank + 1
        chosen = [order[rank] for rank in ranks[start:start + limit]]
        source = self.detail if detail else self.subset
        body = '{"nodes": [%s]' % ','.join(source[i] for i in chosen)
        if len(chosen) == limit and start + limit < len(order):
            query = dict(params, limit=limit,
                         marker=self.uuids[chosen[-1]])
            body += ', "next": %s' % json.dumps(
                'http://%s/v1/nodes%s?%s' % (
                    host, '/detail' if detail else '',
                    urllib.parse.urlencode(query)))
        return body + '}'


def handler_for(inventory):

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            params = dict(urllib.parse.parse_qsl(url.query))
            path = url.path.rstrip('/')
            if path not in ('/v1/nodes', '/v1/nodes/detail'):
                return self._answer(404, '{"error_message": "not found"}')
            try:
                body = inventory.page(path.endswith('/detail'), params,
                                      self.headers.get('Host', 'localhost'))
            except (ValueError, KeyError) as exc:
                return self._answer(400, json.dumps(
                    {'error_message': str(exc)}))
            self._answer(200, body)

        def _answer(self, status, body):
            data = body.encode()
            self.send_response(status)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(data)))
            self.send_header('X-OpenStack-Ironic-API-Minimum-Version', '1.1')
            self.send_header('X-OpenStack-Ironic-API-Maximum-Version',
                             VERSION)
            self.send_header('X-OpenStack-Ironic-API-Version', VERSION)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nodes', type=int, default=100000)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--port', type=int, default=0)
    parser.add_argument('--fields', default=(
        'uuid,name,resource_class,properties,traits,provision_state,'
        'power_state,maintenance,retired,instance_uuid,conductor_group,'
        'shard,owner,lessee'))
    args = parser.parse_args()
    inventory = Inventory(args.nodes, args.seed, args.fields.split(','))
    server = http.server.ThreadingHTTPServer(('127.0.0.1', args.port),
                                             handler_for(inventory))
    print('serving on %d' % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == '__main__':
    main()
