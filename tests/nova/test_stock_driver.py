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

"""The baseline: Nova's stock ironic.IronicDriver, one compute service, in
the same harness (one compute node per Ironic node)."""

from reserveapi_testing.nova import base


class TestStockDriver(base.IronicTestCase):

    COMPUTE_DRIVER = 'ironic.IronicDriver'
    HOSTS = ('compute-1',)

    def test_boot_and_delete(self):
        self.assertEqual(sorted(self.node_uuids), sorted(
            node.hypervisor_hostname for node in self.compute_nodes()))
        # One at a time: concurrent claims on the one resource tracker of
        # the stock driver's host sometimes hit Nova 34's "Can't upgrade a
        # READER transaction to a WRITER mid-transaction" in this
        # in-process harness, and a host with one compute service has no
        # other host to reschedule to (tools/bench/nova_boot.py shows
        # concurrent boots, errors included).
        servers = [server for _ in range(3) for server in
                   self.wait_for_status(self.boot(1), ('ACTIVE',))]
        used = {server['id']: self.ironic_node_of(server)['uuid']
                for server in servers}
        self.assertEqual(3, len(set(used.values())))
        for server in servers:
            self.assertEqual(used[server['id']],
                             server['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        # One at a time too: the stock resource tracker's update after a
        # delete hits the same error when deletes overlap.
        for server in servers:
            self.delete_and_wait([server])
        self.assertEqual([], self.ironic.list_nodes(associated=True))
