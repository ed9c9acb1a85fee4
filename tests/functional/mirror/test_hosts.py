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

"""Host → providers, with Placement real and Nova faked."""

import uuid

from reserveapi.common import exception
from reserveapi.mirror import hosts
from reserveapi.mirror import nova
from tests.functional.fixtures import nova as nova_fixture
from tests.functional.mirror import base as mirror_base


class HostsTestCase(mirror_base.MirrorTestCase):

    page_size = 1000

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(nova_fixture.NovaFixture(
            page_size=self.page_size,
            link_base='http://compute.example.invalid/v2.1'))
        self.nova.configure(self.conf_fixture)
        self.conf_fixture.config(group='mirror', resolve_hosts_via_nova=True)
        self.resolver = hosts.HostResolver(self.client)

    def ironic_node(self, host):
        """A node Nova reports for ``host``, and its provider, named after
        the node as the Ironic driver names it."""
        node = self.nova.add_compute_node(host)
        return self.placement.create_provider(name=node, uuid=node)

    def join(self, host, aggregate):
        """What the mirror does for "host joins aggregate"."""
        for rp in self.resolver.providers_for_host(host):
            self.client.add_aggregate(rp, aggregate)


class TestHostResolver(HostsTestCase):

    def test_every_provider_of_the_host(self):
        by_name = self.placement.create_provider('ironic-1')
        nodes = [self.ironic_node('ironic-1') for _ in range(3)]
        elsewhere = self.ironic_node('ironic-2')
        aggregate = str(uuid.uuid4())

        self.assertEqual(sorted([by_name, *nodes]),
                         self.resolver.providers_for_host('ironic-1'))

        self.join('ironic-1', aggregate)
        self.assertEqual({by_name, *nodes}, self.placement.members(aggregate))
        self.assertEqual(set(), self.placement.aggregates(elsewhere))

    def test_provider_named_after_host_and_reported_by_nova_counts_once(self):
        rp = self.placement.create_provider('compute-1')
        self.nova.add_compute_node('compute-1', uuid=rp,
                                   hypervisor_hostname='compute-1')
        aggregate = str(uuid.uuid4())

        self.assertEqual([rp], self.resolver.providers_for_host('compute-1'))
        self.join('compute-1', aggregate)
        self.assertEqual({aggregate}, self.placement.aggregates(rp))

    def test_host_name_differs_from_hypervisor_hostname(self):
        # Nova bug 1877229: the provider is named after the hypervisor
        # (often an FQDN), not after the service host.
        rp = self.placement.create_provider('compute-1.example.org')
        self.nova.add_compute_node('compute-1', uuid=rp,
                                   hypervisor_hostname='compute-1.example.org')
        aggregate = str(uuid.uuid4())

        self.join('compute-1', aggregate)
        self.assertEqual({rp}, self.placement.members(aggregate))

    def test_without_nova_only_by_name(self):
        self.conf_fixture.config(group='mirror', resolve_hosts_via_nova=False)
        by_name = self.placement.create_provider('ironic-1')
        self.ironic_node('ironic-1')
        aggregate = str(uuid.uuid4())

        self.join('ironic-1', aggregate)

        self.assertEqual({by_name}, self.placement.members(aggregate))
        self.assertEqual([], self.nova.requests)

    def test_no_provider_yet(self):
        self.placement.create_provider('compute-10')
        self.ironic_node('ironic-1')

        self.assertEqual([], self.resolver.providers_for_host('compute-1'))
        self.conf_fixture.config(group='mirror', resolve_hosts_via_nova=False)
        self.assertEqual([], self.resolver.providers_for_host('compute-1'))
        self.assertEqual(
            [], [rp for rp in self.placement.request(
                'GET', '/resource_providers')['resource_providers']
                 if rp['name'] == 'compute-1'])

    def test_node_known_to_nova_before_its_provider_exists(self):
        node = self.nova.add_compute_node('ironic-1')
        aggregate = str(uuid.uuid4())

        self.assertEqual([node], self.resolver.providers_for_host('ironic-1'))
        self.assertRaises(exception.ProviderGone, self.join, 'ironic-1',
                          aggregate)

        self.placement.create_provider(name=node, uuid=node)
        self.join('ironic-1', aggregate)
        self.assertEqual({node}, self.placement.members(aggregate))

    def test_many_hosts_list_hypervisors_once(self):
        first = self.ironic_node('ironic-1')
        second = [self.ironic_node('ironic-2') for _ in range(2)]
        by_name = self.placement.create_provider('ironic-3')
        aggregate = str(uuid.uuid4())

        found = self.resolver.providers_for_hosts(
            ['ironic-1', 'ironic-2', 'ironic-3', 'ironic-4'])

        self.assertEqual({'ironic-1': [first], 'ironic-2': sorted(second),
                          'ironic-3': [by_name], 'ironic-4': []}, found)
        self.assertEqual(1, len(self.nova.requests))
        for rp in found['ironic-2']:
            self.client.add_aggregate(rp, aggregate)
        self.assertEqual(set(second), self.placement.members(aggregate))

    def test_nova_down_is_an_error_not_a_partial_answer(self):
        self.placement.create_provider('ironic-1')
        self.ironic_node('ironic-1')
        aggregate = str(uuid.uuid4())
        self.nova.stop()

        self.assertRaises(exception.NovaUnavailable, self.join, 'ironic-1',
                          aggregate)
        self.assertRaises(exception.PeerError, self.join, 'ironic-1',
                          aggregate)
        self.assertEqual(set(), self.placement.members(aggregate))

    def test_nova_client_built_from_conf_when_not_given(self):
        node = self.ironic_node('ironic-1')
        self.assertEqual([node], self.resolver.providers_for_host('ironic-1'))
        self.assertIsInstance(self.resolver.nova, nova.NovaClient)


