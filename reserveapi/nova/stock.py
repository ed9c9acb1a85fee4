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

"""Nova's stock Ironic driver, as far as ours reaches into its private
names: the one place that knows them.

Our driver subclasses :class:`StockDriver` and calls only the names it
adds below, private like them, so that the driver's public names stay
those of Nova's ``ComputeDriver`` (Nova's own contract test). A Nova
version that renames or drops one of ``PRIVATE`` breaks here, loudly, in
``tests/nova/test_units.py``, which checks each of them against the
installed Nova; nowhere else in ``reserveapi.nova`` uses a private name of
Nova's.
"""

from nova.virt.ironic import driver as ironic_driver

# name -> the parameters it is called with (beyond self), as the test
# checks them.
PRIVATE = {
    # Module level.
    '_NODE_FIELDS': None,
    '_get_nodes_supported_instances': ('cpu_arch',),
    # Methods of IronicDriver that ours calls.
    'IronicDriver._get_node': ('node_id',),
    'IronicDriver._get_node_list': ('return_generator', 'kwargs'),
    'IronicDriver._set_instance_id': ('node', 'instance'),
    'IronicDriver._node_resources_unavailable': ('node_obj',),
    'IronicDriver._validate_instance_and_node': ('instance',),
    'IronicDriver._get_hypervisor_type': (),
    'IronicDriver._get_hypervisor_version': (),
    # Methods of IronicDriver that ours overrides: the stock driver calls
    # them with these parameters.
    'IronicDriver._refresh_cache': (),
    'IronicDriver._cleanup_deploy': ('node', 'instance', 'network_info'),
}


class StockDriver(ironic_driver.IronicDriver):
    """The stock driver with names of ours for what ours uses of it:
    private, as a virt driver may add no public name to ComputeDriver's.
    """

    def _list_ironic_nodes(self, **filters):
        """Ironic's nodes with the fields the stock driver caches."""
        return self._get_node_list(fields=ironic_driver._NODE_FIELDS,
                                   **filters)

    def _get_ironic_node(self, node_uuid):
        return self._get_node(node_uuid)

    def _ironic_node_of_instance(self, instance):
        """The Ironic node carrying ``instance``, found by its UUID.

        :raises: InstanceNotFound
        """
        return self._validate_instance_and_node(instance)

    def _mark_node_for_instance(self, node, instance):
        """Set ``instance`` as the node's in Ironic (409 if taken).

        :raises: InstanceDeployFailure
        """
        self._set_instance_id(node, instance)

    def _node_unusable(self, node):
        """Maintenance, a failed power state, or not available."""
        return self._node_resources_unavailable(node)

    def _hypervisor_type(self):
        return self._get_hypervisor_type()

    def _hypervisor_version(self):
        return self._get_hypervisor_version()

    @staticmethod
    def _supported_instances(cpu_arch):
        return ironic_driver._get_nodes_supported_instances(cpu_arch)

    def _replace_node_cache(self, nodes, loaded_at):
        self.node_cache = {node.id: node for node in nodes}
        self.node_cache_time = loaded_at

    # The stock driver calls these two; ours refines them.

    def _refresh_cache(self):
        self._refresh_node_cache()

    def _refresh_node_cache(self):
        super()._refresh_cache()

    def _cleanup_deploy(self, node, instance, network_info=None):
        return self._clean_up_deploy(node, instance, network_info)

    def _clean_up_deploy(self, node, instance, network_info=None):
        return super()._cleanup_deploy(node, instance, network_info)
