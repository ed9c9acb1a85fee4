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

"""Placement side of the aggregate mirror.

A provider's aggregates are changed one UUID at a time, guarded by the
provider generation: memberships that somebody else set (an operator, another
service, another aggregate of ours) always survive our writes.

A client remembers what it learnt: the providers of each name, and each
provider's aggregates and generation as last read or written. A change
then costs one PUT instead of a lookup, a read and a PUT: the generation
guards it, and a 409 (somebody wrote since) or a 404 (the provider is
gone) makes the client forget and read again.
"""

from oslo_log import log as logging

from reserveapi.common import exception
import reserveapi.conf
from reserveapi.peers import clients as peers

LOG = logging.getLogger(__name__)
CONF = reserveapi.conf.CONF

PLACEMENT_MICROVERSION = '1.19'
"""Aggregates carry the provider generation from 1.19 on."""


class PlacementClient(peers.PeerClient):
    """Placement calls the mirror needs, from the ``[placement]`` group.

    Every method takes ``timeout`` (seconds, overriding the client's) so the
    API can apply ``[mirror] inline_timeout`` while the worker waits longer.
    """

    group = 'placement'
    service_type = 'placement'
    microversion = PLACEMENT_MICROVERSION
    error = exception.PlacementError
    unavailable = exception.PlacementUnavailable

    def __init__(self, timeout=None):
        super().__init__(timeout=timeout)
        self.generation_retries = CONF.mirror.generation_retries
        # name -> provider uuids, for names that had some.
        self._named = {}
        # provider uuid -> (aggregates, generation) as last read or written.
        self._known = {}

    def providers_named(self, name, timeout=None):
        """Providers whose name is exactly ``name``: uuid, name, generation.

        :raises: PlacementError, PlacementUnavailable
        """
        body = self._get_json('/resource_providers',
                              self._deadline(timeout), params={'name': name})
        return [{'uuid': rp['uuid'], 'name': rp['name'],
                 'generation': rp['generation']}
                for rp in body['resource_providers']]

    def provider_uuids_named(self, name, timeout=None, fresh=False):
        """UUIDs of the providers named ``name``, as remembered unless
        ``fresh``; asked anew while none were found, since a host may get
        one any time.

        :raises: PlacementError, PlacementUnavailable
        """
        uuids = None if fresh else self._named.get(name)
        if uuids is None:
            uuids = [rp['uuid'] for rp in self.providers_named(
                name, timeout=timeout)]
            if uuids:
                self._named[name] = uuids
            else:
                self._named.pop(name, None)
        return list(uuids)

    def forget(self, rp_uuid):
        """Drop what is remembered about a provider and its name."""
        self._known.pop(rp_uuid, None)
        for name, uuids in list(self._named.items()):
            if rp_uuid in uuids:
                self._named.pop(name, None)

    def aggregate_providers(self, aggregate_uuid, timeout=None):
        """UUIDs of the providers directly in ``aggregate_uuid``.

        :raises: PlacementError, PlacementUnavailable
        """
        body = self._get_json('/resource_providers', self._deadline(timeout),
                              params={'member_of': aggregate_uuid})
        return {rp['uuid'] for rp in body['resource_providers']}

    def add_aggregate(self, rp_uuid, aggregate_uuid, timeout=None):
        """Make the provider a member; True if Placement had to change.

        :raises: ProviderGone, PlacementConflict, PlacementError,
            PlacementUnavailable
        """
        return self._change(rp_uuid, aggregate_uuid, True,
                            self._deadline(timeout))

    def remove_aggregate(self, rp_uuid, aggregate_uuid, timeout=None):
        """End the provider's membership; True if Placement had to change.

        :raises: ProviderGone, PlacementConflict, PlacementError,
            PlacementUnavailable
        """
        return self._change(rp_uuid, aggregate_uuid, False,
                            self._deadline(timeout))

    def _aggregates_path(self, rp_uuid):
        return '/resource_providers/%s/aggregates' % rp_uuid

    def _aggregates(self, rp_uuid, deadline):
        response = self._request('GET', self._aggregates_path(rp_uuid),
                                 deadline)
        if response.status_code == 404:
            self.forget(rp_uuid)
            raise exception.ProviderGone(provider=rp_uuid)
        if response.status_code != 200:
            raise exception.PlacementError(reason=peers.describe(response))
        return self._remember(rp_uuid, response.json())

    def _remember(self, rp_uuid, body):
        """``(aggregates, generation)`` of a GET's or PUT's answer, kept."""
        state = (frozenset(body['aggregates']),
                 body['resource_provider_generation'])
        self._known[rp_uuid] = state
        return state

    def _change(self, rp_uuid, aggregate_uuid, member, deadline):
        """Edit only ``aggregate_uuid``, write with the generation.

        The first attempt starts from the provider as last read or written,
        when known, and skips the read: a write needed by that state is
        guarded by its generation. A state that needs no write is read
        again, since somebody may have changed it since. A 409 means
        someone changed the provider since our read: read again and
        re-apply, so their change survives too.
        """
        for attempt in range(1, self.generation_retries + 1):
            known = self._known.get(rp_uuid) if attempt == 1 else None
            current, generation = known or self._aggregates(rp_uuid,
                                                            deadline)
            wanted = _edited(current, aggregate_uuid, member)
            if wanted == current and known is not None:
                current, generation = self._aggregates(rp_uuid, deadline)
                wanted = _edited(current, aggregate_uuid, member)
            if wanted == current:
                return False
            response = self._request(
                'PUT', self._aggregates_path(rp_uuid), deadline,
                json={'aggregates': sorted(wanted),
                      'resource_provider_generation': generation})
            if response.status_code == 200:
                self._remember(rp_uuid, response.json())
                LOG.info('%(action)s aggregate %(aggregate)s on resource '
                         'provider %(provider)s.',
                         {'action': 'Added' if member else 'Removed',
                          'aggregate': aggregate_uuid,
                          'provider': rp_uuid})
                return True
            self.forget(rp_uuid)
            if response.status_code == 404:
                raise exception.ProviderGone(provider=rp_uuid)
            if response.status_code != 409:
                raise exception.PlacementError(
                    reason=peers.describe(response))
            LOG.debug('Resource provider %(provider)s changed under us '
                      '(attempt %(attempt)d of %(attempts)d): %(detail)s',
                      {'provider': rp_uuid, 'attempt': attempt,
                       'attempts': self.generation_retries,
                       'detail': peers.describe(response)})
        raise exception.PlacementConflict(provider=rp_uuid,
                                attempts=self.generation_retries)


def _edited(aggregates, aggregate_uuid, member):
    """``aggregates`` with ``aggregate_uuid`` added or removed."""
    if member:
        return aggregates | {aggregate_uuid}
    return aggregates - {aggregate_uuid}
