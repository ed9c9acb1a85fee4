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

"""Client of ``/v1/reservations`` and ``/v1/capacity``, for nova-compute."""

import urllib.parse

from reserveapi.client import base


class ReservationClient(base.BaseClient):

    def reserve(self, instance_uuid, host, request_spec, project_id=None,
                candidate_nodes=None, shard=None, conductor_group=None):
        """Reserve a node; calling again for the same instance and host
        returns the same reservation, so it is safe to retry.

        ``shard`` and ``conductor_group`` (Ironic's partitions; ``''`` is
        Ironic's default conductor group) limit the match to that
        partition; they need microversion 1.1.
        """
        body = {'instance_uuid': instance_uuid, 'host': host,
                'request_spec': request_spec}
        if project_id is not None:
            body['project_id'] = project_id
        if candidate_nodes is not None:
            body['candidate_nodes'] = list(candidate_nodes)
        partition = _partition(shard, conductor_group)
        if partition:
            self._require(base.PARTITIONS_VERSION, 'reserving in a partition')
            body.update(partition)
        # The service answers a repeated request with the reservation it
        # already made, so a POST lost in transit is safe to send again.
        return self.request('POST', '/v1/reservations', json=body,
                            idempotent=True)

    def get(self, uuid):
        return self.request('GET', '/v1/reservations/%s' % uuid)

    def list(self, **filters):
        """Every reservation matching ``filters``, following ``next``."""
        return self.pages('/v1/reservations', 'reservations', **filters)

    def nodes(self, **filters):
        """Every node of the inventory matching ``filters``, with its
        reservation, following ``next``.
        """
        return self.pages('/v1/nodes', 'nodes', **filters)

    def confirm(self, uuid):
        """Mark the reservation active once the instance is deployed;
        confirming an active reservation changes nothing, so it is retried.
        """
        return self._patch(uuid, '/state', 'active', idempotent=True)

    def take_over(self, uuid, host):
        """Move the reservation to ``host`` (its compute host died)."""
        return self._patch(uuid, '/host', host)

    def release(self, uuid):
        """Release a reservation; True if it existed, False if it was
        already gone (a destroy that is retried must not fail).

        A 5xx (500 included) or a lost connection is retried with
        back-off; if the service still fails, ``ServiceUnavailable`` or
        ``ClientError`` is raised, never swallowed: the node stays held
        until the release succeeds.
        """
        try:
            self.request('DELETE', '/v1/reservations/%s' % uuid)
        except base.NotFound:
            return False
        return True

    def release_instance(self, instance_uuid):
        """Release every reservation of ``instance_uuid``; how many there
        were (0 when already released). Needs no state kept by the caller,
        so it works from a fresh process after a restart.
        """
        released = 0
        for reservation in list(self.list(instance_uuid=instance_uuid)):
            if self.release(reservation['uuid']):
                released += 1
        return released

    def capacity(self, host=None):
        url = '/v1/capacity'
        if host is not None:
            url += '?' + urllib.parse.urlencode({'host': host})
        return self.request('GET', url)['capacity']

    def summary(self, host, shard=None, conductor_group=None):
        """What a compute host reports, in one request whose cost does
        not grow with the inventory: per resource class of the partition
        its total, free, held and held by ``host`` (``capacity``), the
        free nodes' ``traits`` and the partition's ``architectures``.
        Needs microversion 1.2; from 1.6 ``capacity`` also has a row per
        running hold, under the hold's own resource class.
        """
        self._require(base.SUMMARY_VERSION, 'capacity summary')
        query = dict(_partition(shard, conductor_group), host=host)
        return self.request(
            'GET', '/v1/capacity?' + urllib.parse.urlencode(sorted(
                query.items())))

    def candidates(self, request_spec, project_id=None, candidate_nodes=None,
                   shard=None, conductor_group=None, limit=None,
                   explain=True, start=None, end=None):
        """How many nodes a reservation with these arguments could get
        now, per partition, what excluded the others (unless not
        ``explain``, which costs much less), and the first ``limit`` of
        them; nothing is held, so it is retried. Needs microversion 1.3.
        With ``start`` and ``end`` (1.5), also how many nodes a hold over
        that window would be admitted for (``admissible``).
        """
        self._require(base.CANDIDATES_VERSION, 'candidates')
        if start is not None or end is not None:
            self._require(base.HOLDS_VERSION, 'a window of candidates')
        body = dict(_partition(shard, conductor_group),
                    request_spec=request_spec)
        if project_id is not None:
            body['project_id'] = project_id
        if candidate_nodes is not None:
            body['candidate_nodes'] = list(candidate_nodes)
        if limit is not None:
            body['limit'] = limit
        if not explain:
            body['explain'] = False
        body.update((name, base.timestamp(value)) for name, value in (
            ('start', start), ('end', end)) if value is not None)
        return self.request('POST', '/v1/candidates', json=body,
                            idempotent=True)

    def _patch(self, uuid, path, value, idempotent=False):
        return self.request(
            'PATCH', '/v1/reservations/%s' % uuid, idempotent=idempotent,
            json=[{'op': 'replace', 'path': path, 'value': value}])


def _partition(shard, conductor_group):
    return {name: value for name, value in (
        ('shard', shard), ('conductor_group', conductor_group))
        if value is not None}
