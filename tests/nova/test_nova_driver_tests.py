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

"""Nova's own unit tests of its Ironic driver, run with ours in place of
the stock class: the virt-driver contract (public names and signatures,
deploy, destroy, power, rebuild, rescue, consoles, VIFs, volumes) as Nova
checks it.

The tests of what our driver changes on purpose are listed by name in
``CHANGED``, with why; they are not run as Nova's, and one test checks
that each still fails, so that the list stays true.
"""

import importlib.util
import os
import unittest

import fixtures
from nova.tests.unit.virt import ironic as nova_ironic_tests
import testtools

from reserveapi.nova import driver
from reserveapi.nova import stock

STOCK_CLASS = 'nova.virt.ironic.driver.IronicDriver'


def _nova_tests():
    """Nova's test module, loaded afresh while ours is the stock class, so
    that the ``mock.patch.object(ironic_driver.IronicDriver, ...)`` it
    evaluates at import patch ours, as the ones it evaluates in its tests
    do.
    """
    path = os.path.join(os.path.dirname(nova_ironic_tests.__file__),
                        'test_driver.py')
    spec = importlib.util.spec_from_file_location(__name__ + '.nova', path)
    module = importlib.util.module_from_spec(spec)
    with fixtures.MonkeyPatch(STOCK_CLASS, driver.IronicDriver):
        spec.loader.exec_module(module)
    return module


_nova = _nova_tests()


def _restore(cls, saved):
    for name in set(vars(cls)) - set(saved):
        delattr(cls, name)
    for name, value in saved.items():
        if not name.startswith('__') and vars(cls).get(name) is not value:
            setattr(cls, name, value)


class _OnOurDriver:
    """Runs a Nova test case with ours as ``ironic_driver.IronicDriver``."""

    def setUp(self):
        # Some of Nova's tests stub a method through that name and, when
        # done, set the inherited stock method on ours: put our classes
        # back as they were, so that no later test in this process (ours
        # included) sees a leftover.
        for cls in (driver.IronicDriver, stock.StockDriver):
            self.addCleanup(_restore, cls, dict(vars(cls)))
        self.useFixture(fixtures.MonkeyPatch(STOCK_CLASS,
                                             driver.IronicDriver))
        super().setUp()


class IronicDriverTestCase(_OnOurDriver, _nova.IronicDriverTestCase):
    pass


class IronicDriverSyncTestCase(_OnOurDriver,
                               _nova.IronicDriverSyncTestCase):
    pass


class IronicDriverGenerateConfigDriveTestCase(
        _OnOurDriver, _nova.IronicDriverGenerateConfigDriveTestCase):
    pass


class HashRingTestCase(_OnOurDriver, _nova.HashRingTestCase):
    pass


class NodeCacheTestCase(_OnOurDriver, _nova.NodeCacheTestCase):
    pass


class IronicDriverConsoleTestCase(_OnOurDriver,
                                  _nova.IronicDriverConsoleTestCase):
    pass


_INIT_HOST = ("init_host first connects to the reservation service, "
              "which Nova's unit tests do not have; ")

# Nova's tests of what our driver changes on purpose, by class and name.
CHANGED = {
    HashRingTestCase: {
        'test_hash_ring_refreshed_on_init': _INIT_HOST + (
            'with it there is no hash ring: every host reports the whole '
            'partition as one compute node.'),
    },
    NodeCacheTestCase: dict.fromkeys((
        'test__refresh_cache',
        'test__refresh_cache_multiple_services',
        'test__refresh_cache_our_instances',
        'test__refresh_cache_partition_key',
        'test__refresh_cache_partition_key_old_api',
        'test__refresh_cache_same_host_different_case',
        'test__refresh_cache_shard',
        'test__refresh_cache_shard_and_conductor_group',
        'test__refresh_cache_shard_and_conductor_group_skip_shard',
        'test__refresh_cache_their_instances',
    ), _INIT_HOST + (
        "with it the node cache holds the nodes carrying this host's "
        "instances, not the hash ring's share of the partition.")),
}


class TestChangedOnPurpose(testtools.TestCase):

    def test_each_still_fails(self):
        """One that passes on our driver is no longer a difference: run it
        with the others again by taking it out of CHANGED.
        """
        passing = []
        for case, names in CHANGED.items():
            for name in sorted(names):
                result = unittest.TestResult()
                case(name).run(result)
                if result.wasSuccessful():
                    passing.append('%s.%s' % (case.__name__, name))
        self.assertEqual([], passing)


def load_tests(loader, tests, pattern):
    """Every test here but those in CHANGED."""
    suite = loader.suiteClass()
    for test in testtools.iterate_tests(tests):
        if test.id().rsplit('.', 1)[1] not in CHANGED.get(type(test), ()):
            suite.addTest(test)
    return suite
