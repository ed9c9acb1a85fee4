"""Reservations over the real WSGI app, the way Nova lives through them.

Every class also runs on PostgreSQL and MariaDB: matching is split
between SQL and Python, and the guarantees come from the database.
"""

import copy
import datetime
import json
import os
import uuid

from oslo_utils import timeutils
import sqlalchemy as sa

from reserveapi import reservations
from reserveapi.db import models
from tests import examples
from tests.functional import base
from tests.functional import inventory

HOST = 'compute-3'
NEW_HOST = 'compute-7'
# The project the request samples reserve for (Nova passes the instance's).
SAMPLE_PROJECT = '7c3e1f5a9b2d4e6f8a0b1c2d3e4f5a6b'
OTHER_PROJECT = '0ddba11000000000000000000000beef'


def sample(name):
    """A request sample, as the api-ref shows it."""
    with open(os.path.join(base.SAMPLES_DIR, name)) as sample_file:
        return json.load(sample_file)


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


class TestReservationStory(ReservationTestCase):
    """DESIGN.md's example, from the first POST to the last DELETE."""

    def test_reserve_retry_conflict_release(self):
        self.nodes(inventory.node('node-gold-1'))
        body = sample('reservations/create-request.json')

        created = self.request('POST', '/v1/reservations', body)
        reservation = self.assertReserved(created, 'node-gold-1')
        self.assertMatchesSample(reservation,
                                 'reservations/create-response.json')
        self.assertEqual(body['instance_uuid'], reservation['instance_uuid'])
        self.assertEqual(SAMPLE_PROJECT, reservation['project_id'])
        location = 'http://localhost/v1/reservations/' + reservation['uuid']
        self.assertEqual(location, created.headers['Location'])
        self.assertEqual(location, reservation['links'][0]['href'])

        # Nova retries: the same instance from the same host gets the same
        # reservation, with 200 instead of 201.
        again = self.request('POST', '/v1/reservations', body)
        self.assertEqual(200, again.status_int, again.text)
        self.assertEqual(reservation, again.json)
        self.assertEqual(location, again.headers['Location'])
        shown = self.request('GET', '/v1/reservations/' + reservation['uuid'])
        self.assertEqual(reservation, shown.json)

        # Another host asking for the same instance is a conflict.
        other = self.request('POST', '/v1/reservations',
                             dict(body, host='compute-4'))
        error = self.assertError(other, 409, 'reserveapi.instance_reserved')
        self.assertIn(reservation['uuid'], error['detail'])
        self.assertIn(HOST, error['detail'])
        self.assertEqual([reservation], self.list_reservations())

        # Released: the node is free at once.
        path = '/v1/reservations/' + reservation['uuid']
        deleted = self.request('DELETE', path)
        self.assertEqual(204, deleted.status_int)
        self.assertEqual(b'', deleted.body)
        self.assertIsNone(self.node('node-gold-1')['reservation'])
        self.assertEqual([], self.list_reservations())
        self.assertError(self.request('DELETE', path), 404,
                         'reserveapi.reservation_not_found')
        self.assertError(self.request('GET', path), 404,
                         'reserveapi.reservation_not_found')
        self.assertError(self.request('PATCH', path, [
            {'op': 'replace', 'path': '/state', 'value': 'active'}]),
            404, 'reserveapi.reservation_not_found')

        # Another instance takes the node; so may the first one, anew.
        taken = self.reserve()
        self.assertReserved(taken, 'node-gold-1')
        self.assertNoValidNode(self.request('POST', '/v1/reservations',
                                            body),
                               '1 node: 1 reserved')
        self.release(taken.json['uuid'])
        renewed = self.request('POST', '/v1/reservations', body)
        self.assertNotEqual(reservation['uuid'],
                            self.assertReserved(renewed,
                                                'node-gold-1')['uuid'])

    def test_show_sample_with_expiry(self):
        self.config(reserved_ttl=3600, group='reservations')
        self.nodes(inventory.node('node-gold-1'))
        created = self.request('POST', '/v1/reservations',
                               sample('reservations/create-request.json'))
        self.assertEqual(201, created.status_int, created.text)
        shown = self.request('GET',
                             '/v1/reservations/' + created.json['uuid'])
        self.assertEqual(200, shown.status_int)
        self.assertMatchesSample(shown.json,
                                 'reservations/show-response.json')
        created_at = datetime.datetime.fromisoformat(
            shown.json['created_at'])
        self.assertEqual(created_at + datetime.timedelta(hours=1),
                         datetime.datetime.fromisoformat(
                             shown.json['expires_at']))

    def test_uuid_path_in_any_case_or_malformed(self):
        self.nodes(inventory.node('node-gold-1'))
        reservation = self.assertReserved(self.reserve(), 'node-gold-1')
        upper = '/v1/reservations/' + reservation['uuid'].upper()
        self.assertEqual(reservation, self.request('GET', upper).json)
        for method, body in (('GET', None), ('DELETE', None), ('PATCH', [
                {'op': 'replace', 'path': '/state', 'value': 'active'}])):
            error = self.assertError(
                self.request(method, '/v1/reservations/not-a-uuid', body),
                400, 'reserveapi.invalid')
            self.assertIn('reservation_uuid', error['detail'])
        self.assertEqual(204, self.request('DELETE', upper).status_int)
        self.assertNothingReserved()

    def test_project_defaults_to_callers(self):
        self.nodes(inventory.node('node-gold-1'))
        reservation = self.assertReserved(self.reserve(), 'node-gold-1')
        self.assertEqual(base.PROJECT_ID, reservation['project_id'])

    def test_service_reserves_for_a_project(self):
        self.nodes(inventory.node('node-gold-1'))
        response = self.reserve(headers=self.service_headers,
                                project_id=SAMPLE_PROJECT)
        reservation = self.assertReserved(response, 'node-gold-1')
        self.assertEqual(SAMPLE_PROJECT, reservation['project_id'])

    def test_one_node_per_instance_and_instance_per_node(self):
        self.nodes(inventory.node('node-gold-1'),
                   inventory.node('node-gold-2'))
        first = self.reserve(instance_uuid=str(uuid.uuid4()))
        second = self.reserve(instance_uuid=str(uuid.uuid4()))
        self.assertEqual(201, first.status_int)
        self.assertEqual(201, second.status_int)
        self.assertEqual({'node-gold-1', 'node-gold-2'},
                         {first.json['node_name'], second.json['node_name']})
        self.assertNoValidNode(self.reserve(), '2 nodes: 2 reserved')
        self.assertEqual(2, len(self.list_reservations()))


