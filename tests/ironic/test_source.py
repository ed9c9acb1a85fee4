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

"""The Ironic source (reserveapi/inventory/ironic.py) against real Ironic."""

import datetime
import json
import uuid as uuidlib

from reserveapi import conf
from reserveapi.common import exception
from reserveapi.inventory import file as file_source
from reserveapi.inventory import ironic
from reserveapi_testing import ironic_db
from tests.ironic import base

OLD = datetime.datetime(2020, 1, 1)
STRING_SIZES = {'memory_mb': '8192', 'cpus': '16', 'local_gb': '400',
                'cpu_arch': 'x86_64', 'capabilities': 'boot_mode:uefi,a:b'}


def _flat(pages):
    return [node for page in pages for node in page.nodes]


class TestReading(base.IronicSourceTestCase):

    def setUp(self):
        super().setUp()
        self.source = ironic.IronicSource(conf.CONF)

    def test_a_full_pass_reads_every_node_as_the_file_source_would(self):
        self.config(page_size=100, group='ironic')
        states = ('available', 'enroll', 'manageable', 'active', 'cleaning',
                  'deploy failed')
        uuids = self.ironic.seed_nodes(
            250, resource_class=lambda i: ('gold', 'Silver-2')[i % 2],
            properties=lambda i: (STRING_SIZES if i % 3 else
                                  ironic_db.DEFAULT_PROPERTIES),
            traits=lambda i: ['CUSTOM_RACK_%d' % (i % 4), 'CUSTOM_ALL'],
            shard=lambda i: None if i % 5 else 'shard-a',
            provision_state=lambda i: states[i % len(states)],
            instance_uuid=lambda i: (str(uuidlib.uuid4())
                                     if states[i % len(states)] == 'active'
                                     else None),
            owner=lambda i: 'project-%d' % (i % 2))

        pages = list(self.source.full_pages())

        self.assertEqual([100, 100, 50], [len(page.nodes) for page in pages])
        detail = self.ironic.list_nodes(detail=True)
        self.assertEqual([file_source.normalize(node) for node in detail],
                         _flat(pages))
        self.assertEqual(uuids, [node['uuid'] for node in _flat(pages)])
        first = _flat(pages)[1]
        self.assertEqual(
            ('CUSTOM_SILVER_2', 8192, 16, 400,
             {'boot_mode': 'uefi', 'a': 'b'}, ['CUSTOM_ALL', 'CUSTOM_RACK_1'],
             'enroll', None), (
                first['resource_class'], first['memory_mb'], first['cpus'],
                first['local_gb'], first['capabilities'], first['traits'],
                first['provision_state'], first['shard']))

    def test_only_the_configured_partition(self):
        self.ironic.seed_nodes(
            12, shard=lambda i: 'shard-%d' % (i % 2),
            conductor_group=lambda i: ('', 'rack-b', 'rack-c')[i % 3])
        self.config(conductor_group='rack-b', shard='shard-1',
                    group='ironic')

        nodes = _flat(self.source.full_pages())

        self.assertEqual(2, len(nodes))
        self.assertEqual({('rack-b', 'shard-1')},
                         {(n['conductor_group'], n['shard']) for n in nodes})

    def test_changes_since_a_watermark(self):
        quiet = self.ironic.seed_nodes(20, updated_at=OLD, created_at=OLD)
        newest, = self.ironic.seed_nodes(
            1, updated_at=OLD + datetime.timedelta(hours=1), created_at=OLD)
        watermark = self.source.newest_change()
        self.assertEqual(OLD + datetime.timedelta(hours=1), watermark)
        self.assertEqual([], _flat(self.source.changed_pages(
            watermark + datetime.timedelta(seconds=1))))

        self.ironic.set_traits(quiet[3], ['CUSTOM_NEW'])
        self.ironic.update_node(quiet[7], maintenance=True)
        created = self.ironic.create_node(name='brand-new')
        changed = _flat(self.source.changed_pages(watermark))

        by_uuid = {node['uuid']: node for node in changed}
        # The node at the watermark itself is read again: "at or after".
        self.assertEqual({quiet[3], quiet[7], created['uuid'], newest},
                         set(by_uuid))
        self.assertEqual(['CUSTOM_NEW'], by_uuid[quiet[3]]['traits'])
        self.assertTrue(by_uuid[quiet[7]]['maintenance'])
        self.assertEqual('enroll', by_uuid[created['uuid']]['provision_state'])
        self.assertGreater(self.source.newest_change(), watermark)

    def test_one_node_reread(self):
        node, = self.ironic.seed_nodes(1, properties=STRING_SIZES)
        page = self.source.get_node(node)
        self.assertEqual([file_source.normalize(self.ironic.get_node(node))],
                         page.nodes)
        self.ironic.request('DELETE', '/v1/nodes/%s' % node, expected=(204,))
        self.assertEqual([], self.source.get_node(node).nodes)


