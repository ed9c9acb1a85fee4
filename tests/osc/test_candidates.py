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


"""``openstack baremetal reservation candidates`` without a cloud, by
``tox -e osc`` (tests/functional/test_openstack_commands.py runs it
against a served API): the flavor and the image are
python-openstackclient's own fakes of Nova's and Glance's answers
(openstacksdk resources, ``openstackclient.tests.unit``), found through
the SDK proxies of the client manager as OSC's own commands find them;
the spec sent is the one Nova's driver builds from that flavor and
image, by the same builder.

Beside them: ``openstack`` in this process with a Keystone catalog
(requests_mock answering for Keystone, Nova and us), to show that Nova
is found in the catalog whatever ``--os-endpoint`` says, and the real
``openstack`` command against a served API without Keystone, for what
``--spec`` accepts and refuses and for ``--flavor`` without a catalog.
"""

import io
import json
import os
from unittest import mock

import fixtures
from keystoneauth1 import fixture as ks_fixture
from keystoneauth1 import noauth
from keystoneauth1.identity import base as identity_base
from openstackclient import shell
from openstackclient.tests.unit.compute.v2 import fakes as compute_fakes
from openstackclient.tests.unit.image.v2 import fakes as image_fakes
from osc_lib import exceptions
from oslotest import base
import requests
from requests_mock.contrib import fixture as requests_mock_fixture

from reserveapi.client import request_spec
from reserveapi.matcher import spec as matcher_spec
from reserveapi.osc import candidates
from reserveapi_testing import examples
from tests.functional import test_openstack_commands

EXTRA_SPECS = {'resources:CUSTOM_BAREMETAL_GOLD': '1',
               'resources:VCPU': '0', 'capabilities:boot_mode': 'uefi',
               'trait:CUSTOM_RAID': 'required'}
ANSWER = {
    'count': 3, 'total': 7,
    'by_partition': [{'shard': 'rack-1', 'conductor_group': '', 'count': 2},
                     {'shard': None, 'conductor_group': 'g', 'count': 1}],
    'excluded': [{'criterion': 'capabilities', 'item': 'boot_mode',
                  'count': 4, 'reason': 'fail capability boot_mode',
                  'values': [{'value': 'bios', 'count': 4}]}],
    'nodes': [{'uuid': 'u1', 'name': 'node-1'}, {'uuid': 'u2', 'name': None}],
}


class TestRequestSpec(base.BaseTestCase):
    """What the compute and image APIs show, as Nova's objects hold it."""

    def test_flavor_as_nova_holds_it(self):
        self.assertEqual(
            {'name': 'bm.gold', 'flavorid': '42', 'memory_mb': 4096,
             'vcpus': 4, 'root_gb': 100, 'ephemeral_gb': 10, 'swap': 0,
             'rxtx_factor': 1.0, 'extra_specs': EXTRA_SPECS},
            request_spec.flavor_from_compute({
                'id': '42', 'name': 'bm.gold', 'ram': 4096, 'vcpus': 4,
                'disk': 100, 'OS-FLV-EXT-DATA:ephemeral': 10, 'swap': '',
                'rxtx_factor': 1.0, 'os-flavor-access:is_public': True,
                'extra_specs': EXTRA_SPECS}))

    def test_image_as_nova_holds_it(self):
        image = request_spec.image_from_glance({
            'id': 'i', 'name': 'raid', 'status': 'active', 'size': 10,
            'architecture': 'amd64', 'hypervisor_type': 'baremetal',
            'vm_mode': 'hvm', 'trait:HW_CPU_X86_AVX2': 'required',
            'trait:CUSTOM_X': 'forbidden', 'hw_firmware_type': 'uefi'})
        self.assertEqual(
            {'id': 'i', 'properties': {
                'hw_architecture': 'amd64', 'img_hv_type': 'baremetal',
                'hw_vm_mode': 'hvm', 'hw_firmware_type': 'uefi',
                'traits_required': ['HW_CPU_X86_AVX2']}}, image)
        # The current name wins over the legacy one, as in Nova.
        self.assertEqual('aarch64', request_spec.image_from_glance({
            'id': 'i', 'architecture': 'x86_64',
            'hw_architecture': 'aarch64'})['properties']['hw_architecture'])

    def test_build(self):
        spec = request_spec.build(
            {'name': 'f', 'memory_mb': 1, 'unknown': 2, 'extra_specs': None},
            {'id': 'i', 'properties': {}})
        self.assertEqual({'name': 'f', 'memory_mb': 1, 'extra_specs': {},
                          'image': {'id': 'i', 'properties': {}}}, spec)


