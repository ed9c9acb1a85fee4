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

"""The Nova side's pieces with real Nova objects, and its launcher and
sample config as an operator runs them."""

import ast
import inspect
import json
import os
import subprocess
import sys
import types

import fixtures
from keystoneauth1 import exceptions as ks_exc
from nova import objects
from nova import test
from nova import utils as nova_utils
from nova.virt import driver as virt_driver
from nova.virt.ironic import driver as ironic_driver

from reserveapi.client import request_spec as client_request_spec
from reserveapi.matcher import spec as matcher_spec
from reserveapi.nova import driver
from reserveapi.nova import request_spec
from reserveapi.nova import stock


def _command(name):
    return os.path.join(os.path.dirname(sys.executable), name)


class TestRequestSpec(test.NoDBTestCase):

    def test_flavor_and_image_as_nova_serializes_them(self):
        flavor = objects.Flavor(
            name='bm.gold', flavorid='42', memory_mb=4096, vcpus=4,
            vcpu_weight=None, root_gb=100, ephemeral_gb=10, swap=2048,
            rxtx_factor=1.0,
            extra_specs={'resources:CUSTOM_GOLD': '1',
                         'capabilities:boot_mode': 'uefi',
                         'trait:CUSTOM_RAID': 'required'})
        image = objects.ImageMeta.from_dict({
            'id': '155d900f-4e14-4e4c-a73d-069cbf4541e6',
            'properties': {'hw_architecture': 'x86_64',
                           'trait:HW_CPU_X86_AVX2': 'required',
                           'hw_numa_nodes': 1}})
        spec = request_spec.build(flavor, image)
        self.assertEqual(spec, json.loads(json.dumps(spec)))
        self.assertEqual(
            {'name': 'bm.gold', 'flavorid': '42', 'memory_mb': 4096,
             'vcpus': 4, 'vcpu_weight': None, 'root_gb': 100,
             'ephemeral_gb': 10, 'swap': 2048, 'rxtx_factor': 1.0,
             'extra_specs': flavor.extra_specs},
            {key: value for key, value in spec.items() if key != 'image'})
        self.assertEqual('155d900f-4e14-4e4c-a73d-069cbf4541e6',
                         spec['image']['id'])
        self.assertEqual(
            {'hw_architecture': 'x86_64', 'hw_numa_nodes': 1,
             'traits_required': ['HW_CPU_X86_AVX2']},
            spec['image']['properties'])


class TestSameSpecAsTheCommand(test.NoDBTestCase):
    """``openstack baremetal reservation candidates`` asks what the
    driver will reserve with: the flavor as compute's API shows it and
    the image as Glance's does, through reserveapi.client.request_spec,
    mean to the matcher what Nova's own objects of them mean."""

    def test_api_views_and_nova_objects_match_alike(self):
        extra_specs = {'resources:CUSTOM_GOLD': '1', 'resources:VCPU': '0',
                       'capabilities:boot_mode': '<in> uefi',
                       'trait:CUSTOM_RAID': 'required'}
        glance = {'id': '155d900f-4e14-4e4c-a73d-069cbf4541e6',
                  'name': 'raid', 'status': 'active', 'size': 10,
                  'architecture': 'amd64', 'hypervisor_type': 'baremetal',
                  'vm_mode': 'hvm', 'trait:HW_CPU_X86_AVX2': 'required',
                  'trait:CUSTOM_IGNORED': 'forbidden', 'hw_numa_nodes': '1'}
        flavor = objects.Flavor(
            name='bm.gold', flavorid='42', memory_mb=4096, vcpus=4,
            vcpu_weight=None, root_gb=100, ephemeral_gb=10, swap=0,
            rxtx_factor=1.0, extra_specs=extra_specs)
        image = objects.ImageMeta.from_dict({
            'id': glance['id'], 'properties': {
                key: value for key, value in glance.items()
                if key not in ('id', 'name', 'status', 'size')}})
        from_nova = request_spec.build(flavor, image)
        from_apis = client_request_spec.build(
            client_request_spec.flavor_from_compute({
                'id': '42', 'name': 'bm.gold', 'ram': 4096, 'vcpus': 4,
                'disk': 100, 'OS-FLV-EXT-DATA:ephemeral': 10, 'swap': '',
                'rxtx_factor': 1.0, 'extra_specs': extra_specs}),
            client_request_spec.image_from_glance(glance))
        self.assertEqual(matcher_spec.parse_request_spec(from_nova),
                         matcher_spec.parse_request_spec(from_apis))

        def flavor_of(spec):
            # Compute's API does not show vcpu_weight; matching ignores it.
            return {key: value for key, value in spec.items()
                    if key not in ('image', 'vcpu_weight')}

        self.assertEqual(flavor_of(from_nova), flavor_of(from_apis))
        self.assertEqual(from_nova['image']['id'], from_apis['image']['id'])


