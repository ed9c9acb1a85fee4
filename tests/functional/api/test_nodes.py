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

"""The node inventory over the real WSGI app."""

import datetime
import os
import uuid

import fixtures

from reserveapi import policy
from reserveapi.db import inventory as db_inventory
from reserveapi.inventory import nodes as inventory_nodes
from reserveapi.policies import node as node_policy
from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.functional import base

HOST = 'compute-3'
INSTANCE_UUID = '2d9e7a3c-5b1f-4e8a-9c6d-0f1e2a3b4c5d'


class NodesTestCase(base.APITestCase):

    def setUp(self):
        super().setUp()
        self.before_sync = datetime.datetime.now(datetime.timezone.utc)
        self.inventory_path = inventory.sync_path(self, [
            inventory.node('node-gold-1', conductor_group='rack-a',
                           shard='shard-1', ironic_traits=True),
            inventory.node('node-gold-2', memory_mb=16384,
                           conductor_group='rack-a'),
            inventory.node('node-gold-3', maintenance=True),
            inventory.node('node-silver-1', resource_class='baremetal_silver',
                           capabilities='boot_mode:bios', traits=[]),
            inventory.node('node-gold-4', resource_class='baremetal-gold',
                           provision_state='deploying', owner='p1'),
            inventory.node(None, uuid='f1b6c2d4-8e0a-4b3c-9d5e-7a1f2c3b4d5e',
                           resource_class=None),
        ])
        self.config(subset_size=1, group='matcher')
        reserved = self.request('POST', '/v1/reservations', {
            'instance_uuid': INSTANCE_UUID, 'host': HOST,
            'request_spec': examples.REQUEST_SPEC})
        self.assertEqual(201, reserved.status_int, reserved.text)
        self.assertEqual('node-gold-1', reserved.json['node_name'])
        self.reservation = reserved.json

    @property
    def latest(self):
        return dict(self.admin_headers,
                    **{'OpenStack-API-Version': 'baremetal-reservation 1.1'})

    def get(self, path, status=200, headers=None):
        response = self.request('GET', path, headers=headers)
        self.assertEqual(status, response.status_int, response.text)
        return response.json

    def names(self, query=''):
        return [node['name'] for node in self.get('/v1/nodes' + query)[
            'nodes']]


def open_every_node_to_readers(test, *rules):
    """The view before microversion 1.4, as an operator's policy file may
    open it again, with ``rules`` (policy file lines) besides."""
    path = os.path.join(test.useFixture(fixtures.TempDir()).path,
                        'policy.yaml')
    with open(path, 'w') as stream:
        stream.write('"%s": "role:reader"\n' % node_policy.LIST_ALL)
        stream.writelines(rule + '\n' for rule in rules)
    test.config(policy_file=path, group='oslo_policy')
    policy.reset()
    test.addCleanup(policy.reset)