class TestMalformedSpecs(ReservationTestCase):
    """Every trap is a 400 naming the key, and changes nothing."""

    def setUp(self):
        super().setUp()
        self.nodes(inventory.node('node-gold-1'))

    def assertRejected(self, body_or_response, key,
                       code='reserveapi.invalid_request_spec'):
        """A 400 whose detail names ``key``; nothing was reserved."""
        response = body_or_response
        if isinstance(body_or_response, dict):
            response = self.request('POST', '/v1/reservations',
                                    body_or_response)
        error = self.assertError(response, 400, code)
        self.assertIn(key, error['detail'])
        self.assertNothingReserved()
        return error

    def body(self, request_spec):
        return {'instance_uuid': str(uuid.uuid4()), 'host': HOST,
                'request_spec': request_spec}

    def test_spec_traps(self):
        traps = [
            ('capabilities:cpu_count', '> 4'),
            ('capabilities:cpu_count', '< 4'),
            ('capabilities:boot_mode', '<or> uefi bios'),
            ('capabilities:boot_mode', 'uefi <or> bios'),
            ('capabilities:boot_mode', '<or>'),
            ('capabilities:boot_mode', '<or> uefi <or>'),
            ('capabilities:cpu_count', '>='),
            ('capabilities:cpu_count', '='),
            ('capabilities:boot_mode', 's=='),
            ('capabilities:boot_mode', '<in>'),
            ('capabilities:boot_mode', '<all-in>'),
            ('capabilities:cpu_count', '>=4'),
            ('capabilities:cpu_count', '>= four'),
            ('trait:CUSTOM_RAID', 'maybe'),
            ('trait:custom-raid', 'required'),
            ('resources:CUSTOM_BAREMETAL-GOLD', '1'),
            ('resources:custom_baremetal_gold', '1'),
            ('resources:BAREMETAL_GOLD', '1'),
            ('resources:CUSTOM_BAREMETAL_GOLD', 'one'),
            ('resources:CUSTOM_BAREMETAL_GOLD', '2'),
            ('resources:VCPU', '-1'),
        ]
        for key, value in traps:
            self.assertRejected(self.body(spec(extra_specs={key: value})),
                                'extra_specs.' + key)

    def test_flavor_and_image_traps(self):
        traps = [
            (spec(memory_mb=-1), 'memory_mb'),
            (spec(vcpus='8'), 'vcpus'),
            (spec(root_gb=1.5), 'root_gb'),
            (spec(swap=True), 'swap'),
            (spec(rxtx_factor='fast'), 'rxtx_factor'),
            (spec(extra_specs={'capabilities:boot_mode': 1}),
             'extra_specs.capabilities:boot_mode'),
            (spec(extra_specs={'trait:CUSTOM_RAID': True}),
             'extra_specs.trait:CUSTOM_RAID'),
            (dict(spec(), extra_specs=['a']), 'extra_specs'),
            (spec(image_properties={'img_hv_type': 'kvm'}),
             'image.properties.img_hv_type'),
            (spec(image_properties={'hw_vm_mode': 'xen'}),
             'image.properties.hw_vm_mode'),
            (spec(image_properties={'hw_architecture': 'x86-64!'}),
             'image.properties.hw_architecture'),
            (spec(image_properties={'trait:HW_CPU_X86_AVX2': 'forbidden'}),
             'image.properties.trait:HW_CPU_X86_AVX2'),
            (spec(image_properties={'traits_required': 'CUSTOM_RAID'}),
             'image.properties.traits_required'),
            (dict(spec(), image='ubuntu'), 'image'),
            (spec(extra_specs={'trait:CUSTOM_GPU': 'forbidden'},
                  image_properties={'traits_required': ['CUSTOM_GPU']}),
             'extra_specs.trait:CUSTOM_GPU'),
        ]
        for request_spec, key in traps:
            self.assertRejected(self.body(request_spec), key)

    def test_body_traps(self):
        good = self.body(examples.REQUEST_SPEC)
        without_spec = dict(good)
        del without_spec['request_spec']
        without_host = dict(good)
        del without_host['host']
        traps = [
            (without_spec, 'request_spec'),
            (dict(good, request_spec=[]), 'request_spec'),
            (dict(good, request_spec='{}'), 'request_spec'),
            (dict(good, request_spec=None), 'request_spec'),
            (dict(good, instance_uuid='not-a-uuid'), 'instance_uuid'),
            (dict(good, instance_uuid=42), 'instance_uuid'),
            (without_host, 'host'),
            (dict(good, host=''), 'host'),
            (dict(good, host='h' * 256), 'host'),
            (dict(good, project_id=7), 'project_id'),
            (dict(good, candidate_nodes='node-gold-1'), 'candidate_nodes'),
            (dict(good, candidate_nodes=[1]), 'candidate_nodes'),
            (dict(good, flavor='gold'), 'flavor'),
        ]
        for body, key in traps:
            self.assertRejected(body, key, 'reserveapi.invalid')

    def test_not_json(self):
        for text in ('{"instance_uuid": ', 'null', '[]', '"spec"'):
            response = self.app.post(
                '/v1/reservations', text, headers=self.admin_headers,
                content_type='application/json', status='*')
            self.assertRejected(response, 'body', 'reserveapi.invalid')

    def test_unknown_extra_spec_namespaces_are_ignored(self):
        request_spec = spec(extra_specs={
            'hw:cpu_policy': 'dedicated', 'quota:cpu_shares': '1024',
            'aggregate_instance_extra_specs:ssd': 'true'})
        self.assertReserved(self.reserve(request_spec), 'node-gold-1')


