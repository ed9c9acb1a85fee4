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

"""Ironic 39's behaviour that the Ironic source and the Nova driver rely on.

Each test pins one fact listed in ``reserveapi_testing/ironic.py``; if a new
Ironic changes it, the test says which assumption broke.
"""

import datetime
import uuid as uuidlib

from reserveapi_testing import ironic as ironic_fixture
from tests.ironic import base


class TestMicroversions(base.IronicTestCase):

    def _status(self, microversion, **params):
        return self.ironic.request('GET', '/v1/nodes', params=params,
                                   expected=None,
                                   microversion=microversion).status_code

    def test_shard_needs_1_82(self):
        self.assertEqual(ironic_fixture.SHARD_VERSION, '1.82')
        self.assertEqual((406, 406), (
            self._status('1.81', fields='uuid,shard'),
            self._status('1.81', shard='s1')))
        self.assertEqual((200, 200), (
            self._status('1.82', fields='uuid,shard'),
            self._status('1.82', shard='s1')))

    def test_fields_needs_1_8_and_traits_in_them_1_37(self):
        self.assertEqual(ironic_fixture.FIELDS_VERSION, '1.8')
        self.assertEqual((406, 200), (self._status('1.7', fields='uuid'),
                                      self._status('1.8', fields='uuid')))
        self.assertEqual((406, 200), (
            self._status('1.36', fields='uuid,traits'),
            self._status('1.37', fields='uuid,traits')))


class TestFieldsFilter(base.IronicTestCase):

    def setUp(self):
        super().setUp()
        self.ironic.seed_nodes(2, traits=['CUSTOM_A'])

    def _status(self, **params):
        return self.ironic.request('GET', '/v1/nodes', params=params,
                                   expected=None).status_code

    def test_timestamps_are_refused(self):
        self.assertEqual({'updated_at': 400, 'created_at': 400}, {
            field: self._status(fields='uuid,' + field)
            for field in ('updated_at', 'created_at')})

    def test_some_fields_are_server_errors_in_a_list(self):
        broken = ('allocation_uuid', 'chassis_uuid', 'conductor', 'links',
                  'ports', 'portgroups', 'states', 'volume')
        self.assertEqual({field: 500 for field in broken}, {
            field: self._status(fields='uuid,' + field) for field in broken})

    def test_fields_with_detail_is_refused(self):
        self.assertEqual(400, self._status(fields='uuid', detail='True'))

    def test_every_field_matching_needs_is_accepted(self):
        fields = ('uuid,name,resource_class,properties,traits,'
                  'provision_state,power_state,maintenance,retired,'
                  'instance_uuid,instance_info,conductor_group,shard,owner,'
                  'lessee,automated_clean,last_error,target_provision_state')
        nodes = self.ironic.list_nodes(fields=fields)

        self.assertEqual(2, len(nodes))
        self.assertEqual(set(fields.split(',')) | {'links'}, set(nodes[0]))
        self.assertEqual(['CUSTOM_A'], nodes[0]['traits'])


class TestUpdatedAtPages(base.IronicTestCase):

    def test_pages_by_updated_at_drop_nodes_never_updated(self):
        start = datetime.datetime(2030, 1, 1)
        seeded = self.ironic.seed_nodes(
            4, updated_at=lambda i: start + datetime.timedelta(minutes=i))
        created = self.ironic.create_node()
        self.assertIsNone(created['updated_at'])
        newest_first = dict(detail=True, sort_key='updated_at',
                            sort_dir='desc')

        first = self.ironic.request('GET', '/v1/nodes', params=dict(
            newest_first, limit=3)).json()
        rest = self.ironic.list_nodes(marker=first['nodes'][-1]['uuid'],
                                      **newest_first)
        unpaged = self.ironic.list_nodes(**newest_first)

        self.assertEqual(seeded[:0:-1], [n['uuid'] for n in first['nodes']])
        self.assertEqual([seeded[0]], [n['uuid'] for n in rest])
        self.assertEqual(seeded[::-1] + [created['uuid']],
                         [n['uuid'] for n in unpaged])
        for part in ('sort_key=updated_at', 'sort_dir=desc', 'detail=True',
                     'limit=3', 'marker=%s' % seeded[1]):
            self.assertIn(part, first['next'])

    def test_trait_change_moves_a_node_to_the_top(self):
        old, newer = self.ironic.seed_nodes(2, updated_at=lambda i: (
            datetime.datetime(2020, 1, 1 + i)))

        self.ironic.set_traits(old, ['CUSTOM_NEW'])

        nodes = self.ironic.list_nodes(detail=True, sort_key='updated_at',
                                       sort_dir='desc')
        self.assertEqual([old, newer], [n['uuid'] for n in nodes])