class TestNodes(NodesTestCase):
    scenarios = base.EVERY_BACKEND

    def test_show_by_uuid_and_name(self):
        by_name = self.get('/v1/nodes/node-gold-1', headers=self.latest)
        self.assertMatchesSample(by_name, 'nodes/show-response.json')
        self.assertEqual(inventory.node_uuid('node-gold-1'), by_name['uuid'])
        by_uuid = self.get('/v1/nodes/' + by_name['uuid'],
                           headers=self.latest)
        self.assertEqual(by_name, by_uuid)
        self.assertEqual({
            'uuid': self.reservation['uuid'],
            'instance_uuid': INSTANCE_UUID,
            'host': HOST,
            'state': 'reserved',
            'links': self.reservation['links'],
        }, by_name['reservation'])
        self.assertEqual('http://localhost/v1/nodes/' + by_name['uuid'],
                         by_name['links'][0]['href'])
        synced_at = datetime.datetime.fromisoformat(by_name['synced_at'])
        self.assertLessEqual(
            self.before_sync.replace(microsecond=0), synced_at)
        self.assertEqual(['CUSTOM_RAID', 'HW_CPU_X86_AVX2'],
                         by_name['traits'])
        self.assertEqual({'boot_mode': 'uefi', 'has_gpu': 'True',
                          'supports_uefi': 'true'}, by_name['capabilities'])

    def test_unreserved_and_unnamed_nodes(self):
        free = self.get('/v1/nodes/node-gold-2')
        self.assertIsNone(free['reservation'])
        self.assertEqual('rack-a', free['conductor_group'])
        unnamed = self.get('/v1/nodes/f1b6c2d4-8e0a-4b3c-9d5e-7a1f2c3b4d5e')
        self.assertIsNone(unnamed['name'])
        self.assertIsNone(unnamed['resource_class'])
        self.assertIsNone(unnamed['conductor_group'])
        self.assertEqual('CUSTOM_BAREMETAL_SILVER', self.get(
            '/v1/nodes/node-silver-1')['resource_class'])

    def test_uuid_in_any_case(self):
        node_uuid = inventory.node_uuid('node-gold-2')
        self.assertEqual(self.get('/v1/nodes/' + node_uuid),
                         self.get('/v1/nodes/' + node_uuid.upper()))

    def test_unknown_node_is_404(self):
        for ident in (str(uuid.uuid4()), 'node-platinum-1'):
            response = self.request('GET', '/v1/nodes/' + ident)
            error = self.assertError(response, 404,
                                     'reserveapi.node_not_found')
            self.assertIn(ident, error['detail'])

    def test_list_sample(self):
        # The sample shows Ironic unreachable after a sync.
        self.config(source='ironic', group='inventory')
        db_inventory.record_inventory_sync(
            'ironic', 6, location='http://ironic.example.com:6385')
        db_inventory.note_outage(
            'ironic', 'Ironic is unavailable: Unable to establish '
            'connection to http://ironic.example.com:6385/v1/nodes: '
            'Connection refused')
        listed = self.get('/v1/nodes?resource_class=baremetal-gold&limit=1'
                          '&sort_key=name', headers=self.latest)
        self.assertMatchesSample(listed, 'nodes/list-response.json')
        self.assertIn('marker=' + inventory.node_uuid('node-gold-1'),
                      listed['next'])
        self.assertIn('resource_class=baremetal-gold', listed['next'])

    def test_version_1_0_has_no_partition_nor_sync_state(self):
        listed = self.get('/v1/nodes')
        self.assertNotIn('inventory', listed)
        for node in listed['nodes'] + [self.get('/v1/nodes/node-gold-1')]:
            self.assertNotIn('shard', node)
            self.assertNotIn('stale_since', node)
        response = self.request('GET', '/v1/nodes?shard=shard-1')
        error = self.assertError(response, 400, 'reserveapi.invalid')
        self.assertIn('shard', error['detail'])

    def test_shard_filter_and_field(self):
        listed = self.get('/v1/nodes?shard=shard-1', headers=self.latest)
        self.assertEqual(['node-gold-1'],
                         [node['name'] for node in listed['nodes']])
        self.assertEqual(('shard-1', None), (
            listed['nodes'][0]['shard'], listed['nodes'][0]['stale_since']))
        self.assertEqual([], self.get('/v1/nodes?shard=shard-9',
                                      headers=self.latest)['nodes'])

    def test_inventory_says_when_and_from_where(self):
        state = self.get('/v1/nodes?limit=1', headers=self.latest)[
            'inventory']
        synced_at = datetime.datetime.fromisoformat(state['synced_at'])
        self.assertLessEqual(self.before_sync.replace(microsecond=0),
                             synced_at)
        self.assertEqual(('file', self.inventory_path, None, None), (
            state['source'], state['location'],
            state['unreachable_since'], state['last_error']))
        self.assertEqual(state['synced_at'], state['full_synced_at'])

    def test_list_shows_every_node(self):
        listed = self.get('/v1/nodes')['nodes']
        self.assertEqual(6, len(listed))
        self.assertNotIn('next', self.get('/v1/nodes'))
        self.assertEqual(sorted(node['uuid'] for node in listed),
                         [node['uuid'] for node in listed])
        reserved = [node['name'] for node in listed if node['reservation']]
        self.assertEqual(['node-gold-1'], reserved)
        for node in listed:
            self.assertEqual(self.get('/v1/nodes/' + node['uuid']), node)

    def test_filters(self):
        gold = ['node-gold-1', 'node-gold-2', 'node-gold-3', 'node-gold-4']
        for resource_class in ('baremetal-gold', 'CUSTOM_BAREMETAL_GOLD',
                               'Baremetal.Gold'):
            self.assertEqual(gold, self.names(
                '?sort_key=name&resource_class=' + resource_class))
        self.assertEqual(['node-silver-1'], self.names(
            '?resource_class=baremetal-silver'))
        self.assertEqual([], self.names('?resource_class=platinum'))
        self.assertEqual(['node-gold-1'], self.names('?reserved=true'))
        self.assertEqual(5, len(self.names('?reserved=false')))
        self.assertEqual(['node-gold-3'], self.names('?maintenance=True'))
        self.assertEqual(5, len(self.names('?maintenance=false')))
        self.assertEqual(['node-gold-4'], self.names(
            '?provision_state=deploying'))
        self.assertEqual(['node-gold-1', 'node-gold-2'], self.names(
            '?conductor_group=rack-a&sort_key=name'))
        self.assertEqual(['node-gold-2'], self.names(
            '?conductor_group=rack-a&reserved=false'
            '&resource_class=baremetal-gold'))

    def test_bad_queries_are_400(self):
        for query in ('reserved=maybe', 'maintenance=2', 'limit=0',
                      'limit=x', 'sort_key=traits', 'sort_dir=sideways',
                      'marker=%s' % uuid.uuid4(), 'owner=p1'):
            response = self.request('GET', '/v1/nodes?' + query)
            error = self.assertError(response, 400, 'reserveapi.invalid')
            self.assertIn(query.split('=')[0], error['detail'])

    def walk(self, query, page_size):
        uuids = []
        url = '/v1/nodes?%slimit=%d' % (query, page_size)
        while url:
            page = self.get(url)
            self.assertLessEqual(len(page['nodes']), page_size)
            uuids.extend(node['uuid'] for node in page['nodes'])
            self.assertLess(len(uuids), 20, 'next links never end')
            url = page.get('next')
            if url:
                self.assertEqual(page_size, len(page['nodes']))
                url = url[len('http://localhost'):]
        return uuids

    def test_pagination_every_sort_key(self):
        everything = {node['uuid'] for node in self.get('/v1/nodes')['nodes']}
        for sort_key in inventory_nodes.SORT_KEYS:
            for sort_dir in ('asc', 'desc'):
                query = 'sort_key=%s&sort_dir=%s&' % (sort_key, sort_dir)
                listed = [node['uuid'] for node in self.get(
                    '/v1/nodes?' + query.rstrip('&'))['nodes']]
                self.assertEqual(everything, set(listed))
                for page_size in (1, 4):
                    self.assertEqual(listed, self.walk(query, page_size),
                                     (sort_key, sort_dir, page_size))
            ascending = self.get('/v1/nodes?sort_key=' + sort_key)['nodes']
            descending = self.get('/v1/nodes?sort_dir=desc&sort_key=' +
                                  sort_key)['nodes']
            self.assertEqual(list(reversed(ascending)), descending, sort_key)
            values = [node[sort_key] for node in ascending]
            present = [value for value in values if value is not None]
            # NULL (the unnamed node's name and class) sorts last.
            self.assertEqual(
                present + [None] * (len(values) - len(present)), values,
                sort_key)
        self.assertEqual(
            ['node-gold-1', 'node-gold-2', 'node-gold-3', 'node-gold-4',
             'node-silver-1', None],
            [node['name'] for node in self.get('/v1/nodes?sort_key=name')[
                'nodes']])

    def test_pages_keep_filters(self):
        walked = self.walk('resource_class=baremetal-gold&sort_key=name&', 1)
        self.assertEqual(
            [inventory.node_uuid(name) for name in (
                'node-gold-1', 'node-gold-2', 'node-gold-3',
                'node-gold-4')], walked)

    def test_reservation_follows_the_node(self):
        path = '/v1/reservations/' + self.reservation['uuid']
        self.assertEqual(200, self.request('PATCH', path, [
            {'op': 'replace', 'path': '/state', 'value': 'active'},
            {'op': 'replace', 'path': '/host', 'value': 'compute-7'}
        ]).status_int)
        shown = self.get('/v1/nodes/node-gold-1')['reservation']
        self.assertEqual(('active', 'compute-7'),
                         (shown['state'], shown['host']))
        self.assertEqual(204, self.request('DELETE', path).status_int)
        self.assertIsNone(self.get('/v1/nodes/node-gold-1')['reservation'])
        self.assertEqual([], self.names('?reserved=true'))

    def test_vanished_node_stays_while_reserved(self):
        inventory.sync(self, [inventory.node('node-gold-2')])
        kept = self.get('/v1/nodes/node-gold-1')
        self.assertTrue(kept['vanished'])
        self.assertEqual(self.reservation['uuid'], kept['reservation']['uuid'])
        self.assertEqual(['node-gold-1', 'node-gold-2'],
                         self.names('?sort_key=name'))
        self.get('/v1/nodes/node-gold-3', status=404)

    def test_a_reader_sees_only_that_another_project_holds_a_node(self):
        """Where the policy opens every node to readers, another
        project's reservation still shows only as held."""
        open_every_node_to_readers(self)
        other = self.headers_for(['reader'], project_id='another-project')
        shown = self.get('/v1/nodes/node-gold-1', headers=other)
        self.assertEqual({'uuid': None, 'instance_uuid': None, 'host': None,
                          'state': 'reserved', 'links': []},
                         shown['reservation'])
        own = self.headers_for(['reader'])
        self.assertEqual(self.reservation['uuid'], self.get(
            '/v1/nodes/node-gold-1', headers=own)['reservation']['uuid'])
        listed = {node['name']: node['reservation'] for node in self.get(
            '/v1/nodes', headers=other)['nodes']}
        self.assertEqual(shown['reservation'], listed['node-gold-1'])

    def test_a_reader_sees_only_its_projects_nodes(self):
        """Ironic's rule: a project's reader sees the nodes its project
        owns or leases, and no node that nobody owns."""
        reader = self.headers_for(['reader'], project_id='any-project')
        self.assertEqual([], self.get('/v1/nodes', headers=reader)['nodes'])
        self.assertError(self.request('GET', '/v1/nodes/node-gold-1',
                                      headers=reader),
                         404, 'reserveapi.node_not_found')
        self.assertEqual(6, len(self.get(
            '/v1/nodes', headers=self.service_headers)['nodes']))
        member = self.headers_for(['member'], project_id='any-project')
        self.assertError(self.request('GET', '/v1/nodes', headers=member),
                         403, 'reserveapi.forbidden')