class TestMatching(ReservationTestCase):
    """DESIGN.md "Matching", rule by rule, through SQL and Python."""

    def test_resource_class_normalized(self):
        self.nodes(inventory.node('silver', resource_class='baremetal-silver'),
                   inventory.node('gold', resource_class='Baremetal.Gold'),
                   inventory.node('plain', resource_class='baremetal'))
        self.assertChooses('gold', spec())
        self.assertChooses('silver', spec(extra_specs={
            'resources:CUSTOM_BAREMETAL_GOLD': None,
            'resources:CUSTOM_BAREMETAL_SILVER': '1'}))
        self.assertNoValidNode(
            self.reserve(spec(extra_specs={
                'resources:CUSTOM_BAREMETAL_GOLD': None,
                'resources:CUSTOM_BAREMETAL_PLATINUM': '1'})),
            '3 nodes: 3 wrong resource class')

    def test_zero_standard_resources_switch_sizing_off(self):
        self.nodes(inventory.node('tiny', memory_mb=512, cpus=1, local_gb=4))
        big = spec(memory_mb=65536, vcpus=64, root_gb=500)
        self.assertNoValidNode(self.reserve(big),
                               '1 node: 1 wrong memory size')
        self.assertNoValidNode(
            self.reserve(spec(memory_mb=256, vcpus=64, root_gb=500)),
            '1 node: 1 wrong cpu count')
        self.assertNoValidNode(
            self.reserve(spec(memory_mb=256, vcpus=1, root_gb=500)),
            '1 node: 1 too little disk')
        # One check off at a time: the next one still refuses.
        self.assertNoValidNode(
            self.reserve(spec(memory_mb=65536, vcpus=64, root_gb=500,
                              extra_specs={'resources:MEMORY_MB': '0'})),
            '1 node: 1 wrong cpu count')
        self.assertNoValidNode(
            self.reserve(spec(memory_mb=65536, vcpus=64, root_gb=500,
                              extra_specs={'resources:MEMORY_MB': '0',
                                           'resources:VCPU': '0'})),
            '1 node: 1 too little disk')
        self.assertChooses('tiny', spec(memory_mb=65536, vcpus=64,
                                        root_gb=500, extra_specs=NO_SIZING))
        # A non-zero standard amount overrides the flavor field, as in Nova.
        self.assertNoValidNode(
            self.reserve(spec(memory_mb=256, vcpus=1, root_gb=1,
                              extra_specs={'resources:MEMORY_MB': '1024'})),
            '1 node: 1 wrong memory size')

    def test_disk_counts_root_ephemeral_and_swap_rounded_up(self):
        self.nodes(inventory.node('disk-31', local_gb=31))
        # 20 + 10 + ceil(1024 MiB swap) = 31 GiB: fits exactly.
        self.assertChooses('disk-31', spec(root_gb=20, ephemeral_gb=10,
                                           swap=1024))
        # 20 + 10 + ceil(1 MiB) = 31.
        self.assertChooses('disk-31', spec(root_gb=20, ephemeral_gb=10,
                                           swap=1))
        # 20 + 10 + ceil(1025 MiB) = 32.
        self.assertNoValidNode(
            self.reserve(spec(root_gb=20, ephemeral_gb=10, swap=1025)),
            '1 node: 1 too little disk')
        self.assertNoValidNode(
            self.reserve(spec(root_gb=22, ephemeral_gb=10, swap=0)),
            '1 node: 1 too little disk')

    def test_sizes_at_least_and_exact_match(self):
        self.nodes(inventory.node('big', memory_mb=16384, cpus=16),
                   inventory.node('more-cpus', memory_mb=8192, cpus=16))
        exact = spec(memory_mb=8192, vcpus=8)
        self.config(subset_size=1, group='matcher')
        self.assertChooses('more-cpus', exact)
        self.config(exact_match=True, group='matcher')
        self.assertNoValidNode(
            self.reserve(exact),
            '2 nodes: 1 wrong memory size, 1 wrong cpu count')
        self.assertChooses('more-cpus', spec(memory_mb=8192, vcpus=16))
        self.assertChooses('big', spec(memory_mb=16384, vcpus=16))
        # Disk is never exact, as in Nova.
        self.assertChooses('big', spec(memory_mb=16384, vcpus=16,
                                       root_gb=1, ephemeral_gb=0, swap=0))

    def test_traits_from_flavor_and_image(self):
        self.nodes(
            inventory.node('raid', traits=['CUSTOM_RAID']),
            inventory.node('raid-avx2', traits=['CUSTOM_RAID',
                                                'HW_CPU_X86_AVX2']),
            inventory.node('raid-avx2-gpu', ironic_traits=True,
                           traits=['CUSTOM_RAID', 'HW_CPU_X86_AVX2',
                                   'CUSTOM_GPU']))
        without_gpu = spec(extra_specs={'trait:CUSTOM_GPU': 'forbidden'})
        self.assertChooses('raid-avx2', without_gpu)
        with_gpu = spec(image_properties={'traits_required': ['CUSTOM_GPU']})
        self.assertChooses('raid-avx2-gpu', with_gpu)
        by_flavor = spec(extra_specs={'trait:CUSTOM_GPU': 'required'},
                         image_properties={'trait:HW_CPU_X86_AVX2': None})
        self.assertChooses('raid-avx2-gpu', by_flavor)
        only_raid = spec(image_properties={'trait:HW_CPU_X86_AVX2': None},
                         extra_specs={'trait:HW_CPU_X86_AVX2': 'forbidden'})
        self.assertChooses('raid', only_raid)
        self.assertNoValidNode(
            self.reserve(spec(extra_specs={'trait:CUSTOM_FPGA': 'required'})),
            '3 nodes: 3 lack trait CUSTOM_FPGA')

    def _capability_nodes(self, key, values):
        """One node per value of capability ``key``, named after it."""
        self.nodes(*[inventory.node(
            'cap-%s' % index, memory_mb=8192 + index,
            capabilities='%s:%s' % (key, value))
            for index, value in enumerate(values)])

    def capability_spec(self, key, requirement):
        return spec(extra_specs={'capabilities': None,
                                 'capabilities:boot_mode': None,
                                 'capabilities:' + key: requirement})

    def test_capability_equals_means_at_least(self):
        self._capability_nodes('gpus', ['2', '4', 'many'])
        # "=" is Nova's "at least": 3 matches 4 only, 2 matches 2 or 4.
        self.assertChooses('cap-1', self.capability_spec('gpus', '= 3'))
        self.config(subset_size=1, group='matcher')
        self.assertChooses('cap-0', self.capability_spec('gpus', '= 2'))
        self.assertChooses('cap-0', self.capability_spec('gpus', '== 2'))
        self.assertChooses('cap-1', self.capability_spec('gpus', '>= 3'))
        self.assertChooses('cap-0', self.capability_spec('gpus', '<= 3'))
        self.assertChooses('cap-1', self.capability_spec('gpus', '!= 2'))
        # A numeric operator never matches "many", and never fails.
        self.assertNoValidNode(
            self.reserve(self.capability_spec('gpus', '= 5')),
            '3 nodes: 3 fail capability gpus; capability gpus: closest '
            'nodes have 2 (1), 4 (1), many (1)')

    def test_capability_whole_string_and_string_operators(self):
        self._capability_nodes('boot_mode', ['uefi', 'bios', 'uefi-http'])
        self.assertChooses('cap-0', self.capability_spec('boot_mode',
                                                         'uefi'))
        self.assertChooses('cap-0', self.capability_spec('boot_mode',
                                                         's== uefi'))
        self.assertChooses('cap-1', self.capability_spec('boot_mode',
                                                         's< c'))
        self.assertChooses('cap-2', self.capability_spec('boot_mode',
                                                         's> uefi'))
        self.assertChooses('cap-1', self.capability_spec(
            'boot_mode', '<or> bios <or> legacy'))
        self.assertChooses('cap-2', self.capability_spec('boot_mode',
                                                         '<in> http'))
        self.assertChooses('cap-2', self.capability_spec(
            'boot_mode', '<all-in> uefi http'))
        self.assertNoValidNode(
            self.reserve(self.capability_spec('boot_mode', 'UEFI')),
            '3 nodes: 3 fail capability boot_mode; capability boot_mode: '
            'closest nodes have bios (1), uefi (1), uefi-http (1)')

    def test_capability_substring_is_not_a_word_match(self):
        self._capability_nodes('cpu_model', ['Xeon Gold 6230'])
        self.assertChooses('cap-0', self.capability_spec('cpu_model',
                                                         '<in> old'))

    def test_legacy_capability_list(self):
        self.nodes(
            inventory.node('no-gpu', capabilities='supports_uefi:true,'
                                                  'has_gpu:false'),
            inventory.node('gpu', capabilities='supports_uefi:TRUE,'
                                               'has_gpu:True'),
            inventory.node('gpu-bios', memory_mb=9000,
                           capabilities='supports_uefi:true,has_gpu:true,'
                                        'boot_mode:bios'))
        legacy = spec(extra_specs={'capabilities:boot_mode': None})
        self.config(subset_size=1, group='matcher')
        self.assertChooses('gpu', legacy)
        self.assertChooses('gpu-bios', spec(extra_specs={
            'capabilities:boot_mode': None,
            'capabilities': 'has_gpu, boot_mode:bios'}))
        self.assertNoValidNode(
            self.reserve(spec(extra_specs={
                'capabilities:boot_mode': None,
                'capabilities': 'supports_uefi,has_fpga'})),
            '3 nodes: 3 fail capability has_fpga; capability has_fpga: '
            'closest nodes have <unset> (3)')

    def test_image_architecture(self):
        self.nodes(inventory.node('x86', cpu_arch='x86_64'),
                   inventory.node('arm', cpu_arch='aarch64'))
        self.assertChooses('arm', spec(image_properties={
            'hw_architecture': 'arm64'}))
        self.assertChooses('x86', spec(image_properties={
            'hw_architecture': 'AMD64'}))
        self.assertChooses('arm', spec(image_properties={
            'hw_architecture': None, 'architecture': 'aarch64'}))
        self.assertNoValidNode(
            self.reserve(spec(image_properties={
                'hw_architecture': 'ppc64le'})),
            '2 nodes: 2 wrong cpu_arch')

    def test_image_may_say_baremetal_and_hvm(self):
        self.nodes(inventory.node('node-gold-1'))
        self.assertChooses('node-gold-1', spec(image_properties={
            'img_hv_type': 'baremetal', 'hw_vm_mode': 'hvm'}))

    def test_eligibility(self):
        self.nodes(
            inventory.node('deploying', provision_state='deploying'),
            inventory.node('no-power', power_state=None),
            inventory.node('maintenance', maintenance=True),
            inventory.node('retired', retired=True),
            inventory.node('busy', instance_uuid=str(uuid.uuid4())),
            inventory.node('free'))
        self.assertReserved(self.reserve(), 'free')
        self.assertNoValidNode(
            self.reserve(),
            '6 nodes: 1 not available, 1 in an unknown power state, 1 in '
            'maintenance, 1 retired, 1 with an instance, 1 reserved')

    def test_owner_and_lessee(self):
        self.nodes(
            inventory.node('others', owner=OTHER_PROJECT),
            inventory.node('leased-to-others', lessee=OTHER_PROJECT,
                           memory_mb=12288),
            inventory.node('mine', owner=SAMPLE_PROJECT),
            inventory.node('leased-to-me', owner=OTHER_PROJECT,
                           lessee=SAMPLE_PROJECT, memory_mb=16384))
        self.config(subset_size=1, group='matcher')
        self.assertChooses('mine', spec(), project_id=SAMPLE_PROJECT)
        self.assertChooses('others', spec(), project_id=OTHER_PROJECT)
        self.assertChooses('leased-to-me', spec(), project_id=SAMPLE_PROJECT,
                           candidate_nodes=['leased-to-me'])
        self.assertNoValidNode(
            self.reserve(spec(), project_id='someone-else'),
            "4 nodes: 4 not the project's")
        self.nodes(inventory.node('shared'), inventory.node('mine',
                                                            owner='x'))
        self.assertChooses('shared', spec(), project_id='someone-else')

    def test_candidate_nodes_by_uuid_and_name(self):
        self.nodes(*[inventory.node('node-%d' % index)
                     for index in range(3)])
        self.assertChooses('node-1', spec(), candidate_nodes=['node-1'])
        self.assertChooses('node-2', spec(), candidate_nodes=[
            inventory.node_uuid('node-2')])
        self.assertChooses('node-0', spec(), candidate_nodes=[
            'node-0', inventory.node_uuid('node-0'), 'gone'])
        self.assertNoValidNode(self.reserve(spec(), candidate_nodes=['gone']),
                               '3 nodes: 3 not in candidate_nodes')
        self.assertNoValidNode(self.reserve(spec(), candidate_nodes=[]),
                               '3 nodes: 3 not in candidate_nodes')

    def test_best_fit_first(self):
        self.nodes(inventory.node('large', memory_mb=262144, cpus=64,
                                  local_gb=4000),
                   inventory.node('medium', memory_mb=16384, cpus=16,
                                  local_gb=400),
                   inventory.node('small', memory_mb=4096, cpus=8,
                                  local_gb=40))
        self.config(subset_size=1, group='matcher')
        for _attempt in range(4):
            self.assertChooses('small', spec())
        first = self.assertReserved(self.reserve(), 'small')
        second = self.assertReserved(self.reserve(), 'medium')
        third = self.assertReserved(self.reserve(), 'large')
        self.assertEqual(3, len({first['uuid'], second['uuid'],
                                 third['uuid']}))

    def test_subset_spreads_equal_nodes(self):
        self.nodes(*[inventory.node('node-%d' % index) for index in range(4)])
        chosen = set()
        for _attempt in range(40):
            response = self.reserve()
            self.assertEqual(201, response.status_int, response.text)
            chosen.add(response.json['node_name'])
            self.release(response.json['uuid'])
        self.assertGreater(len(chosen), 1)