class TestResourceClassNames(test.NoDBTestCase):
    """A flavor that works with Nova's own Ironic driver gets the same
    nodes from us: a node's class is normalized as Nova does it.
    """

    def test_same_names_as_nova(self):
        for name in ('baremetal-gold', 'BAREMETAL_GOLD', 'CUSTOM_GOLD',
                     'custom-gold', 'Baremetal  -- Gold v2', 'straße',
                     'baremetal.with-gpu', '9', '-x-', 'CUSTOM_', 'gold'):
            self.assertEqual(nova_utils.normalize_rc_name(name),
                             matcher_spec.normalize_resource_class(name),
                             name)


class TestStockDriverPrivateNames(test.NoDBTestCase):
    """The private names of Nova's stock Ironic driver that ours uses, all
    in reserveapi.nova.stock: a Nova release that renames or reshapes one
    fails here, by name.
    """

    def test_each_exists_with_the_parameters_we_use(self):
        for name, parameters in stock.PRIVATE.items():
            owner = ironic_driver
            for part in name.split('.'):
                self.assertTrue(hasattr(owner, part),
                                'Nova no longer has %s' % name)
                owner = getattr(owner, part)
            if parameters is None:
                continue
            signature = [parameter for parameter in
                         inspect.signature(owner).parameters
                         if parameter != 'self']
            self.assertEqual(list(parameters), signature, name)

    def test_no_other_module_uses_a_private_nova_name(self):
        package = os.path.dirname(driver.__file__)
        private = {name.split('.')[-1] for name in stock.PRIVATE}
        for filename in sorted(os.listdir(package)):
            if not filename.endswith('.py') or filename == 'stock.py':
                continue
            with open(os.path.join(package, filename)) as source:
                tree = ast.parse(source.read())
            used = {node.attr for node in ast.walk(tree)
                    if isinstance(node, ast.Attribute)}
            self.assertEqual(set(), used & private, filename)

    def test_ours_hide_no_other_nova_name(self):
        """A private name Nova adds that ours defines too would have
        Nova's code call ours: the only ones are those of PRIVATE that
        ours overrides on purpose.
        """
        overridden = {name.split('.')[-1] for name in stock.PRIVATE}
        for cls in (stock.StockDriver, driver.IronicDriver):
            hidden = {name for name in vars(cls)
                      if name.startswith('_') and not name.startswith('__')
                      and hasattr(ironic_driver.IronicDriver, name)}
            self.assertEqual(set(), hidden - overridden, cls.__name__)


class TestComputeDriverContract(test.NoDBTestCase):
    """Nova's own test_public_api_signatures, on our driver: no public
    name beyond ComputeDriver's, and its parameters, so that nova-compute
    calls ours as it calls any virt driver.
    """

    def test_public_api_signatures(self):
        ours = driver.IronicDriver(None)
        # As in Nova's test: the stock driver's ironic_connection, read
        # here, would connect to Ironic.
        self.useFixture(fixtures.MockPatchObject(ours, '_ironic_connection'))
        self.assertPublicAPISignatures(virt_driver.ComputeDriver(None), ours)


class _Instance(dict):

    uuid = 'c7d3a1c0-0000-4000-8000-000000000001'
    node = 'compute-1'
    saved = False

    def save(self):
        self.saved = True


