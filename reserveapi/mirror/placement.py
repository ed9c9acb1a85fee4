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
"""

from oslo_log import log as logging

import reserveapi.conf
from reserveapi.mirror import exception as mirror_exc
from reserveapi.mirror import peer

LOG = logging.getLogger(__name__)
CONF = reserveapi.conf.CONF

PLACEMENT_MICROVERSION = '1.19'
"""Aggregates carry the provider generation from 1.19 on."""


class PlacementClient(peer.PeerClient):
    """Placement calls the mirror needs, from the ``[placement]`` group.

    Every method takes ``timeout`` (seconds, overriding the client's) so the
    API can apply ``[mirror] inline_timeout`` while the worker waits longer.
    """

    group = 'placement'
    service_type = 'placement'
    microversion = PLACEMENT_MICROVERSION
    error = mirror_exc.PlacementError
    unavailable = mirror_exc.PlacementUnavailable

    def __init__(self, timeout=None):
        super().__init__(timeout=timeout)
        self.generation_retries = CONF.mirror.generation_retries

    def providers_named(self, name, timeout=None):
        """Providers whose name is exactly ``name``: uuid, name, generation.

        :raises: PlacementError, PlacementUnavailable
        """
        body = self._get_json('/resource_providers',
                              self._deadline(timeout), params={'name': name})
        return [{'uuid': rp['uuid'], 'name': rp['name'],
                 'generation': rp['generation']}
                for rp in body['resource_providers']]

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
            raise mirror_exc.ProviderGone(provider=rp_uuid)
        if response.status_code != 200:
            raise mirror_exc.PlacementError(reason=peer.describe(response))
        body = response.json()
        return set(body['aggregates']), body['resource_provider_generation']

    def _change(self, rp_uuid, aggregate_uuid, member, deadline):
        """Read, edit only ``aggregate_uuid``, write with the generation.

        A 409 means someone changed the provider between our read and our
        write: read again and re-apply, so their change survives too.
        """
        for attempt in range(1, self.generation_retries + 1):
            current, generation = self._aggregates(rp_uuid, deadline)
            if member:
                wanted = current | {aggregate_uuid}
            else:
                wanted = current - {aggregate_uuid}
            if wanted == current:
                return False
            response = self._request(
                'PUT', self._aggregates_path(rp_uuid), deadline,
                json={'aggregates': sorted(wanted),
                      'resource_provider_generation': generation})
            if response.status_code == 200:
                LOG.info('%(action)s aggregate %(aggregate)s on resource '
                         'provider %(provider)s.',
                         {'action': 'Added' if member else 'Removed',
                          'aggregate': aggregate_uuid,
                          'provider': rp_uuid})
                return True
            if response.status_code == 404:
                raise mirror_exc.ProviderGone(provider=rp_uuid)
            if response.status_code != 409:
                raise mirror_exc.PlacementError(
                    reason=peer.describe(response))
            LOG.debug('Resource provider %(provider)s changed under us '
                      '(attempt %(attempt)d of %(attempts)d): %(detail)s',
                      {'provider': rp_uuid, 'attempt': attempt,
                       'attempts': self.generation_retries,
                       'detail': peer.describe(response)})
        raise mirror_exc.PlacementConflict(provider=rp_uuid,
                                attempts=self.generation_retries)