class TestNoValidNode(ReservationTestCase):

    def test_detail_counts_each_criterion(self):
        self.nodes(
            inventory.node('node-gold-1'),
            inventory.node('node-gold-2',
                           capabilities='boot_mode:bios,supports_uefi:true,'
                                        'has_gpu:true'),
            inventory.node('node-gold-3', traits=['HW_CPU_X86_AVX2']),
            inventory.node('node-silver-1', resource_class='baremetal-silver'),
            inventory.node('node-silver-2', resource_class='baremetal-silver'))
        self.assertReserved(self.reserve(), 'node-gold-1')
        response = self.request('POST', '/v1/reservations',
                                sample('reservations/create-request.json'))
        self.assertNoValidNode(
            response,
            '5 nodes: 2 wrong resource class, 1 reserved, 1 lack trait '
            'CUSTOM_RAID, 1 fail capability boot_mode; capability '
            'boot_mode: closest nodes have bios (1)')
        self.assertMatchesSample(
            response.json, 'reservations/no-valid-node-response.json')
        self.assertEqual(1, len(self.list_reservations()))

    def test_detail_adds_python_and_sql_counts(self):
        # Sizes and traits are decided in SQL, "=" and "<in>" in Python.
        self.nodes(
            inventory.node('small', memory_mb=512),
            inventory.node('two-gpus', capabilities='gpus:2'),
            inventory.node('one-gpu', capabilities='gpus:1', memory_mb=9000),
            inventory.node('no-gpu', capabilities='', memory_mb=9001))
        request_spec = spec(extra_specs={'capabilities': None,
                                         'capabilities:boot_mode': None,
                                         'capabilities:gpus': '= 4'})
        self.assertNoValidNode(
            self.reserve(request_spec),
            '4 nodes: 3 fail capability gpus, 1 wrong memory size; '
            'capability gpus: closest nodes have 1 (1), 2 (1), <unset> (1)')

    def test_empty_inventory(self):
        self.nodes()
        self.assertNoValidNode(self.reserve(), '0 nodes')