class TestInstanceOnNode(test.NoDBTestCase):

    def test_only_node_differs(self):
        instance = _Instance(node='compute-1', uuid=_Instance.uuid)
        bound = driver._InstanceOnNode(instance, 'ironic-node')
        self.assertEqual(('ironic-node', 'ironic-node', 'ironic-node'),
                         (bound.node, bound['node'], bound.get('node')))
        self.assertEqual((_Instance.uuid, _Instance.uuid),
                         (bound.uuid, bound['uuid']))
        self.assertEqual((True, True, False),
                         ('node' in bound, 'uuid' in bound,
                          'flavor' in bound))
        bound.task_state = 'spawning'
        bound.save()
        self.assertEqual(('spawning', True, 'compute-1'),
                         (instance.task_state, instance.saved, instance.node))


class TestOperatorTools(test.NoDBTestCase):

    def test_launcher_runs_nova_compute(self):
        result = subprocess.run([_command('reserveapi-nova-compute'),
                                 '--version'], capture_output=True,
                                text=True, stdin=subprocess.DEVNULL,
                                timeout=120)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertTrue((result.stdout + result.stderr).startswith('34.'))

    def test_sample_config(self):
        result = subprocess.run(
            [_command('oslo-config-generator'), '--config-file',
             'etc/reserveapi/nova-config-generator.conf', '--output-file',
             '/dev/stdout'], capture_output=True, text=True,
            stdin=subprocess.DEVNULL, timeout=120)
        self.assertEqual(0, result.returncode, result.stderr)
        sample = result.stdout
        for line in ('[reserveapi]', '#required = true',
                     '#service_type = baremetal-reservation',
                     '#endpoint_override',
                     '#auth_type', '#inventory_cache_time = 10',
                     '#aggregate_timeout = 10.0'):
            self.assertIn(line, sample)


class TestClassInventory(test.NoDBTestCase):
    """What a host reports of a resource class: the whole class; while a
    node is free, reserved only what no reservation holds, the same
    whoever claims; every node held elsewhere once none is free."""

    def _row(self, available, by_host):
        return {'resource_class': 'CUSTOM_GOLD', 'total': 10,
                'available': available, 'reserved': 10 - available,
                'reserved_by_host': by_host}

    def test_nothing_reserved_while_a_node_is_free(self):
        # Other hosts' claims change nothing this host reports.
        reports = {json.dumps(driver.class_inventory(self._row(free, 2)))
                   for free in range(1, 9)}
        self.assertEqual(1, len(reports))
        self.assertEqual((10, 0), (driver.class_inventory(self._row(1, 2))
                                   ['total'],
                                   driver.class_inventory(self._row(1, 2))
                                   ['reserved']))

    def test_nodes_no_reservation_holds_are_reserved(self):
        # Two in maintenance (say): neither free nor held.
        row = dict(self._row(3, 2), reserved=5)
        self.assertEqual(2, driver.class_inventory(row)['reserved'])

    def test_none_free_leaves_room_for_no_boot(self):
        for by_host in (0, 3, 10):
            inventory = driver.class_inventory(self._row(0, by_host))
            # Placement's room: total - reserved - this host's own
            # allocations (one per node it holds) = 0.
            self.assertEqual(0, inventory['total'] - inventory['reserved']
                             - by_host)

    def test_nodes_promised_to_holds_are_reserved(self):
        # Three of five free nodes kept for a hold that has not started.
        row = dict(self._row(5, 2), promised=3)
        self.assertEqual(3, driver.class_inventory(row)['reserved'])

    def test_every_free_node_promised_leaves_room_for_no_boot(self):
        inventory = driver.class_inventory(dict(self._row(4, 3), promised=4))
        self.assertEqual(0, inventory['total'] - inventory['reserved'] - 3)

    def test_nodes_of_holds_are_reserved(self):
        """Pins and hold boots are allocated under their hold's class:
        Placement may offer only the free nodes and this host's own
        on-demand boots' room."""
        # 3 free; of the 7 reserved, 4 are holds' (1 booted here).
        row = dict(self._row(3, 2), hold_nodes=4, hold_nodes_by_host=1)
        inventory = driver.class_inventory(row)
        self.assertEqual(4, inventory['reserved'])
        # None free: room for none beyond this host's on-demand boots.
        row = dict(self._row(0, 3), hold_nodes=4, hold_nodes_by_host=1)
        inventory = driver.class_inventory(row)
        self.assertEqual(0, inventory['total'] - inventory['reserved']
                         - (3 - 1))