class TestOwnerAndLessee(base.APITestCase):
    """A node's owner and lessee show only to those projects, admins and
    the service, whether the node is free or held."""

    def setUp(self):
        super().setUp()
        inventory.sync(self, [
            inventory.node('node-owned', owner='owner-project'),
            inventory.node('node-leased', owner='owner-project',
                           lessee='lessee-project'),
            inventory.node('node-free-for-all'),
        ])
        self.held = self.request('POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'host': HOST,
            'project_id': 'lessee-project', 'candidate_nodes': ['node-leased'],
            'request_spec': examples.REQUEST_SPEC}).json
        self.assertEqual('node-leased', self.held['node_name'])

    def seen(self, headers):
        """``{name: (owner, lessee)}`` from the list, the same as each
        node shown alone."""
        listed = self.request('GET', '/v1/nodes', headers=headers)
        self.assertEqual(200, listed.status_int, listed.text)
        seen = {}
        for node in listed.json['nodes']:
            one = self.request('GET', '/v1/nodes/' + node['name'],
                               headers=headers).json
            self.assertEqual(node, one)
            seen[node['name']] = (node['owner'], node['lessee'])
        return seen

    def test_who_sees_what(self):
        everything = {'node-owned': ('owner-project', None),
                      'node-leased': ('owner-project', 'lessee-project'),
                      'node-free-for-all': (None, None)}
        cases = [
            (self.admin_headers, everything),
            (self.service_headers, everything),
            # A project sees only the nodes it owns or leases.
            (self.headers_for(['reader'], 'owner-project'),
             {name: everything[name]
              for name in ('node-owned', 'node-leased')}),
            (self.headers_for(['reader'], 'lessee-project'),
             {'node-leased': everything['node-leased']}),
            (self.headers_for(['reader'], 'another-project'), {}),
            # Another project's admin is an admin of the service.
            (self.headers_for(['admin'], 'another-project'), everything),
        ]
        for headers, expected in cases:
            self.assertEqual(expected, self.seen(headers),
                             (headers['X-Roles'], headers['X-Project-Id']))

    def test_the_old_view_still_hides_whose_a_node_is(self):
        """Where the policy opens every node to readers, a stranger
        still sees no owner, lessee or reservation of them."""
        open_every_node_to_readers(self)
        nothing = {'node-owned': (None, None), 'node-leased': (None, None),
                   'node-free-for-all': (None, None)}
        self.assertEqual(nothing, self.seen(
            self.headers_for(['reader'], 'another-project')))

    def test_held_by_the_lessee_tells_a_stranger_nothing(self):
        open_every_node_to_readers(self)
        stranger = self.headers_for(['reader'], 'another-project')
        node = self.request('GET', '/v1/nodes/node-leased',
                            headers=stranger).json
        self.assertEqual((None, None, None, None, 'reserved'), (
            node['owner'], node['lessee'], node['instance_uuid'],
            node['reservation']['uuid'], node['reservation']['state']))
        lessee = self.headers_for(['reader'], 'lessee-project')
        node = self.request('GET', '/v1/nodes/node-leased',
                            headers=lessee).json
        self.assertEqual(('owner-project', 'lessee-project',
                          self.held['uuid']), (
            node['owner'], node['lessee'], node['reservation']['uuid']))

    def test_the_rule_is_the_policy_files(self):
        open_every_node_to_readers(
            self, '"%s": "role:reader"' % node_policy.GET_OWNER_LESSEE)
        stranger = self.headers_for(['reader'], 'another-project')
        self.assertEqual(('owner-project', 'lessee-project'),
                         self.seen(stranger)['node-leased'])