class TestListReservations(ReservationTestCase):

    def setUp(self):
        super().setUp()
        # Sizes differ so that best fit makes the choice deterministic.
        self.nodes(*[inventory.node('node-%d' % index, memory_mb=8192 + index)
                     for index in range(8)])
        self.config(subset_size=1, group='matcher')
        self.made = []
        for index in range(6):
            response = self.reserve(
                host=(HOST, 'compute-4')[index % 2],
                project_id=SAMPLE_PROJECT if index < 4 else OTHER_PROJECT)
            self.assertReserved(response, 'node-%d' % index)
            self.made.append(response.json)

    def walk(self, query, page_size):
        """Follow ``next`` from the first page to the last."""
        items = []
        url = '/v1/reservations?%slimit=%d' % (query, page_size)
        pages = 0
        while url:
            response = self.request('GET', url)
            self.assertEqual(200, response.status_int, response.text)
            page = response.json['reservations']
            self.assertLessEqual(len(page), page_size)
            items.extend(page)
            pages += 1
            self.assertLess(pages, 20, 'next links never end')
            url = response.json.get('next')
            if url:
                self.assertEqual(page_size, len(page))
                self.assertTrue(url.startswith('http://localhost/v1/'))
                self.assertIn('marker=' + page[-1]['uuid'], url)
                url = url[len('http://localhost'):]
            else:
                self.assertNotIn('next', response.json)
        return items

    def test_list_sample(self):
        response = self.request('GET', '/v1/reservations?host=compute-3'
                                       '&limit=1')
        self.assertEqual(200, response.status_int)
        self.assertMatchesSample(response.json,
                                 'reservations/list-response.json')
        self.assertEqual([self.made[0]], response.json['reservations'])

    def test_filters(self):
        def listed(query):
            return [item['uuid'] for item in self.list_reservations(query)]

        def made(*indexes):
            return [self.made[index]['uuid'] for index in indexes]

        self.assertEqual(made(0, 1, 2, 3, 4, 5), listed(''))
        self.assertEqual(made(1, 3, 5), listed('?host=compute-4'))
        self.assertEqual(made(3), listed(
            '?instance_uuid=' + self.made[3]['instance_uuid']))
        self.assertEqual(made(2), listed(
            '?node_uuid=' + inventory.node_uuid('node-2')))
        self.assertEqual(made(4, 5), listed('?project_id=' + OTHER_PROJECT))
        self.assertEqual(made(4), listed(
            '?project_id=%s&host=%s' % (OTHER_PROJECT, HOST)))
        self.assertEqual([], listed('?host=compute-9'))
        self.assertEqual([], listed('?node_uuid=' + inventory.node_uuid(
            'node-7')))
        patched = self.request('PATCH', '/v1/reservations/' +
                               self.made[5]['uuid'],
                               [{'op': 'replace', 'path': '/state',
                                 'value': 'active'}])
        self.assertEqual(200, patched.status_int)
        self.assertEqual(made(5), listed('?state=active'))
        self.assertEqual(made(0, 1, 2, 3, 4), listed('?state=reserved'))
        self.assertEqual([], listed('?state=expired'))
        error = self.assertError(
            self.request('GET', '/v1/reservations?state=deployed'), 400,
            'reserveapi.invalid')
        self.assertIn('reserved, active, expired', error['detail'])

    def test_next_link_only_when_more(self):
        response = self.request('GET', '/v1/reservations?limit=6')
        self.assertEqual(6, len(response.json['reservations']))
        self.assertNotIn('next', response.json)
        response = self.request('GET', '/v1/reservations?limit=5')
        self.assertIn('next', response.json)
        self.config(max_limit=4, group='api')
        response = self.request('GET', '/v1/reservations')
        self.assertEqual(4, len(response.json['reservations']))
        self.assertIn('limit=4', response.json['next'])

    def test_pages_keep_filters(self):
        expected = [item['uuid'] for item in self.made[1::2]]
        walked = self.walk('host=compute-4&', 1)
        self.assertEqual(expected, [item['uuid'] for item in walked])

    def _vary_nullable_columns(self):
        """Leave updated_at and expires_at NULL on some rows only."""
        for item in self.made[:2]:
            response = self.request('PATCH', '/v1/reservations/' +
                                    item['uuid'],
                                    [{'op': 'replace', 'path': '/state',
                                      'value': 'active'}])
            self.assertEqual(200, response.status_int, response.text)
        self.config(reserved_ttl=60, group='reservations')
        later = timeutils.utcnow() + datetime.timedelta(minutes=2)
        self.assertEqual(4, reservations.expire(now=later))
        self.config(reserved_ttl=0, group='reservations')
        for _index in range(2):
            self.made.append(self.reserve().json)

    def test_sort_and_walk_every_key(self):
        self._vary_nullable_columns()
        everything = {item['uuid'] for item in self.made}
        self.assertEqual(8, len(everything))
        for sort_key in reservations.SORT_KEYS:
            ascending = self.list_reservations(
                '?sort_key=%s&sort_dir=asc' % sort_key)
            descending = self.list_reservations(
                '?sort_key=%s&sort_dir=desc' % sort_key)
            values = [item[sort_key] for item in ascending]
            present = [value for value in values if value is not None]
            if sort_key.endswith('_at'):
                present = [datetime.datetime.fromisoformat(value)
                           for value in present]
            self.assertEqual(sorted(present), present, sort_key)
            if sort_key.endswith('_at'):
                values = [value and datetime.datetime.fromisoformat(value)
                          for value in values]
            # NULL sorts after every value, so desc reverses asc exactly.
            self.assertEqual(present + [None] * (len(values) - len(present)),
                             values, sort_key)
            self.assertEqual(list(reversed(ascending)), descending, sort_key)
            for sort_dir, listed in (('asc', ascending),
                                     ('desc', descending)):
                for page_size in (1, 3):
                    walked = self.walk('sort_key=%s&sort_dir=%s&'
                                       % (sort_key, sort_dir), page_size)
                    self.assertEqual(
                        [item['uuid'] for item in listed],
                        [item['uuid'] for item in walked],
                        (sort_key, sort_dir, page_size))
                    self.assertEqual(everything,
                                     {item['uuid'] for item in walked})

    def test_bad_paging_is_400(self):
        for query in ('limit=0', 'limit=-1', 'limit=ten', 'sort_key=node',
                      'sort_key=project_id', 'sort_dir=up',
                      'marker=%s' % uuid.uuid4(), 'colour=red'):
            error = self.assertError(
                self.request('GET', '/v1/reservations?' + query), 400,
                'reserveapi.invalid')
            self.assertIn(query.split('=')[0], error['detail'])

    def test_project_reader_sees_own_project_only(self):
        reader = self.headers_for(['reader'], project_id=SAMPLE_PROJECT)
        response = self.request('GET', '/v1/reservations', headers=reader)
        self.assertEqual(200, response.status_int)
        self.assertEqual([item['uuid'] for item in self.made[:4]],
                         [item['uuid'] for item in
                          response.json['reservations']])
        # Asking for another project's changes nothing.
        response = self.request(
            'GET', '/v1/reservations?project_id=' + OTHER_PROJECT,
            headers=reader)
        self.assertEqual(4, len(response.json['reservations']))
        self.assertEqual({SAMPLE_PROJECT}, {
            item['project_id'] for item in response.json['reservations']})
        mine = self.request('GET', '/v1/reservations/' + self.made[0]['uuid'],
                            headers=reader)
        self.assertEqual(self.made[0], mine.json)
        theirs = self.request('GET', '/v1/reservations/' +
                              self.made[4]['uuid'], headers=reader)
        self.assertError(theirs, 404, 'reserveapi.reservation_not_found')
        outsider = self.headers_for(['reader'], project_id='nobody')
        response = self.request('GET', '/v1/reservations', headers=outsider)
        self.assertEqual([], response.json['reservations'])