class TestHoldClassesInUse(test.NoDBTestCase):
    """A hold's class the service no longer lists stays in the report
    while Placement still counts an allocation of it, with no room."""

    HOLD = driver.HOLD_CLASS_PREFIX + 'ABC'
    OTHER = driver.HOLD_CLASS_PREFIX + 'DEF'

    def setUp(self):
        super().setUp()
        self.driver = types.SimpleNamespace(_hold_classes_dropped=set())

    def keep(self, usages, listed=()):
        provider = types.SimpleNamespace(uuid='rp', inventory={
            self.HOLD: {'total': 2, 'reserved': 0},
            self.OTHER: {'total': 1, 'reserved': 0},
            'CUSTOM_GOLD': {'total': 4, 'reserved': 0}})
        inventory = {'CUSTOM_GOLD': {'total': 4, 'reserved': 1}}
        self.useFixture(fixtures.MockPatchObject(
            driver, '_provider_usages', return_value=usages))
        driver.IronicDriver._keep_hold_classes_in_use(
            self.driver, provider, inventory, {'CUSTOM_GOLD', *listed})
        return inventory

    def test_kept_while_in_use_dropped_when_not(self):
        self.assertEqual({'CUSTOM_GOLD': {'total': 4, 'reserved': 1},
                          self.HOLD: {'total': 2, 'reserved': 2}},
                         self.keep({self.HOLD: 1, self.OTHER: 0}))
        # The hold of the class dropped is over: its class is to go.
        self.assertEqual({self.OTHER}, self.driver._hold_classes_dropped)

    def test_class_of_a_running_hold_is_dropped_not_deleted(self):
        # A running hold with no room (its pins reclaimed) is listed.
        self.keep({self.HOLD: 1, self.OTHER: 0}, listed=[self.OTHER])
        self.assertEqual(set(), self.driver._hold_classes_dropped)

    def test_kept_when_placement_cannot_tell(self):
        kept = self.keep(None)
        self.assertEqual({'total': 2, 'reserved': 2}, kept[self.HOLD])
        self.assertEqual({'total': 1, 'reserved': 1}, kept[self.OTHER])
        self.assertEqual(set(), self.driver._hold_classes_dropped)


class TestDroppedHoldClassesDeleted(test.NoDBTestCase):
    """A class dropped for a hold that is over is deleted from Placement
    once the report without it is sent; it is asked again only when
    Placement could not answer."""

    HOLD = driver.HOLD_CLASS_PREFIX + 'ABC'
    OTHER = driver.HOLD_CLASS_PREFIX + 'DEF'

    def delete(self, statuses, inventory):
        self.deleted = []

        def delete(url, version):
            self.deleted.append((url, version))
            status = statuses[url.rsplit('/', 1)[1]]
            if isinstance(status, Exception):
                raise status
            return types.SimpleNamespace(status_code=status)

        placement = types.SimpleNamespace(delete=delete)
        self.useFixture(fixtures.MockPatch(
            'nova.scheduler.client.report.report_client_singleton',
            return_value=placement))
        compute = types.SimpleNamespace(
            _hold_classes_dropped={self.HOLD, self.OTHER})
        driver.IronicDriver._delete_dropped_hold_classes(
            compute, types.SimpleNamespace(inventory=inventory))
        return compute._hold_classes_dropped

    def test_deleted_once_the_drop_is_sent(self):
        # OTHER is still in the provider's inventory: not sent yet.
        left = self.delete({self.HOLD: 204}, {self.OTHER: {'total': 1}})
        self.assertEqual({self.OTHER}, left)
        self.assertEqual([('/resource_classes/' + self.HOLD, '1.2')],
                         self.deleted)

    def test_gone_or_kept_by_another_host_is_settled(self):
        self.assertEqual(set(), self.delete({self.HOLD: 404,
                                             self.OTHER: 409}, {}))
        self.assertEqual(2, len(self.deleted))

    def test_asked_again_when_placement_cannot_answer(self):
        left = self.delete(
            {self.HOLD: 503,
             self.OTHER: ks_exc.ConnectFailure('placement is down')}, {})
        self.assertEqual({self.HOLD, self.OTHER}, left)
