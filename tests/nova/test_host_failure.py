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

"""A compute host dies: reservations of instances Nova deleted without it
are released, and another host takes over the rest. Real Nova, our
driver on two hosts, the service asking the same nova-api."""

import time

from reserveapi_testing.nova import base
from reserveapi_testing.nova import nova_api

GRACE = 3


class TestHostFailure(base.IronicTestCase):

    HOSTS = ('compute-1', 'compute-2')
    NODES = 4

    def setUp(self):
        super().setUp()
        self.reserveapi.configure(nova_api.serve_peers_on_loopback(self))

    def reservation_of(self, server):
        (reservation,) = self.reserveapi.reservations(
            instance_uuid=server['id'])
        return reservation

    def manage(self, *args):
        code, out, err = self.reserveapi.manage(*args)
        return code, out + err

    def test_orphan_released_after_the_grace_period(self):
        self.reserveapi.configure({'reservations': {
            'orphan_grace': 3600, 'orphan_interval': 60}})
        servers = self.wait_for_status(self.boot(2), ('ACTIVE',))
        doomed, kept = servers
        host = doomed['OS-EXT-SRV-ATTR:host']
        node = self.reservation_of(doomed)['node_uuid']
        # Nova deletes the instance by itself while its host is down:
        # no driver tears the node down or releases the reservation.
        self.stop_compute(host)
        deleted_at = time.monotonic()
        self.delete_and_wait([doomed])
        self.assertEqual('active', self.ironic.get_node(node)[
            'provision_state'])

        # Within the grace period: nothing to release.
        code, output = self.manage('release-orphans', '--dry-run')
        self.assertEqual((0, '0 orphaned reservations found (dry run: '
                             'nothing released).\n'), (code, output))

        self.reserveapi.configure({'reservations': {'orphan_grace': GRACE}})
        time.sleep(max(0, deleted_at + GRACE - time.monotonic()))
        code, output = self.manage('release-orphans', '--dry-run')
        self.assertEqual(0, code, output)
        self.assertIn('Reservation %s: instance %s of host %s on node %s, '
                      'deleted in Nova ' % (
                          self.reservation_of(doomed)['uuid'],
                          doomed['id'], host, node), output)
        self.assertIn('; would be released.', output)
        self.assertEqual(1, len(self.reserveapi.reservations(
            instance_uuid=doomed['id'])))

        self.reserveapi.run_worker_once()
        self.assertEqual([], self.reserveapi.reservations(
            instance_uuid=doomed['id']))
        self.assertEqual('active', self.reservation_of(kept)['state'])
        # Ironic still holds the deleted instance on the node: freeing
        # our record does not hand the node out.
        self.sync_reservation_inventory()
        (capacity,) = self.reserveapi.capacity()
        self.assertEqual(self.NODES - 2, capacity['available'])

    def test_takeover_only_from_a_host_nova_reports_down(self):
        (server,) = self.wait_for_status(self.boot(1), ('ACTIVE',))
        source = server['OS-EXT-SRV-ATTR:host']
        (destination,) = set(self.HOSTS) - {source}

        code, output = self.manage('takeover', '--from', source,
                                   '--to', destination)
        self.assertEqual(1, code, output)
        self.assertIn('Nova reports nova-compute on %s as up' % source,
                      output)
        self.assertEqual(source, self.reservation_of(server)['host'])

        self.stop_compute(source)
        code, output = self.manage('takeover', '--from', source,
                                   '--to', 'compute-9')
        self.assertEqual(2, code, output)
        self.assertIn('Nova has no nova-compute service on host compute-9',
                      output)
        code, output = self.manage('takeover', '--from', source,
                                   '--to', destination)
        self.assertEqual(0, code, output)
        self.assertIn('Moved 1 reservation from %s to %s.'
                      % (source, destination), output)
        reservation = self.reservation_of(server)
        self.assertEqual((destination, 'active'),
                         (reservation['host'], reservation['state']))
        self.assertEqual((2, 'Nothing moved: Invalid input: the source and '
                             'destination hosts are both %s.\n'
                          % destination),
                         self.manage('takeover', '--from', destination,
                                     '--to', destination))

        # Nova cannot be asked: refused, unless forced.
        self.reserveapi.configure({'nova': {
            'endpoint_override': 'http://127.0.0.1:9/v2.1'}})
        code, output = self.manage('takeover', '--from', destination,
                                   '--to', source)
        self.assertEqual(1, code, output)
        self.assertIn('Nothing moved: Nova is unavailable', output)
        self.reserveapi.configure({'reservations': {'orphan_grace': 0}})
        code, output = self.manage('release-orphans')
        self.assertEqual(1, code, output)
        self.assertIn('Reservations not released: Nova is unavailable',
                      output)
        code, output = self.manage('takeover', '--from', destination,
                                   '--to', source, '--force')
        self.assertEqual(0, code, output)
        self.assertEqual(source, self.reservation_of(server)['host'])