class TestUpdateReservations(ReservationTestCase):

    def setUp(self):
        super().setUp()
        self.nodes(inventory.node('node-gold-1'), inventory.node('node-gold-2',
                                                                 memory_mb=9000))
        self.config(subset_size=1, group='matcher')
        body = sample('reservations/create-request.json')
        response = self.request('POST', '/v1/reservations', body)
        self.reservation = self.assertReserved(response, 'node-gold-1')
        self.path = '/v1/reservations/' + self.reservation['uuid']
        self.body = body

    def patch(self, operations, headers=None):
        return self.request('PATCH', self.path, operations, headers=headers)

    def test_takeover_by_another_host(self):
        response = self.patch(sample('reservations/takeover-request.json'))
        self.assertEqual(200, response.status_int, response.text)
        self.assertMatchesSample(response.json,
                                 'reservations/takeover-response.json')
        self.assertEqual(NEW_HOST, response.json['host'])
        self.assertEqual('reserved', response.json['state'])
        self.assertEqual(NEW_HOST, self.node('node-gold-1')['reservation'][
            'host'])
        # Nova's retry from the new host is idempotent; the old host's is
        # now the conflict.
        again = self.request('POST', '/v1/reservations',
                             dict(self.body, host=NEW_HOST))
        self.assertEqual(200, again.status_int, again.text)
        self.assertEqual(self.reservation['uuid'], again.json['uuid'])
        self.assertError(self.request('POST', '/v1/reservations', self.body),
                         409, 'reserveapi.instance_reserved')
        # The test op guards against a concurrent takeover.
        response = self.patch([
            {'op': 'test', 'path': '/host', 'value': HOST},
            {'op': 'replace', 'path': '/host', 'value': 'compute-9'}])
        self.assertError(response, 409, 'reserveapi.conflict')
        self.assertEqual(NEW_HOST, self.request('GET', self.path).json[
            'host'])

    def test_confirm_deployed(self):
        response = self.patch(sample('reservations/update-request.json'))
        self.assertEqual(200, response.status_int, response.text)
        self.assertMatchesSample(response.json,
                                 'reservations/update-response.json')
        self.assertEqual('active', response.json['state'])
        self.assertIsNotNone(response.json['updated_at'])
        self.assertEqual('active', self.node('node-gold-1')['reservation'][
            'state'])
        # Idempotent: already active.
        self.assertEqual(200, self.patch(sample(
            'reservations/update-request.json')).status_int)
        back = self.patch([{'op': 'replace', 'path': '/state',
                            'value': 'reserved'}])
        self.assertError(back, 409, 'reserveapi.invalid_state')
        expired = self.patch([{'op': 'replace', 'path': '/state',
                               'value': 'expired'}])
        self.assertError(expired, 409, 'reserveapi.invalid_state')
        self.assertEqual('active', self.request('GET', self.path).json[
            'state'])

    def test_both_in_one_patch(self):
        response = self.patch([
            {'op': 'replace', 'path': '/host', 'value': NEW_HOST},
            {'op': 'replace', 'path': '/state', 'value': 'active'}])
        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual((NEW_HOST, 'active'),
                         (response.json['host'], response.json['state']))

    def test_bad_patches_are_400_and_change_nothing(self):
        bad = [
            [{'op': 'replace', 'path': '/node_uuid',
              'value': str(uuid.uuid4())}],
            [{'op': 'replace', 'path': '/project_id', 'value': 'x'}],
            [{'op': 'add', 'path': '/host', 'value': NEW_HOST}],
            [{'op': 'remove', 'path': '/host'}],
            [{'op': 'replace', 'path': '/host'}],
            [{'op': 'replace', 'path': '/host', 'value': ''}],
            [{'op': 'replace', 'path': '/host', 'value': 7}],
            [{'op': 'replace', 'path': '/state', 'value': 'bogus'}],
            [{'op': 'replace', 'path': '/state', 'value': 'active'},
             {'op': 'replace', 'path': '/uuid', 'value': 'x'}],
            [],
            {'host': NEW_HOST},
            ['replace'],
        ]
        for operations in bad:
            response = self.patch(operations)
            self.assertError(response, 400, 'reserveapi.invalid')
        response = self.app.patch(self.path, '[{"op": ', headers=dict(
            self.admin_headers, **{'Content-Type': 'application/json'}),
            status='*')
        self.assertError(response, 400, 'reserveapi.invalid')
        self.assertEqual(self.reservation,
                         self.request('GET', self.path).json)

    def test_expiry(self):
        self.config(reserved_ttl=600, group='reservations')
        active = self.reserve()
        self.assertEqual(201, active.status_int)
        self.assertEqual(200, self.request(
            'PATCH', '/v1/reservations/' + active.json['uuid'],
            [{'op': 'replace', 'path': '/state', 'value': 'active'}]
        ).status_int)
        shown = self.request('GET', self.path).json
        self.assertIsNotNone(shown['expires_at'])
        now = timeutils.utcnow()
        self.assertEqual(0, reservations.expire(
            now=now + datetime.timedelta(seconds=590)))
        self.assertEqual(1, reservations.expire(
            now=now + datetime.timedelta(seconds=610)))
        expired = self.request('GET', self.path).json
        self.assertEqual('expired', expired['state'])
        self.assertIsNotNone(expired['expires_at'])
        self.assertIsNone(self.node('node-gold-1')['reservation'])
        # Active ones never expire.
        self.assertEqual(0, reservations.expire(
            now=now + datetime.timedelta(days=365)))
        self.assertEqual('active', self.request(
            'GET', '/v1/reservations/' + active.json['uuid']).json['state'])
        # The node is free: another instance gets it; the host that held
        # the expired one sees why its reservation is gone, and may not
        # revive it.
        self.assertReserved(self.reserve(), 'node-gold-1')
        self.assertError(self.patch(sample(
            'reservations/update-request.json')), 409,
            'reserveapi.invalid_state')
        error = self.assertError(self.patch([{'op': 'replace',
                                              'path': '/host',
                                              'value': NEW_HOST}]), 409,
                                 'reserveapi.invalid_state')
        self.assertIn('has expired', error['detail'])
        self.assertEqual(['expired'], [item['state'] for item in
                                       self.list_reservations(
                                           '?state=expired')])
        # Deleting an expired one is allowed and final.
        self.assertEqual(204, self.request('DELETE', self.path).status_int)
        self.assertError(self.request('GET', self.path), 404,
                         'reserveapi.reservation_not_found')

    def _age(self, reservation_uuid, seconds):
        """Pretend the reservation was made ``seconds`` ago."""
        with self.engine.begin() as connection:
            connection.execute(
                sa.update(models.Reservation)
                .where(models.Reservation.uuid == reservation_uuid)
                .values(created_at=timeutils.utcnow() -
                        datetime.timedelta(seconds=seconds)))

    def test_expire_reservations_command(self):
        code, out, _err = inventory.manage(self, 'expire-reservations')
        self.assertEqual(0, code)
        self.assertIn('never expire', out)
        self.config(reserved_ttl=600, group='reservations')
        fresh = self.reserve()
        self.assertEqual(201, fresh.status_int)
        self._age(self.reservation['uuid'], 601)
        code, out, _err = inventory.manage(self, 'expire-reservations')
        self.assertEqual(0, code)
        self.assertIn('Expired 1 reservations', out)
        self.assertEqual('expired',
                         self.request('GET', self.path).json['state'])
        self.assertEqual('reserved', self.request(
            'GET', '/v1/reservations/' + fresh.json['uuid']).json['state'])
        self.assertIsNone(self.node('node-gold-1')['reservation'])
        code, out, _err = inventory.manage(self, 'expire-reservations')
        self.assertEqual((0, 'Expired 0 reservations.\n'), (code, out))

    def test_expiry_off_by_default(self):
        self.assertIsNone(self.reservation['expires_at'])
        self.assertEqual(0, reservations.expire(
            now=timeutils.utcnow() + datetime.timedelta(days=365)))
        self.assertEqual('reserved',
                         self.request('GET', self.path).json['state'])


class TestReservationStoryPostgreSQL(base.PostgresqlMixin,
                                     TestReservationStory):
    pass


class TestReservationStoryMySQL(base.MySQLMixin, TestReservationStory):
    pass


class TestMalformedSpecsPostgreSQL(base.PostgresqlMixin, TestMalformedSpecs):
    pass


class TestMalformedSpecsMySQL(base.MySQLMixin, TestMalformedSpecs):
    pass


class TestMatchingPostgreSQL(base.PostgresqlMixin, TestMatching):
    pass


class TestMatchingMySQL(base.MySQLMixin, TestMatching):
    pass


class TestNoValidNodePostgreSQL(base.PostgresqlMixin, TestNoValidNode):
    pass


class TestNoValidNodeMySQL(base.MySQLMixin, TestNoValidNode):
    pass


class TestListReservationsPostgreSQL(base.PostgresqlMixin,
                                     TestListReservations):
    pass


class TestListReservationsMySQL(base.MySQLMixin, TestListReservations):
    pass


class TestUpdateReservationsPostgreSQL(base.PostgresqlMixin,
                                       TestUpdateReservations):
    pass


class TestUpdateReservationsMySQL(base.MySQLMixin, TestUpdateReservations):
    pass
