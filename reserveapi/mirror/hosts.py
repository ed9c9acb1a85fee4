"""Resolve a compute host to every resource provider it has.

Nova mirrored only the first compute node of a host, looked up by name; an
Ironic host has one provider per node, named after the node, so we also ask
Nova for all compute nodes of the host (their ids are provider UUIDs).
"""

from urllib import parse

import reserveapi.conf
from reserveapi.mirror import placement

NOVA_MICROVERSION = '2.53'
"""Hypervisor ids are compute node UUIDs from 2.53 on (aggregate UUIDs need
2.41)."""


class NovaError(placement.PeerError):
    """Nova answered in a way we cannot act on."""

    code = 'reserveapi.nova_error'
    msg_fmt = 'Nova request failed: %(reason)s'


class NovaUnavailable(NovaError):
    """No answer from Nova in time: refused, timed out, or a 5xx."""

    status = 503
    code = 'reserveapi.nova_unavailable'
    msg_fmt = 'Nova is unavailable: %(reason)s'


class NovaClient(placement.PeerClient):
    """Nova calls the mirror needs, from the ``[nova]`` group."""

    group = 'nova'
    service_type = 'compute'
    microversion = NOVA_MICROVERSION
    error = NovaError
    unavailable = NovaUnavailable

    def hypervisors(self, timeout=None):
        """Every compute node, following ``hypervisors_links`` pages."""
        deadline = self._deadline(timeout)
        hypervisors = []
        query = {}
        while True:
            body = self._get_json('/os-hypervisors/detail', deadline,
                                  params=query)
            page = body['hypervisors']
            hypervisors.extend(page)
            next_query = _next_page_query(body.get('hypervisors_links'))
            if not page or not next_query or next_query == query:
                return hypervisors
            query = next_query

    def hypervisors_for_host(self, host, timeout=None):
        """Compute nodes whose nova-compute service runs on ``host``."""
        return [hypervisor for hypervisor in self.hypervisors(timeout)
                if _service_host(hypervisor) == host]

    def aggregates(self, timeout=None):
        """Nova's host aggregates as ``[{"uuid", "hosts": [...]}]``."""
        body = self._get_json('/os-aggregates', self._deadline(timeout))
        return [{'uuid': aggregate['uuid'],
                 'hosts': sorted(aggregate.get('hosts') or [])}
                for aggregate in body['aggregates']]


def _service_host(hypervisor):
    return (hypervisor.get('service') or {}).get('host')


def _next_page_query(links):
    """Query of the ``next`` link, replayed on our own endpoint.

    Nova builds the link from its idea of its public URL, which may not be
    reachable from here; the marker and limit are all we need from it.
    """
    for link in links or []:
        if link.get('rel') == 'next':
            return dict(parse.parse_qsl(parse.urlsplit(link['href']).query))
    return None


class HostResolver:
    """Host name → UUIDs of all its resource providers.

    A host with no provider yet resolves to an empty list: the caller keeps
    its membership pending until one appears. Failures of Placement or Nova
    raise (``PeerError``): answering with the providers found so far would
    silently leave the others out of the aggregate.
    """

    def __init__(self, placement_client, nova_client=None,
                 conf=reserveapi.conf.CONF):
        self.placement = placement_client
        self._nova = nova_client
        self.conf = conf

    @property
    def via_nova(self):
        return self.conf.mirror.resolve_hosts_via_nova

    @property
    def nova(self):
        if self._nova is None:
            self._nova = NovaClient(conf=self.conf,
                                    timeout=self.placement.timeout)
        return self._nova

    def providers_for_host(self, host, timeout=None):
        """Sorted, deduplicated provider UUIDs of ``host``."""
        return self.providers_for_hosts([host], timeout=timeout)[host]

    def providers_for_hosts(self, hosts, timeout=None):
        """``{host: sorted provider UUIDs}``, listing Nova's nodes once.

        For reconcile: one hypervisor listing serves every host.
        """
        deadline = placement.deadline_for(timeout)
        found = {host: set() for host in hosts}
        for host in found:
            found[host].update(
                rp['uuid'] for rp in self.placement.providers_named(
                    host, timeout=placement.time_left(deadline)))
        if self.via_nova and found:
            for hypervisor in self.nova.hypervisors(
                    timeout=placement.time_left(deadline)):
                host = _service_host(hypervisor)
                if host in found:
                    found[host].add(hypervisor['id'])
        return {host: sorted(uuids) for host, uuids in found.items()}
