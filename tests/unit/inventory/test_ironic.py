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

"""The Ironic source against a fake python-ironicclient.

tests/ironic runs the same source against the real Ironic; these pin
what a fake can: the exact requests, paging, and how each answer is read.
"""

import datetime
import http.server
import json
import logging
import threading
import types

import fixtures
from ironicclient import exc as ironic_exc
from keystoneauth1 import exceptions as ksa_exc
from keystoneauth1 import fixture as ks_fixture
from keystoneauth1 import loading as ks_loading
from oslo_config import fixture as config_fixture
import prometheus_client

from reserveapi import conf
from reserveapi.common import exception
from reserveapi.inventory import ironic
from reserveapi.peers import clients as peers
from tests import base
from tests.unit.inventory import test_file

NODE = test_file.NODE_UUID
INSTANCE = test_file.INSTANCE_UUID
OTHER_INSTANCE = '0d4c4b2e-8d0e-4c5f-9e55-3a1f1f0b7c21'
EXPECTED = test_file.EXPECTED


def fake_node(**changes):
    """What python-ironicclient's node manager returns: attributes."""
    fields = test_file.ironic_node(**changes)
    fields.setdefault('updated_at', None)
    fields.setdefault('created_at', '2030-01-01T00:00:00+00:00')
    return types.SimpleNamespace(**fields)


def numbered(index, **changes):
    return fake_node(uuid='00000000-0000-4000-8000-%012d' % index,
                     name='node-%d' % index, **changes)


def expected(index, **changes):
    return dict(EXPECTED, uuid='00000000-0000-4000-8000-%012d' % index,
                name='node-%d' % index, **changes)


def stamp(minute):
    return '2030-01-01T00:%02d:00+00:00' % minute


def at(minute):
    return datetime.datetime(2030, 1, 1, 0, minute)


def ALWAYS():  # noqa: N802 - a constant of the tests
    """``still_ours`` of a clear whose lease holds."""
    return True

LOCKED = ('Node %s is locked by host c1, please retry after the current '
          'operation is completed. (HTTP 409)' % NODE)


class SourceTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.config(auth_type='none', endpoint_override='http://ironic:6385',
                    node_locked_retries=2, node_locked_retry_interval=0,
                    group='ironic')
        self.client_class = self.useFixture(fixtures.MockPatchObject(
            peers.ironic_client, 'Client')).mock
        self.nodes = self.client_class.return_value.node
        self.source = ironic.IronicSource(conf.CONF)


class TestClient(SourceTestCase):

    def test_endpoint_override_and_microversion(self):
        self.nodes.get.return_value = fake_node()
        next(self.source.full_pages())
        self.source.clear_claim(NODE, INSTANCE, ALWAYS)

        self.assertEqual(2, self.client_class.call_count)
        sync_call, claim_call = self.client_class.call_args_list
        for call in (sync_call, claim_call):
            self.assertEqual('http://ironic:6385',
                             call.kwargs['endpoint_override'])
            self.assertEqual('1.82', call.kwargs['os_ironic_api_version'])
            self.assertEqual(['internal', 'public'], call.kwargs['interface'])
            # keystoneauth1 would wait forever; we do not.
            self.assertEqual(30, call.kwargs['session'].timeout)
        self.assertEqual((2, 2), (sync_call.kwargs['max_retries'],
                                  sync_call.kwargs['retry_interval']))
        self.assertEqual(0, claim_call.kwargs['max_retries'])

    def test_one_client_each_built_on_first_use(self):
        self.assertEqual(0, self.client_class.call_count)
        self.nodes.get.return_value = fake_node()
        for _ in range(3):
            self.source.get_node(NODE)
            self.source.clear_claim(NODE, INSTANCE, ALWAYS)
        self.assertEqual(2, self.client_class.call_count)

    def test_session_and_adapter_options(self):
        self.config(cafile='/etc/ssl/ironic-ca.pem', timeout=5,
                    region_name='RegionTwo', valid_interfaces=['public'],
                    group='ironic')
        self.nodes.get.return_value = fake_node()
        self.source.get_node(NODE)
        call = self.client_class.call_args
        session = call.kwargs['session']
        self.assertEqual('/etc/ssl/ironic-ca.pem', session.verify)
        self.assertEqual(5, session.timeout)
        self.assertEqual('RegionTwo', call.kwargs['region_name'])
        self.assertEqual(['public'], call.kwargs['interface'])

    def test_a_client_that_cannot_be_built_is_unavailable_then_retried(self):
        self.client_class.side_effect = [
            ksa_exc.EndpointNotFound('no baremetal endpoint'), mock_client()]
        error = self.assertRaises(exception.IronicUnavailable,
                                  self.source.get_node, NODE)
        self.assertIn('no baremetal endpoint', error.detail)
        self.source.get_node(NODE)
        self.assertEqual(2, self.client_class.call_count)

    def test_location_is_the_endpoint(self):
        self.client_class.return_value.http_client.endpoint_trimmed = (
            'http://ironic:6385')
        self.nodes.get.return_value = fake_node()
        self.assertEqual('http://ironic:6385', self.source.location)
        self.source.get_node(NODE)
        self.assertEqual('http://ironic:6385', self.source.location)