class TestShowCandidates(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.flavor = compute_fakes.create_one_flavor({
            'name': 'baremetal-gold', 'ram': 4096, 'vcpus': 4, 'disk': 100,
            'extra_specs': EXTRA_SPECS})
        self.image = image_fakes.create_one_image({
            'name': 'raid', 'architecture': 'x86_64',
            'trait:HW_CPU_X86_AVX2': 'required'})
        self.app = mock.Mock(stdout=io.StringIO())
        manager = self.app.client_manager
        # A Keystone session: the catalog says where Nova and Glance are.
        manager.get_configuration.return_value = {'auth_type': 'password'}
        manager.auth = mock.Mock(spec=identity_base.BaseIdentityPlugin)
        manager.compute.find_flavor.return_value = self.flavor
        manager.image.find_image.return_value = self.image
        self.client = manager.baremetal_reservation.reservations
        self.client.candidates.return_value = ANSWER
        self.command = candidates.ShowCandidates(self.app, None)

    def run_command(self, *argv):
        parsed = self.command.get_parser('candidates').parse_args(argv)
        self.command.take_action(parsed)
        return self.app.stdout.getvalue()

    def test_flavor_and_image_make_the_driver_s_spec(self):
        output = self.run_command('--flavor', 'baremetal-gold', '--image',
                                  'raid', '--shard', 'rack-1', '--limit',
                                  '2')
        manager = self.app.client_manager
        manager.compute.find_flavor.assert_called_once_with(
            'baremetal-gold', ignore_missing=False, get_extra_specs=True)
        manager.image.find_image.assert_called_once_with(
            'raid', ignore_missing=False)
        (spec,), options = self.client.candidates.call_args
        self.assertEqual({'shard': 'rack-1', 'limit': 2}, options)
        self.assertEqual(
            {'name': 'baremetal-gold', 'flavorid': self.flavor.id,
             'memory_mb': 4096, 'vcpus': 4, 'root_gb': 100,
             'ephemeral_gb': 0, 'swap': 0, 'rxtx_factor': 1.0,
             'extra_specs': EXTRA_SPECS,
             'image': {'id': self.image.id, 'properties': {
                 'hw_architecture': 'x86_64',
                 'traits_required': ['HW_CPU_X86_AVX2']}}}, spec)
        parsed = matcher_spec.parse_request_spec(spec)
        self.assertEqual(
            ('CUSTOM_BAREMETAL_GOLD', {'CUSTOM_RAID', 'HW_CPU_X86_AVX2'},
             'x86_64', False),
            (parsed.resource_class, parsed.required_traits, parsed.cpu_arch,
             parsed.check_vcpus))
        self.assertIn('3 of 7 nodes could be reserved now.', output)
        self.assertIn('| rack-1 | (default)       | 2     |', output)
        self.assertIn('| fail capability boot_mode | boot_mode | 4     | '
                      'bios (4) |', output)
        self.assertIn('Best fit first: node-1, u2', output)

    def test_a_raw_spec_from_a_file(self):
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, 'spec.json')
        with open(path, 'w') as stream:
            json.dump({'extra_specs': EXTRA_SPECS}, stream)
        self.run_command('--spec', path, '--conductor-group', '')
        self.client.candidates.assert_called_once_with(
            {'extra_specs': EXTRA_SPECS}, conductor_group='')
        self.app.client_manager.compute.find_flavor.assert_not_called()

    def write(self, document):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'spec.json')
        with open(path, 'w') as stream:
            json.dump(document, stream)
        return path

    def test_a_whole_body_from_a_file(self):
        # The API reference's own example, as POST /v1/candidates reads it.
        body = examples.sample('candidates/candidates-request.json')
        self.run_command('--spec', self.write(body))
        self.client.candidates.assert_called_once_with(
            body['request_spec'], project_id=body['project_id'], limit=10)
        self.client.candidates.reset_mock()
        body.update(shard='rack-1', conductor_group='g', explain=False,
                    candidate_nodes=['node-1'])
        self.run_command('--spec', self.write(body), '--limit', '2',
                         '--shard', 'rack-2', '--project', 'p')
        # The options override the body's keys.
        self.client.candidates.assert_called_once_with(
            body['request_spec'], project_id='p', limit=2, shard='rack-2',
            conductor_group='g', explain=False, candidate_nodes=['node-1'])

    def test_a_window_asks_what_a_hold_would_get(self):
        self.client.candidates.return_value = dict(
            ANSWER, promised=3, admissible=1)
        output = self.run_command(
            '--spec', self.write({'extra_specs': EXTRA_SPECS}),
            '--start', '2030-01-31T08:00:00+00:00',
            '--end', '2030-01-31T10:00:00+00:00')
        self.client.candidates.assert_called_once_with(
            {'extra_specs': EXTRA_SPECS},
            start='2030-01-31T08:00:00+00:00',
            end='2030-01-31T10:00:00+00:00')
        self.assertIn('3 of them are kept for holds.', output)
        self.assertIn('A hold over the window would be admitted for 1 '
                      'nodes.', output)

    def test_without_explanation_no_total_and_no_exclusions(self):
        self.client.candidates.return_value = {
            'count': 3, 'by_partition': ANSWER['by_partition'],
            'nodes': []}
        output = self.run_command('--spec', self.write(
            {'request_spec': {}, 'explain': False}))
        self.assertEqual('3 nodes could be reserved now.',
                         output.splitlines()[0])
        self.assertNotIn('Excluded By', output)

    def refusal(self, document):
        path = self.write(document)
        error = self.assertRaises(exceptions.CommandError, self.run_command,
                                  '--spec', path)
        self.client.candidates.assert_not_called()
        return str(error).replace(path, 'FILE')

    def test_unknown_keys_are_refused_by_name(self):
        self.assertEqual(
            "--spec FILE: unknown key(s) 'flavour', 'ram' in the request "
            "spec; it may hold ephemeral_gb, extra_specs, flavorid, image, "
            "memory_mb, name, root_gb, rxtx_factor, swap, vcpu_weight, "
            "vcpus.", self.refusal({'ram': 1, 'flavour': 'f'}))
        # A body without its request_spec.
        self.assertEqual(
            "--spec FILE: unknown key(s) 'limit', 'project_id' in the "
            "request spec; it may hold ephemeral_gb, extra_specs, flavorid, "
            "image, memory_mb, name, root_gb, rxtx_factor, swap, "
            "vcpu_weight, vcpus. A candidates body holds its spec under "
            "request_spec.",
            self.refusal({'project_id': 'p', 'limit': 1, 'vcpus': 2}))
        self.assertEqual(
            "--spec FILE: unknown key(s) 'host' in the candidates body; it "
            "may hold candidate_nodes, conductor_group, end, explain, "
            "limit, project_id, request_spec, shard, start.",
            self.refusal({'request_spec': {}, 'host': 'compute-1'}))
        self.assertEqual(
            "--spec FILE: unknown key(s) 'ram' in request_spec; it may "
            "hold ephemeral_gb, extra_specs, flavorid, image, memory_mb, "
            "name, root_gb, rxtx_factor, swap, vcpu_weight, vcpus.",
            self.refusal({'request_spec': {'ram': 1}}))
        self.assertEqual(
            "--spec FILE: unknown key(s) 'hw_architecture' in the request "
            "spec's image; it may hold id, properties. Image properties go "
            "under properties.",
            self.refusal({'image': {'hw_architecture': 'x86_64'}}))

    def test_malformed_bodies(self):
        self.assertEqual('--spec FILE: request_spec must be a JSON object.',
                         self.refusal({'request_spec': None}))
        self.assertEqual('--spec FILE: explain must be true or false.',
                         self.refusal({'request_spec': {}, 'explain': 0}))
        self.assertEqual('--spec FILE: candidate_nodes must be a list.',
                         self.refusal({'request_spec': {},
                                       'candidate_nodes': 'node-1'}))
        self.assertEqual('--spec must hold a JSON object.',
                         self.refusal([]))

    def test_without_a_catalog_flavor_is_refused(self):
        manager = self.app.client_manager
        manager.get_configuration.return_value = {'auth_type': 'none'}
        manager.auth = noauth.NoAuth(endpoint='http://127.0.0.1:6390')
        error = self.assertRaises(
            exceptions.CommandError, self.run_command, '--flavor',
            'baremetal-gold', '--image', 'raid-ubuntu')
        self.assertEqual(
            "--flavor needs Nova's endpoint from the service catalog, and "
            "--os-auth-type none gives none: pass --spec FILE instead, or "
            "set compute_endpoint_override in clouds.yaml.", str(error))
        manager.compute.find_flavor.assert_not_called()
        # clouds.yaml may say where Nova is; then Glance is missing.
        manager.get_configuration.return_value = {
            'auth_type': 'none', 'compute_endpoint_override': 'http://nova'}
        error = self.assertRaises(
            exceptions.CommandError, self.run_command, '--flavor',
            'baremetal-gold', '--image', 'raid-ubuntu')
        self.assertIn("--image needs Glance's endpoint", str(error))
        manager.get_configuration.return_value.update(
            image_endpoint_override='http://glance')
        self.run_command('--flavor', 'baremetal-gold', '--image',
                         'raid-ubuntu')
        self.client.candidates.assert_called_once()

    def test_refusals(self):
        parser = self.command.get_parser('candidates')
        for argv in ((), ('--flavor', 'f', '--spec', 'x')):
            self.assertRaises(SystemExit, parser.parse_args, argv)
        self.assertRaises(exceptions.CommandError, self.command.take_action,
                          parser.parse_args(['--spec', '/nonexistent']))
        self.assertRaises(exceptions.CommandError, self.command.take_action,
                          parser.parse_args(['--spec', '/nonexistent',
                                             '--image', 'raid']))