class TestClaims(base.IronicSourceTestCase):

    def setUp(self):
        super().setUp()
        self.source = ironic.IronicSource(conf.CONF)
        self.instance = str(uuidlib.uuid4())

    def test_a_claim_writes_what_nova_writes(self):
        node, = self.ironic.seed_nodes(1, traits=['CUSTOM_RAID'])
        info = ironic.instance_info({
            'extra_specs': {'capabilities:boot_mode': 'uefi',
                            'trait:CUSTOM_RAID': 'required'},
            'image': {'properties': {'traits_required': ['CUSTOM_IMG']}}})

        claimed = self.source.claim(node, self.instance, info)
        again = self.source.claim(node, self.instance, info)

        in_ironic = self.ironic.get_node(node)
        self.assertEqual(self.instance, in_ironic['instance_uuid'])
        self.assertEqual({'capabilities': '{"boot_mode": "uefi"}',
                          'traits': ['CUSTOM_RAID', 'CUSTOM_IMG'],
                          'claimed_by': 'reserveapi'},
                         in_ironic['instance_info'])
        self.assertEqual({'boot_mode': 'uefi'}, json.loads(
            in_ironic['instance_info']['capabilities']))
        self.assertEqual(claimed, again)
        self.assertEqual((self.instance, 'available'), (
            claimed['instance_uuid'], claimed['provision_state']))

    def test_a_node_claimed_by_another_instance_is_taken(self):
        other = str(uuidlib.uuid4())
        node, = self.ironic.seed_nodes(1, instance_uuid=other)

        error = self.assertRaises(exception.NodeTaken, self.source.claim,
                                  node, self.instance, {})

        self.assertIn('is associated with instance %s' % other, str(error))
        self.assertEqual(other, self.ironic.get_node(node)['instance_uuid'])

    def test_a_claim_accepted_on_a_node_not_available_is_ours(self):
        manageable, = self.ironic.seed_nodes(1, provision_state='manageable')

        error = self.assertRaises(exception.NodeTaken, self.source.claim,
                                  manageable, self.instance,
                                  {'traits': ['CUSTOM_A']})

        # Ironic took the claim: it is the caller's to clear, under the
        # clear's lease (inventory.claims).
        self.assertEqual(('provision state is manageable', True),
                         (error.kwargs['reason'], error.ours))
        self.assertEqual(self.instance,
                         self.ironic.get_node(manageable)['instance_uuid'])

    def test_a_node_cleaning_or_gone_is_taken(self):
        cleaning, = self.ironic.seed_nodes(
            1, provision_state='cleaning', target_provision_state='available')
        error = self.assertRaises(exception.NodeTaken, self.source.claim,
                                  cleaning, self.instance, {})
        self.assertIn('state transition is in progress', str(error))
        self.assertRaises(exception.NodeTaken, self.source.claim,
                          str(uuidlib.uuid4()), self.instance, {})

    def test_clear_claim_clears_only_our_undeployed_claim(self):
        ours, theirs, gone = self.ironic.seed_nodes(3)
        other = str(uuidlib.uuid4())
        self.source.claim(ours, self.instance, {'traits': ['CUSTOM_A']})
        self.ironic.update_node(theirs, instance_uuid=other)
        self.ironic.request('DELETE', '/v1/nodes/%s' % gone, expected=(204,))

        outcomes, pages = zip(*[
            self.source.clear_claim(node, self.instance, held)
            for node in (ours, theirs, gone)], strict=True)
        self.ironic.deploy(ours, self.instance)
        deployed, _page = self.source.clear_claim(ours, self.instance, held)

        self.assertEqual(('claim cleared',
                          'claim already cleared; the node now carries '
                          'instance %s, left alone' % other,
                          'node gone from Ironic'), outcomes)
        # Each answer is the node as Ironic has it now.
        self.assertEqual([[None], [other], []], [
            [node['instance_uuid'] for node in page.nodes]
            for page in pages])
        self.assertEqual('left to the teardown (active)', deployed)
        self.assertEqual((self.instance, 'active'), tuple(
            self.ironic.get_node(ours)[f]
            for f in ('instance_uuid', 'provision_state')))
        self.assertEqual(other, self.ironic.get_node(theirs)['instance_uuid'])

    def test_a_claim_of_the_instance_elsewhere_is_found(self):
        stale, wanted, deployed = self.ironic.seed_nodes(3)
        self.ironic.update_node(stale, instance_uuid=self.instance,
                                instance_info={'traits': ['CUSTOM_A']})

        self.assertRaises(exception.InstanceClaimedElsewhere,
                          self.source.claim, wanted, self.instance, {})

        self.assertEqual((stale, 'available'),
                         self.source.find_claim(self.instance))
        self.assertIsNone(self.ironic.get_node(wanted)['instance_uuid'])
        self.ironic.update_node(stale, instance_uuid=None)
        self.assertIsNone(self.source.find_claim(self.instance))
        self.ironic.deploy(deployed, self.instance)
        self.assertEqual((deployed, 'active'),
                         self.source.find_claim(self.instance))

    def test_ironic_down_is_unavailable_at_once(self):
        node, = self.ironic.seed_nodes(1)
        self.config(api_max_retries=0, group='ironic')
        self.ironic.stop()

        for call in (lambda: self.source.claim(node, self.instance, {}),
                     lambda: self.source.clear_claim(node, self.instance,
                                                     held),
                     lambda: list(self.source.full_pages())):
            error = self.assertRaises(exception.IronicUnavailable, call)
            self.assertEqual(503, error.status)

        self.ironic.start()
        self.assertEqual(self.instance, self.source.claim(
            node, self.instance, {})['instance_uuid'])


def held():
    """``still_ours`` of a clear whose lease holds."""
    return True