class TestCatalog(SourceTestCase):
    """``auth_type = password``: the endpoint comes from the catalog."""

    def setUp(self):
        super().setUp()
        self.keystone = self.useFixture(FakeKeystone())
        # keystoneauth1 registers a plugin's options when it loads one;
        # this fixture unregisters them after the test.
        self.useFixture(config_fixture.Config(conf.CONF)).register_opts(
            ks_loading.get_auth_plugin_conf_options('password'),
            group='ironic')
        self.config(endpoint_override=None, auth_type='password',
                    auth_url=self.keystone.url, username='reserveapi',
                    password='secret', user_domain_name='Default',
                    project_name='service', project_domain_name='Default',
                    group='ironic')

    def test_endpoint_of_the_region_and_interface_asked_for(self):
        self.config(region_name='RegionTwo', valid_interfaces=['internal'],
                    group='ironic')
        self.nodes.get.return_value = fake_node()
        self.source.get_node(NODE)
        self.assertEqual('http://ironic-two-internal:6385',
                         self.client_class.call_args.kwargs[
                             'endpoint_override'])
        self.assertEqual(1, len(self.keystone.token_requests))
        self.assertEqual('reserveapi', self.keystone.token_requests[0][
            'auth']['identity']['password']['user']['name'])

    def test_no_endpoint_is_unavailable(self):
        self.config(region_name='RegionThree', group='ironic')
        error = self.assertRaises(exception.IronicUnavailable,
                                  self.source.get_node, NODE)
        self.assertIn('baremetal', error.detail)
        self.client_class.assert_not_called()


class FakeKeystone(fixtures.Fixture):
    """Keystone's token API on loopback, with a baremetal catalog."""

    def _setUp(self):
        token = ks_fixture.V3Token()
        service = token.add_service('baremetal')
        for region in ('RegionOne', 'RegionTwo'):
            suffix = region[len('Region'):].lower()
            service.add_standard_endpoints(
                public='http://ironic-%s-public:6385' % suffix,
                internal='http://ironic-%s-internal:6385' % suffix,
                region=region)
        body = json.dumps(token).encode()
        self.token_requests = requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers['Content-Length'])
                requests.append(json.loads(self.rfile.read(length)))
                self.send_response(201)
                self.send_header('X-Subject-Token', 'token')
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(thread.join)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.url = 'http://127.0.0.1:%d/v3' % server.server_address[1]


def mock_client():
    return types.SimpleNamespace(node=types.SimpleNamespace(
        get=lambda *a, **k: fake_node()))