KEYSTONE = 'http://keystone:5000/v3'
NOVA = 'http://nova:8774/v2.1'
RESERVEAPI = 'http://reserveapi:6390'
ELSEWHERE = 'http://127.0.0.1:6390'


class TestThroughKeystone(base.BaseTestCase):
    """``openstack`` in this process, with a Keystone session whose
    catalog names Nova and us (requests_mock answers for all three), and
    ``--os-endpoint`` given too: Nova is called where the catalog says.
    """

    def setUp(self):
        super().setUp()
        for name in list(os.environ):
            if name.startswith('OS_'):
                self.useFixture(fixtures.EnvironmentVariable(name))
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_CONFIG_FILE', os.devnull))
        token = ks_fixture.V3Token(project_id='p', user_id='u')
        token.set_project_scope()
        for service_type, url in (('compute', NOVA),
                                  ('image', 'http://glance:9292'),
                                  ('baremetal-reservation', RESERVEAPI)):
            token.add_service(service_type).add_standard_endpoints(
                public=url, region='RegionOne')
        self.http = self.useFixture(requests_mock_fixture.Fixture())
        self.http.post(KEYSTONE + '/auth/tokens', json=token,
                       headers={'X-Subject-Token': 'token'})
        self.http.get(NOVA, json={'version': {
            'id': 'v2.1', 'status': 'CURRENT', 'version': '2.96',
            'min_version': '2.1', 'links': [{'rel': 'self',
                                             'href': NOVA + '/'}]}})
        self.http.get(NOVA + '/flavors/baremetal-gold', status_code=404,
                      json={})
        self.http.get(NOVA + '/flavors/detail', json={'flavors': [{
            'id': '42', 'name': 'baremetal-gold', 'ram': 4096, 'vcpus': 4,
            'disk': 100, 'OS-FLV-EXT-DATA:ephemeral': 0, 'swap': 0,
            'rxtx_factor': 1.0, 'extra_specs': EXTRA_SPECS}]})
        self.http.post(RESERVEAPI + '/v1/candidates', json=ANSWER)

    def test_flavor_is_read_from_the_catalog_s_nova(self):
        stdout = io.StringIO()
        with mock.patch('sys.stdout', stdout):
            status = shell.main([
                '--os-auth-type', 'v3password', '--os-auth-url', KEYSTONE,
                '--os-username', 'u', '--os-password', 'p',
                '--os-project-name', 'p', '--os-user-domain-id', 'default',
                '--os-project-domain-id', 'default',
                '--os-endpoint', ELSEWHERE,
                'baremetal', 'reservation', 'candidates',
                '--flavor', 'baremetal-gold'])
        self.assertEqual(0, status)
        self.assertEqual('3 of 7 nodes could be reserved now.',
                         stdout.getvalue().splitlines()[0])
        calls = [(request.method, request.url.split('?')[0])
                 for request in self.http.request_history]
        self.assertEqual([
            ('POST', KEYSTONE + '/auth/tokens'), ('GET', NOVA),
            ('GET', NOVA + '/flavors/baremetal-gold'),
            ('GET', NOVA + '/flavors/detail'),
            ('POST', RESERVEAPI + '/v1/candidates')], calls)
        self.assertEqual(EXTRA_SPECS, self.http.request_history[-1].json()[
            'request_spec']['extra_specs'])


