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

"""Ironic shards from nova.conf inside real Nova: each host reserves, and
reports, only its own shard's nodes."""

import os

import fixtures
from nova import context as nova_context

from reserveapi_testing.nova import base
from reserveapi_testing.nova import nova_api

# Shard -> its hosts and how many Ironic nodes it has.
SHARDS = {'sa': ('host-a', 2), 'sb': ('host-b', 3)}
GPU = 'CUSTOM_GPU'


class TestShards(base.IronicTestCase):
    """Two hosts, ``[ironic] shard = sa`` and ``sb``, with nova-api's
    aggregate hook and the service mirroring through that nova-api."""

    HOSTS = ()
    NODES = 0

    def api_paste_config(self):
        return nova_api.write_paste_with_hook(os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'api-paste.ini'))

    def setUp(self):
        super().setUp()
        self.shard_nodes = {
            shard: set(self.ironic.seed_nodes(count, shard=shard))
            for shard, (_, count) in SHARDS.items()}
        # A trait only a node of shard sb has.
        self.ironic.set_traits(sorted(self.shard_nodes['sb'])[0], [GPU])
        self.sync_reservation_inventory()
        sections = nova_api.serve_peers_on_loopback(self)
        sections['mirror'] = {'resolve_hosts_via_nova': 'true'}
        self.reserveapi.configure(sections)
        self.reserveapi.stop()
        self.reserveapi.start()
        for shard, (host, _) in sorted(SHARDS.items()):
            # nova.conf is per process; each driver reads its host's shard
            # once, at start.
            self.flags(group='ironic', shard=shard)
            self.computes[host] = self.start_service('compute', host=host)

    def shard_of(self, server):
        node = self.ironic_node_of(server)['uuid']
        (shard,) = [shard for shard, nodes in self.shard_nodes.items()
                    if node in nodes]
        return shard

    def provider_of(self, host):
        (node,) = [node for node in self.compute_nodes()
                   if node.hypervisor_hostname == host]
        return node.uuid

    def test_each_host_reports_its_shard(self):
        for shard, (host, count) in SHARDS.items():
            provider = self.provider_of(host)
            inventory = self.provider_inventory(provider)
            self.assertEqual(
                (count, 0),
                (inventory[base.RESOURCE_CLASS]['total'],
                 inventory[base.RESOURCE_CLASS]['reserved']), host)
            traits = set(self.placement.get(
                '/resource_providers/%s/traits' % provider,
                version='1.6').body['traits'])
            self.assertEqual(shard == 'sb', GPU in traits, host)

    def test_boots_land_on_their_hosts_shard_until_it_is_full(self):
        for shard, (host, count) in sorted(SHARDS.items()):
            servers = self.wait_for_status(
                self.boot(count - 1, name=shard, host=host), ('ACTIVE',))
            self.assertEqual({(host, shard)}, {
                (server['OS-EXT-SRV-ATTR:host'], self.shard_of(server))
                for server in servers})
        (last,) = self.wait_for_status(self.boot(1, host='host-a'),
                                       ('ACTIVE',))
        self.assertEqual('sa', self.shard_of(last))

        # Shard sa is full; sb still has a free node, which host-a never
        # takes: the boot finds no valid host.
        (refused,) = self.wait_for_status(self.boot(1, host='host-a'),
                                          ('ERROR',))
        self.assertIn('No valid host', refused['fault']['message'])
        reserved = {r['node_uuid'] for r in self.reserveapi.reservations()}
        self.assertEqual(self.shard_nodes['sa'],
                         reserved & self.shard_nodes['sa'])
        self.assertEqual(1, len(self.shard_nodes['sb'] - reserved))

        # Its capacity, once its resource tracker runs: all held.
        self.flags(group='reserveapi', inventory_cache_time=0)
        self.computes['host-a'].manager.update_available_resource(
            nova_context.get_admin_context())
        usages = self.placement.get(
            '/resource_providers/%s/usages' % self.provider_of('host-a')
        ).body['usages']
        self.assertEqual(SHARDS['sa'][1], usages[base.RESOURCE_CLASS])

    def test_an_availability_zone_of_shard_a_hosts(self):
        aggregate = self.api.post_aggregate({'aggregate': {
            'name': 'rack-a', 'availability_zone': 'az-a'}})
        self.api.add_host_to_aggregate(aggregate['id'], 'host-a')
        # The hook told the service, which put the aggregate on host-a's
        # provider: Nova's AZ request filter asks Placement for
        # member_of that aggregate.
        self.assertEqual([('host-a', True, 'synced')], [
            (row['host'], row['member'], row['state']) for row in
            self.reserveapi.aggregate(aggregate['uuid'])['hosts']])
        self.assertEqual([aggregate['uuid']], self.placement.get(
            '/resource_providers/%s/aggregates' % self.provider_of('host-a'),
            version='1.19').body['aggregates'])
        servers = self.wait_for_status(self.boot(2, az='az-a'),
                                       ('ACTIVE',))
        self.assertEqual({('host-a', 'sa')}, {
            (server['OS-EXT-SRV-ATTR:host'], self.shard_of(server))
            for server in servers})