class TestFullPages(SourceTestCase):

    def test_pages_follow_the_last_uuid_until_a_short_page(self):
        self.config(page_size=2, group='ironic')
        self.nodes.list.side_effect = [
            [numbered(1), numbered(2)], [numbered(3), numbered(4)],
            [numbered(5)]]

        pages = list(self.source.full_pages())

        self.assertEqual([[expected(1), expected(2)],
                          [expected(3), expected(4)], [expected(5)]],
                         [page.nodes for page in pages])
        self.assertEqual([None, numbered(2).uuid, numbered(4).uuid],
                         [c.kwargs['marker']
                          for c in self.nodes.list.call_args_list])
        for call in self.nodes.list.call_args_list:
            self.assertEqual(list(ironic.FIELDS), call.kwargs['fields'])
            self.assertEqual(2, call.kwargs['limit'])
            self.assertNotIn('detail', call.kwargs)
            self.assertNotIn('conductor_group', call.kwargs)
            self.assertNotIn('shards', call.kwargs)

    def test_a_full_last_page_costs_one_empty_page(self):
        self.config(page_size=1, group='ironic')
        self.nodes.list.side_effect = [[numbered(1)], []]
        pages = list(self.source.full_pages())
        self.assertEqual([[expected(1)], []], [p.nodes for p in pages])

    def test_partition_from_config(self):
        self.config(conductor_group='rack-a', shard='s1', group='ironic')
        self.nodes.list.return_value = []
        list(self.source.full_pages())
        call = self.nodes.list.call_args
        self.assertEqual(('rack-a', ['s1']), (call.kwargs['conductor_group'],
                                              call.kwargs['shards']))

    def test_nodes_normalized_like_the_file_source(self):
        self.nodes.list.return_value = [fake_node(
            properties={'memory_mb': '1024', 'cpus': '8', 'local_gb': '20',
                        'cpu_arch': 'X86_64',
                        'capabilities': 'boot_mode:uefi'},
            traits=['B', 'A'], conductor_group='', shard='s2')]

        page, = self.source.full_pages()

        self.assertEqual([dict(
            EXPECTED, memory_mb=1024, cpus=8, local_gb=20,
            capabilities={'boot_mode': 'uefi'}, traits=['A', 'B'],
            conductor_group=None, shard='s2')], page.nodes)

    def test_a_node_that_cannot_be_used_is_skipped_and_named(self):
        bad = numbered(2, properties={'memory_mb': 'lots'})
        self.nodes.list.return_value = [numbered(1), bad]
        logs = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))

        page, = self.source.full_pages()

        self.assertEqual([expected(1)], page.nodes)
        self.assertEqual([bad.uuid], page.skipped)
        self.assertIn('Ironic node %s cannot be used' % bad.uuid,
                      logs.output)
        self.assertIn('properties.memory_mb', logs.output)

    def test_read_at_is_taken_before_the_request(self):
        before = datetime.datetime.utcnow()
        self.nodes.list.return_value = []
        page, = self.source.full_pages()
        self.assertLessEqual(before, page.read_at)
        self.assertIsNone(page.newest)

    def test_unreachable_is_unavailable(self):
        self.nodes.list.side_effect = ksa_exc.ConnectFailure('refused')
        error = self.assertRaises(exception.IronicUnavailable, list,
                                  self.source.full_pages())
        self.assertEqual(503, error.status)
        self.assertEqual('Ironic is unavailable: refused', error.detail)


class TestChanges(SourceTestCase):

    def test_stops_at_the_first_node_older_than_since(self):
        self.nodes.list.side_effect = [
            [numbered(1, updated_at=stamp(30)),
             numbered(2, updated_at=stamp(20)),
             numbered(3, updated_at=stamp(9))],
            [numbered(4, created_at=stamp(15)),
             numbered(5, created_at=stamp(5))]]

        pages = list(self.source.changed_pages(at(10)))

        self.assertEqual([[expected(1), expected(2)], [expected(4)]],
                         [page.nodes for page in pages])
        self.assertEqual([at(30), at(15)], [page.newest for page in pages])
        by_updated, by_created = self.nodes.list.call_args_list
        for call, key in ((by_updated, 'updated_at'),
                          (by_created, 'created_at')):
            self.assertEqual(dict(detail=True, sort_key=key,
                                  sort_dir='desc', limit=50, marker=None),
                             call.kwargs)

    def test_never_updated_nodes_come_by_created_at(self):
        never = numbered(1, created_at=stamp(40))
        self.nodes.list.side_effect = [
            [numbered(2, updated_at=stamp(5)), never], [never]]
        pages = list(self.source.changed_pages(at(10)))
        self.assertEqual([[], [expected(1)]], [p.nodes for p in pages])

    def test_a_busy_cloud_pages_on_and_pages_grow(self):
        self.config(page_size=120, group='ironic')
        first = [numbered(i, updated_at=stamp(50)) for i in range(50)]
        second = [numbered(i, updated_at=stamp(40)) for i in range(50, 150)]
        self.nodes.list.side_effect = [
            first, second[:100], [numbered(200, updated_at=stamp(1))], []]

        pages = list(self.source.changed_pages(at(10)))

        self.assertEqual([50, 100, 0, 0], [len(p.nodes) for p in pages])
        calls = self.nodes.list.call_args_list
        self.assertEqual([50, 100, 120, 50],
                         [c.kwargs['limit'] for c in calls])
        self.assertEqual(first[-1].uuid, calls[1].kwargs['marker'])

    def test_newest_change_is_the_head_of_both_orders(self):
        self.nodes.list.side_effect = [
            [numbered(1, updated_at=None), numbered(2, updated_at=stamp(7))],
            [numbered(3, created_at=stamp(9))]]
        self.assertEqual(at(9), self.source.newest_change())

    def test_newest_change_of_an_empty_ironic(self):
        self.nodes.list.return_value = []
        self.assertIsNone(self.source.newest_change())

    def test_timestamps_with_microseconds_and_offsets(self):
        self.nodes.list.side_effect = [
            [numbered(1, updated_at='2030-01-01T02:00:00.123456+02:00')], []]
        page, _ = self.source.changed_pages(at(0))
        self.assertEqual(datetime.datetime(2030, 1, 1, 0, 0, 0, 123456),
                         page.newest)