class TestCandidatesServed(test_openstack_commands.OpenStackCommandTestCase):
    """The real ``openstack`` against a served API without Keystone, as
    on the evaluation install."""

    def write(self, document):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'body.json')
        with open(path, 'w') as stream:
            json.dump(document, stream)
        return path

    def post(self, body):
        """What the API answers to ``body``, sent as it is."""
        response = requests.post(
            self.deployment.endpoint + '/v1/candidates', json=body,
            headers={'OpenStack-API-Version': 'baremetal-reservation 1.3'},
            timeout=60)
        self.assertEqual(200, response.status_code, response.text)
        return response.json()

    def test_the_api_reference_s_body_counts_as_the_api_does(self):
        path = os.path.join(examples.SAMPLES_DIR, 'candidates',
                            'candidates-request.json')
        body = examples.sample('candidates/candidates-request.json')
        answer = self.post(body)
        output = self.openstack('baremetal', 'reservation', 'candidates',
                                '--spec', path)
        self.assertEqual('%d of %d nodes could be reserved now.'
                         % (answer['count'], answer['total']),
                         output.splitlines()[0])
        # The body's keys apply: a conductor group with no node counts
        # none ...
        body['conductor_group'] = 'nowhere'
        path = self.write(body)
        output = self.openstack('baremetal', 'reservation', 'candidates',
                                '--spec', path)
        self.assertEqual('0 of %d nodes could be reserved now.'
                         % answer['total'], output.splitlines()[0])
        # ... and an option overrides them.
        output = self.openstack('baremetal', 'reservation', 'candidates',
                                '--spec', path, '--conductor-group', '')
        answer = self.post(dict(body, conductor_group=''))
        self.assertEqual('%d of %d nodes could be reserved now.'
                         % (answer['count'], answer['total']),
                         output.splitlines()[0])

    def test_an_unknown_key_is_refused_by_name(self):
        path = self.write({'request_spec': {'memory_mb': 1024},
                           'hosts': ['compute-1']})
        self.openstack('baremetal', 'reservation', 'candidates', '--spec',
                       path, expect=1)
        self.assertEqual(
            ["--spec %s: unknown key(s) 'hosts' in the candidates body; "
             "it may hold candidate_nodes, conductor_group, end, "
             "explain, limit, project_id, request_spec, shard, start."
             % path],
            self.stderr.splitlines())

    def test_flavor_without_a_catalog_is_refused(self):
        self.openstack('baremetal', 'reservation', 'candidates', '--flavor',
                       'baremetal-gold', '--image', 'raid-ubuntu', expect=1)
        self.assertEqual(
            ["--flavor needs Nova's endpoint from the service catalog, and "
             "--os-auth-type none gives none: pass --spec FILE instead, or "
             "set compute_endpoint_override in clouds.yaml."],
            self.stderr.splitlines())
