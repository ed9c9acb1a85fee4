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

"""``fake_ironic.py`` as Nova's stock Ironic driver sees it, for
``stock_periodic.py``: the node list with the fields that driver asks for,
plus what the SDK also asks (version discovery, a node by UUID), and every
node one the driver manages (a resource class, no instance of anyone
else's, traits listed by name).

Run it as its own process (run from this directory, it imports
``fake_ironic`` beside it); it prints ``serving on PORT`` when ready::

    python -m tools.bench.nova_fake_ironic --nodes 10000
"""

import argparse
import http.server
import json
import urllib.parse

from tools.bench import fake_ironic

# What the stock driver lists (nova.virt.ironic.driver._NODE_FIELDS).
NOVA_FIELDS = ('uuid', 'power_state', 'target_power_state',
               'provision_state', 'target_provision_state', 'last_error',
               'maintenance', 'properties', 'instance_uuid', 'traits',
               'resource_class')


def _as_nova_sees_them(generate_nodes):
    def generate(count, seed):
        for node in generate_nodes(count, seed):
            node['resource_class'] = node['resource_class'] or 'baremetal'
            node['instance_uuid'] = None
            node['traits'] = [trait['trait'] if isinstance(trait, dict)
                              else trait for trait in node['traits']]
            yield node
    return generate


def handler_for(inventory):

    class Handler(fake_ironic.handler_for(inventory)):

        def do_GET(self):
            path = urllib.parse.urlsplit(self.path).path.rstrip('/')
            version = {'id': 'v1', 'status': 'CURRENT', 'min_version': '1.1',
                       'version': fake_ironic.VERSION, 'links': [{
                           'href': 'http://%s/v1/' % self.headers.get(
                               'Host', 'localhost'), 'rel': 'self'}]}
            if path == '':
                return self._answer(200, json.dumps({
                    'versions': [version], 'default_version': version}))
            if path == '/v1':
                return self._answer(200, json.dumps({
                    'id': 'v1', 'links': version['links'],
                    'version': version}))
            node = path.removeprefix('/v1/nodes/')
            if node in inventory.position:
                return self._answer(
                    200, inventory.detail[inventory.position[node]])
            return super().do_GET()

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nodes', type=int, default=10000)
    parser.add_argument('--seed', type=int, default=1)
    args = parser.parse_args()
    generator = fake_ironic.generate_inventory
    generator.generate_nodes = _as_nova_sees_them(generator.generate_nodes)
    inventory = fake_ironic.Inventory(args.nodes, args.seed, NOVA_FIELDS)
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                             handler_for(inventory))
    print('serving on %d' % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == '__main__':
    main()