class TestGetNode(SourceTestCase):

    def test_one_node_as_a_page(self):
        self.nodes.get.return_value = fake_node()
        page = self.source.get_node(NODE)
        self.assertEqual([EXPECTED], page.nodes)
        self.nodes.get.assert_called_once_with(NODE,
                                               fields=list(ironic.FIELDS))

    def test_a_node_gone_is_an_empty_page(self):
        self.nodes.get.side_effect = ironic_exc.NotFound()
        self.assertEqual([], self.source.get_node(NODE).nodes)


class TestInstanceInfo(base.TestCase):

    def test_as_nova_writes_it(self):
        info = ironic.instance_info({
            'memory_mb': 1024,
            'extra_specs': {
                'capabilities:boot_mode': 'uefi',
                'trait:CUSTOM_RAID': 'required',
                'resources:CUSTOM_GOLD': '1',
                'capabilities:raid_level': '<in> 1',
                'trait1:CUSTOM_GPU': 'required',
                'trait:CUSTOM_SLOW': 'forbidden',
                'hw:cpu_policy': 'dedicated',
            },
            'image': {'properties': {'traits_required': ['CUSTOM_IMG'],
                                     'trait:CUSTOM_IGNORED': 'required'}}})

        self.assertEqual({
            'capabilities': '{"boot_mode": "uefi", "raid_level": "<in> 1"}',
            'traits': ['CUSTOM_RAID', 'CUSTOM_GPU', 'CUSTOM_IMG'],
        }, info)
        self.assertEqual({'boot_mode': 'uefi', 'raid_level': '<in> 1'},
                         json.loads(info['capabilities']))

    def test_image_traits_from_glance_properties(self):
        info = ironic.instance_info({'image': {'properties': {
            'trait:CUSTOM_A': 'required', 'trait:CUSTOM_B': 'forbidden',
            'hw_architecture': 'x86_64'}}})
        self.assertEqual({'traits': ['CUSTOM_A']}, info)

    def test_nothing_to_write(self):
        self.assertEqual({}, ironic.instance_info({'extra_specs': {
            'resources:VCPU': '0'}}))
        self.assertEqual({}, ironic.instance_info({}))