class TestClaims(base.IronicTestCase):

    def test_claim_is_accepted_on_a_manageable_node(self):
        node, = self.ironic.seed_nodes(1, provision_state='manageable')
        instance = str(uuidlib.uuid4())

        claimed = self.ironic.update_node(node, instance_uuid=instance).json()

        self.assertEqual(('manageable', instance), (
            claimed['provision_state'], claimed['instance_uuid']))

    def test_a_second_instance_is_409_the_same_one_200(self):
        node, = self.ironic.seed_nodes(1)
        ours, theirs = str(uuidlib.uuid4()), str(uuidlib.uuid4())
        info = {'capabilities': '{"boot_mode": "uefi"}', 'traits': []}
        self.ironic.update_node(node, instance_uuid=ours, instance_info=info)

        refused = self.ironic.update_node(node, expected=None,
                                          instance_uuid=theirs)
        again = self.ironic.update_node(node, instance_uuid=ours).json()

        self.assertEqual(409, refused.status_code)
        self.assertIn('is associated with instance %s' % ours, refused.text)
        self.assertEqual((ours, info), (again['instance_uuid'],
                                        again['instance_info']))

    def test_clearing_the_claim(self):
        node, = self.ironic.seed_nodes(
            1, instance_uuid=str(uuidlib.uuid4()),
            instance_info={'traits': ['CUSTOM_A']})

        cleared = self.ironic.update_node(node, instance_uuid=None,
                                          instance_info=None).json()

        self.assertEqual((None, {}, 'available'), (
            cleared['instance_uuid'], cleared['instance_info'],
            cleared['provision_state']))

    def test_fake_deploy_takes_a_glance_image_uuid(self):
        node, = self.ironic.seed_nodes(1)
        self.ironic.update_node(
            node, instance_uuid=str(uuidlib.uuid4()),
            instance_info={'image_source': str(uuidlib.uuid4())})

        self.ironic.set_provision_state(node, 'active')

        self.ironic.wait_for([node], provision_state='active')

    def test_deploy_refuses_instance_traits_the_node_lacks(self):
        node, = self.ironic.seed_nodes(1, traits=['CUSTOM_HAVE'])
        self.ironic.update_node(
            node, instance_uuid=str(uuidlib.uuid4()), instance_info={
                'image_source': ironic_fixture.FAKE_IMAGE,
                'traits': ['CUSTOM_HAVE', 'CUSTOM_MISSING']})

        answer = self.ironic.request(
            'PUT', '/v1/nodes/%s/states/provision' % node,
            json={'target': 'active'}, expected=None)

        self.assertEqual(400, answer.status_code)
        self.assertIn('missing traits CUSTOM_MISSING', answer.text)


class TestTeardown(base.IronicTestCase):

    def test_teardown_with_cleaning_clears_the_claim_and_refuses_patch(self):
        node = self.ironic.create_node(automated_clean=True)
        self.ironic.make_available([node])
        self.ironic.set_power_state(node, 'power on')
        self.ironic.deploy(node, str(uuidlib.uuid4()))

        self.ironic.set_provision_state(node, 'deleted')
        self.ironic.wait_for([node], provision_state='cleaning',
                             settled=False, timeout=10)
        cleaning = self.ironic.get_node(node)
        refused = self.ironic.update_node(node, expected=None,
                                          instance_uuid=str(uuidlib.uuid4()))
        self.ironic.wait_for([node], provision_state='available')
        torn_down = self.ironic.get_node(node)

        self.assertEqual((None, {}, 'available'), (
            cleaning['instance_uuid'], cleaning['instance_info'],
            cleaning['target_provision_state']))
        self.assertEqual(409, refused.status_code)
        self.assertIn('state transition is in progress', refused.text)
        # Fake deploy and teardown never touch power.
        self.assertEqual((None, {}, 'power on'), (
            torn_down['instance_uuid'], torn_down['instance_info'],
            torn_down['power_state']))

    def test_teardown_without_cleaning(self):
        node, = self.ironic.seed_nodes(1, provision_state='available')
        self.ironic.deploy(node, str(uuidlib.uuid4()))

        self.ironic.set_provision_state(node, 'deleted')
        self.ironic.wait_for([node], provision_state='available')

        self.assertIsNone(self.ironic.get_node(node)['instance_uuid'])

    def test_retired_cannot_be_set_on_an_available_node(self):
        available, manageable = self.ironic.seed_nodes(
            2, provision_state=lambda i: ('available', 'manageable')[i])

        refused = self.ironic.update_node(available, expected=None,
                                          retired=True)
        retired = self.ironic.update_node(manageable, retired=True).json()

        self.assertEqual(409, refused.status_code)
        self.assertTrue(retired['retired'])

    def test_only_a_claimed_node_cannot_be_deleted(self):
        claimed, available = self.ironic.seed_nodes(
            2, instance_uuid=lambda i: None if i else str(uuidlib.uuid4()))

        refused = self.ironic.request('DELETE', '/v1/nodes/%s' % claimed,
                                      expected=None)
        self.ironic.request('DELETE', '/v1/nodes/%s' % available,
                            expected=(204,))

        self.assertEqual(409, refused.status_code)
        self.assertEqual([claimed],
                         [n['uuid'] for n in self.ironic.list_nodes()])