class TestHypervisorPages(HostsTestCase):

    page_size = 2

    def assert_pages(self, node_count, markers):
        nodes = [self.ironic_node('ironic-1') for _ in range(node_count)]
        aggregate = str(uuid.uuid4())

        self.join('ironic-1', aggregate)

        self.assertEqual(set(nodes), self.placement.members(aggregate))
        self.assertEqual([None] + [nodes[i] for i in markers],
                         [request['query'].get('marker')
                          for request in self.nova.requests])

    def test_last_page_partly_filled(self):
        self.assert_pages(5, markers=[1, 3])

    def test_last_page_empty(self):
        # Nova links to a next page whenever a page is full.
        self.assert_pages(4, markers=[1, 3])


class TestNovaClient(HostsTestCase):

    def setUp(self):
        super().setUp()
        self.nova_client = nova.NovaClient()

    def test_hypervisors_of_a_host(self):
        nodes = sorted(self.ironic_node('ironic-1') for _ in range(2))
        self.ironic_node('ironic-2')

        found = [hypervisor for hypervisor in self.nova_client.hypervisors()
                 if nova.service_host(hypervisor) == 'ironic-1']

        self.assertEqual(nodes, sorted(node['id'] for node in found))
        for node in nodes:
            self.assertEqual(node, self.placement.get_provider(node)['uuid'])
        self.assertEqual({(2, 53)},
                         {request['version']
                          for request in self.nova.requests})

    def test_aggregates_mirror_into_placement(self):
        rps = [self.placement.create_provider('compute-%d' % i)
               for i in (1, 2)]
        first = self.nova.add_aggregate(hosts=['compute-2', 'compute-1'])
        second = self.nova.add_aggregate()

        wanted = self.nova_client.aggregates()
        for aggregate in wanted:
            for host in aggregate['hosts']:
                self.join(host, aggregate['uuid'])

        self.assertEqual([{'uuid': first, 'hosts': ['compute-1', 'compute-2']},
                          {'uuid': second, 'hosts': []}], wanted)
        self.assertEqual(set(rps), self.placement.members(first))
        self.assertEqual(set(), self.placement.members(second))
        self.assertEqual({(2, 53)},
                         {request['version']
                          for request in self.nova.requests})

    def test_nova_errors(self):
        rp = self.placement.create_provider('compute-1')
        self.nova.add_aggregate(hosts=['compute-1'])
        self.nova.stop()
        self.assertRaises(exception.NovaUnavailable,
                          self.nova_client.aggregates)
        self.nova.start()
        self.conf_fixture.config(
            group='nova', token='stale-9f3c1e')  # noqa: S106 - test value
        client = nova.NovaClient()

        error = self.assertRaises(exception.NovaError, client.aggregates)

        self.assertNotIsInstance(error, exception.NovaUnavailable)
        self.assertNotIn('stale-9f3c1e', str(error))
        self.assertEqual(set(), self.placement.aggregates(rp))