class TestClaim(SourceTestCase):

    INFO = {'capabilities': '{"boot_mode": "uefi"}', 'traits': ['CUSTOM_A']}

    def claimed(self, **changes):
        return fake_node(instance_uuid=INSTANCE, **changes)

    def test_one_patch_and_the_answer_normalized(self):
        self.nodes.update.return_value = self.claimed()

        node = self.source.claim(NODE, INSTANCE, self.INFO)

        self.assertEqual(dict(EXPECTED, instance_uuid=INSTANCE), node)
        self.nodes.update.assert_called_once_with(NODE, [
            {'op': 'add', 'path': '/instance_uuid', 'value': INSTANCE},
            {'op': 'add', 'path': '/instance_info/capabilities',
             'value': '{"boot_mode": "uefi"}'},
            {'op': 'add', 'path': '/instance_info/claimed_by',
             'value': 'reserveapi'},
            {'op': 'add', 'path': '/instance_info/traits',
             'value': ['CUSTOM_A']}])
        self.nodes.get.assert_not_called()

    def test_taken_by_another_instance_moves_on_at_once(self):
        self.nodes.update.side_effect = ironic_exc.Conflict(
            'Node %s is associated with instance %s. (HTTP 409)'
            % (NODE, OTHER_INSTANCE))
        error = self.assertRaises(exception.NodeTaken, self.source.claim,
                                  NODE, INSTANCE, {})
        self.assertIn('is associated with instance', str(error))
        self.assertFalse(error.ours)
        self.assertEqual(1, self.nodes.update.call_count)

    def test_a_node_that_carries_the_instance_already_is_ours(self):
        # A claim whose answer was lost, or a retried request's.
        self.nodes.update.side_effect = ironic_exc.Conflict(
            'Node %s is associated with instance %s. (HTTP 409)'
            % (NODE, INSTANCE))
        self.nodes.get.return_value = self.claimed()
        self.assertEqual(dict(EXPECTED, instance_uuid=INSTANCE),
                         self.source.claim(NODE, INSTANCE, {}))
        self.nodes.get.assert_called_once_with(NODE,
                                               fields=list(ironic.FIELDS))

    def test_node_locked_is_retried_with_a_bound(self):
        self.nodes.update.side_effect = [
            ironic_exc.Conflict(LOCKED), ironic_exc.Conflict(LOCKED),
            self.claimed()]
        self.assertEqual(INSTANCE, self.source.claim(
            NODE, INSTANCE, {})['instance_uuid'])

        self.nodes.update.reset_mock()
        self.nodes.update.side_effect = ironic_exc.Conflict(LOCKED)
        error = self.assertRaises(exception.NodeTaken, self.source.claim,
                                  NODE, INSTANCE, {})
        self.assertIn('is locked by host', str(error))
        self.assertEqual(3, self.nodes.update.call_count)

    def test_gone_or_refused_node_is_taken(self):
        for refusal in (ironic_exc.NotFound('gone'),
                        ironic_exc.BadRequest('No valid host')):
            self.nodes.update.side_effect = refusal
            self.assertRaises(exception.NodeTaken, self.source.claim,
                              NODE, INSTANCE, {})

    def test_an_answer_not_available_is_ours_to_undo(self):
        for changes, reason in (
                ({'provision_state': 'manageable'},
                 'provision state is manageable'),
                ({'maintenance': True}, 'in maintenance'),
                ({'power_state': None}, 'power state unknown'),
                ({'retired': True}, 'retired')):
            self.nodes.update.reset_mock()
            self.nodes.update.side_effect = [self.claimed(**changes)]
            error = self.assertRaises(exception.NodeTaken,
                                      self.source.claim, NODE, INSTANCE, {})
            self.assertEqual(reason, error.kwargs['reason'])
            # The caller clears it, under the clear's lease.
            self.assertTrue(error.ours)
            self.assertEqual(1, self.nodes.update.call_count)

    def test_unreachable_fails_at_once(self):
        for failure in (ksa_exc.ConnectFailure('refused'),
                        ksa_exc.ConnectTimeout('timed out'),
                        ironic_exc.ServiceUnavailable('down'),
                        ironic_exc.InternalServerError('boom')):
            self.nodes.update.reset_mock()
            self.nodes.update.side_effect = failure
            self.assertRaises(exception.IronicUnavailable,
                              self.source.claim, NODE, INSTANCE, {})
            self.assertEqual(1, self.nodes.update.call_count)

    def test_whether_a_failed_claim_may_have_landed(self):
        for failure, delivered in (
                (ksa_exc.ConnectFailure(
                    'Unable to establish connection to http://ironic:6385: '
                    'Failed to establish a new connection: [Errno 111] '
                    'Connection refused'), False),
                (ksa_exc.ConnectFailure('Connection aborted.'), True),
                (ksa_exc.ConnectTimeout('Request timed out'), True),
                (ironic_exc.InternalServerError('boom'), True)):
            self.nodes.update.side_effect = failure
            error = self.assertRaises(exception.IronicUnavailable,
                                      self.source.claim, NODE, INSTANCE, {})
            self.assertEqual(delivered, error.delivered, failure)

    def test_a_claim_of_the_instance_elsewhere_is_the_callers(self):
        self.nodes.update.side_effect = conflict_elsewhere()
        self.assertRaises(exception.InstanceClaimedElsewhere,
                          self.source.claim, NODE, INSTANCE, {})
        self.assertEqual(1, self.nodes.update.call_count)

    def test_every_patch_is_timed_and_every_refusal_counted(self):
        def sample(name):
            return prometheus_client.REGISTRY.get_sample_value(
                'reserveapi_ironic_claim_' + name) or 0

        timed, conflicts = sample('duration_seconds_count'), sample(
            'conflicts_total')
        self.nodes.update.return_value = self.claimed()
        self.source.claim(NODE, INSTANCE, {})
        for refusal in (conflict_elsewhere(), ironic_exc.Conflict(
                'Node %s is associated with instance %s. (HTTP 409)'
                % (NODE, OTHER_INSTANCE))):
            self.nodes.update.side_effect = refusal
            self.assertRaises(exception.InternalOutcome, self.source.claim,
                              NODE, INSTANCE, {})
        self.nodes.update.side_effect = ksa_exc.ConnectFailure('refused')
        self.assertRaises(exception.IronicUnavailable, self.source.claim,
                          NODE, INSTANCE, {})
        self.assertEqual(timed + 4, sample('duration_seconds_count'))
        self.assertEqual(conflicts + 2, sample('conflicts_total'))

    def test_find_claim(self):
        self.nodes.get_by_instance_uuid.return_value = numbered(
            9, provision_state='active')
        self.assertEqual((numbered(9).uuid, 'active'),
                         self.source.find_claim(INSTANCE))
        self.nodes.get_by_instance_uuid.assert_called_once_with(
            INSTANCE, fields=['uuid', 'provision_state'])
        self.nodes.get_by_instance_uuid.side_effect = ironic_exc.NotFound(
            'no node')
        self.assertIsNone(self.source.find_claim(INSTANCE))


