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

"""Resolve a compute host to every resource provider it has.

Nova mirrored only the first compute node of a host, looked up by name; an
Ironic host has one provider per node, named after the node, so we also ask
Nova for all compute nodes of the host (their ids are provider UUIDs).
"""

import reserveapi.conf
from reserveapi.mirror import nova
from reserveapi.peers import clients as peers

CONF = reserveapi.conf.CONF


class HostResolver:
    """Host name → UUIDs of all its resource providers.

    A host with no provider yet resolves to an empty list: the caller keeps
    its membership pending until one appears. Failures of Placement or Nova
    raise (``PeerError``): answering with the providers found so far would
    silently leave the others out of the aggregate.
    """

    def __init__(self, placement_client, nova_client=None):
        self.placement = placement_client
        self._nova = nova_client

    @property
    def nova(self):
        if self._nova is None:
            self._nova = nova.NovaClient(timeout=self.placement.timeout)
        return self._nova

    def providers_for_host(self, host, timeout=None):
        """Sorted, deduplicated provider UUIDs of ``host``; the providers
        Placement has under its name as remembered from an earlier
        lookup (a write to one that is gone forgets it).

        :raises: PeerError
        """
        return self.providers_for_hosts([host], timeout=timeout,
                                        fresh=False)[host]

    def providers_for_hosts(self, hosts, timeout=None, fresh=True):
        """``{host: sorted provider UUIDs}``, listing Nova's nodes once.

        For reconcile and the retry pass: one hypervisor listing serves
        every host, and Placement is asked for every name unless not
        ``fresh``.

        :raises: PeerError
        """
        deadline = peers.deadline_for(timeout)
        found = {host: set() for host in hosts}
        for host in found:
            found[host].update(self.placement.provider_uuids_named(
                host, timeout=peers.time_left(deadline), fresh=fresh))
        if CONF.mirror.resolve_hosts_via_nova and found:
            for hypervisor in self.nova.hypervisors(
                    timeout=peers.time_left(deadline)):
                host = nova.service_host(hypervisor)
                if host in found:
                    found[host].add(hypervisor['id'])
        return {host: sorted(uuids) for host, uuids in found.items()}