def conflict_elsewhere():
    return ironic_exc.Conflict(
        'Instance %s is already associated with a node, it cannot be '
        'associated with this other node %s (HTTP 409)' % (INSTANCE, NODE))


class TestRelease(SourceTestCase):

    def test_clears_a_claim_still_ours(self):
        self.nodes.get.return_value = fake_node(instance_uuid=INSTANCE)
        self.nodes.update.return_value = fake_node()
        outcome, page = self.source.clear_claim(NODE, INSTANCE, ALWAYS)
        self.assertEqual(('claim cleared', [EXPECTED]),
                         (outcome, page.nodes))
        self.nodes.get.assert_called_once_with(NODE,
                                               fields=list(ironic.FIELDS))
        self.nodes.update.assert_called_once_with(NODE, [
            {'op': 'remove', 'path': '/instance_uuid'},
            {'op': 'remove', 'path': '/instance_info'}])

    def test_leaves_what_is_not_ours_to_clear(self):
        for node, outcome in (
                (fake_node(instance_uuid=OTHER_INSTANCE),
                 'claim already cleared; the node now carries instance %s, '
                 'left alone' % OTHER_INSTANCE),
                (fake_node(instance_uuid=None, provision_state='cleaning'),
                 'claim already cleared'),
                (fake_node(instance_uuid=INSTANCE, provision_state='active'),
                 'left to the teardown (active)')):
            self.nodes.get.return_value = node
            self.assertEqual(outcome, self.source.clear_claim(
                NODE, INSTANCE, ALWAYS)[0])
            self.assertEqual(node.provision_state, self.source.clear_claim(
                NODE, INSTANCE, ALWAYS)[1].nodes[0]['provision_state'])
        self.nodes.update.assert_not_called()

    def test_no_patch_once_the_lease_is_lost(self):
        self.nodes.get.return_value = fake_node(instance_uuid=INSTANCE)
        self.assertRaises(exception.ClaimNotCleared, self.source.clear_claim,
                          NODE, INSTANCE, lambda: False)
        self.nodes.update.assert_not_called()

    def test_a_node_gone_has_nothing_to_clear(self):
        self.nodes.get.side_effect = ironic_exc.NotFound('gone')
        outcome, page = self.source.clear_claim(NODE, INSTANCE, ALWAYS)
        self.assertEqual(('node gone from Ironic', []),
                         (outcome, page.nodes))

    def test_a_refused_clear_is_not_cleared(self):
        self.nodes.get.return_value = fake_node(instance_uuid=INSTANCE)
        self.nodes.update.side_effect = ironic_exc.Conflict(
            'Node %s can not be updated while a state transition is in '
            'progress. (HTTP 409)' % NODE)
        error = self.assertRaises(exception.ClaimNotCleared,
                                  self.source.clear_claim, NODE, INSTANCE,
                                  ALWAYS)
        self.assertIn('state transition is in progress', error.detail)

    def test_unreachable_is_unavailable(self):
        self.nodes.get.side_effect = ksa_exc.ConnectFailure('refused')
        self.assertRaises(exception.IronicUnavailable, self.source.clear_claim,
                          NODE, INSTANCE, ALWAYS)


class TestQuietClientLog(base.TestCase):

    def test_failed_attempts_are_not_logged_by_the_client(self):
        logs = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))
        client_log = logging.getLogger('ironicclient.common.http')
        client_log.error('Error contacting Ironic server: 409. Attempt 1 '
                         'of 1')
        client_log.error('Something else')
        self.assertNotIn('Error contacting', logs.output)
        self.assertIn('Something else', logs.output)
