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

"""``/v1/reservations``: hold one node for one instance."""

import functools

import pecan
from pecan import rest
from wsme import types as wtypes

from reserveapi import policy
from reserveapi import rendering
from reserveapi import reservations
from reserveapi.api import body as body_mod
from reserveapi.api import expose
from reserveapi.api import microversion
from reserveapi.api import types
from reserveapi.api.controllers import link
from reserveapi.api.controllers.v1 import collection
from reserveapi.common import exception
from reserveapi.common import states
from reserveapi.common import validators
from reserveapi.policies import reservation as reservation_policy

PATCHABLE = ('/host', '/state')


class ReservationRequest(wtypes.Base):
    instance_uuid = wtypes.wsattr(types.uuid, mandatory=True)
    host = wtypes.wsattr(types.host_name, mandatory=True)
    project_id = types.optional_name
    candidate_nodes = [types.node_ident]
    request_spec = wtypes.wsattr(types.RequestSpec, mandatory=True)


class PartitionedReservationRequest(ReservationRequest):
    """1.1: only nodes of this Ironic partition (nova-compute's own
    ``[ironic] conductor_group`` and ``shard``)."""

    conductor_group = types.conductor_group
    shard = types.optional_name


def _optional(value):
    return None if value is wtypes.Unset else value


def render(reservation):
    """The reservation as its events carry it, with what only the API
    shows."""
    return rendering.reservation(
        reservation,
        expires_at=rendering.timestamp(reservations.expires_at(reservation)),
        links=[link.make('v1/reservations/%s' % reservation.uuid)])


def _new_values(current, patch):
    """The ``{'host', 'state'}`` changes ``patch`` makes to ``current``.

    The patch's shape is checked (``types.JsonPatch``): each operation
    replaces or tests ``/host`` or ``/state`` with a value, in order, as
    RFC 6902 applies them.
    """
    document = {'host': current.host, 'state': current.state}
    patched = dict(document)
    for index, operation in enumerate(patch):
        key = operation['path'][1:]
        value = operation['value']
        if operation['op'] == 'replace':
            patched[key] = value
        elif patched[key] != value:
            raise exception.Conflict(
                reason='JSON Patch operation [%d] tests that %s is %s, but '
                       'it is %s.' % (index, key, validators.describe(value),
                                      validators.describe(patched[key])))
    try:
        validators.host_name(patched['host'])
    except ValueError as exc:
        raise exception.Invalid(reason='host %s.' % exc)
    return {key: value for key, value in patched.items()
            if value != document[key]}


class ReservationsController(rest.RestController):

    @staticmethod
    def _authorized_uuid(rule, reservation_uuid):
        """The path's reservation uuid, once the caller may act on some
        reservation by ``rule``."""
        policy.authorize(rule, pecan.request.context)
        return body_mod.path_arg(types.uuid, reservation_uuid,
                                 'reservation_uuid')

    @staticmethod
    def _authorize_on(rule, reservation):
        """Whether the caller may act on ``reservation`` by ``rule``.

        Another project's reservation is reported as not found, so that
        its existence does not leak.
        """
        try:
            policy.authorize(rule, pecan.request.context,
                             {'project_id': reservation.project_id})
        except exception.Forbidden:
            raise exception.ReservationNotFound(reservation=reservation.uuid)

    def _authorized_reservation(self, rule, reservation_uuid):
        """The reservation, if the caller may act on it."""
        reservation = reservations.get_reservation(
            self._authorized_uuid(rule, reservation_uuid))
        self._authorize_on(rule, reservation)
        return reservation

    @expose.expose(query=dict(
        collection.page_query(reservations.SORT_KEYS),
        host=types.host_name, instance_uuid=types.uuid, node_uuid=types.uuid,
        state=types.OneOf(states.RESERVATION_STATES),
        project_id=types.name))
    def get_all(self, host=None, instance_uuid=None, node_uuid=None,
                state=None, project_id=None, limit=None, marker=None,
                sort_key=None, sort_dir=None):
        context = pecan.request.context
        policy.authorize(reservation_policy.LIST, context)
        project_id = policy.listed_project(reservation_policy.LIST_ALL,
                                           context, project_id)
        limit, marker, sort_key, sort_dir = collection.page_args(
            limit, marker, sort_key, sort_dir, 'created_at')
        filters = {key: value for key, value in (
            ('host', host), ('instance_uuid', instance_uuid),
            ('node_uuid', node_uuid), ('state', state),
            ('project_id', project_id)) if value is not None}
        items = reservations.list_reservations(
            filters, limit + 1, marker, sort_key, sort_dir)
        return collection.render(
            'reservations', [render(item) for item in items], limit,
            'v1/reservations', lambda item: item['uuid'])

    @expose.expose()
    def get_one(self, reservation_uuid):
        return render(self._authorized_reservation(
            reservation_policy.GET, reservation_uuid))

    @expose.expose(status=201, body=True)
    def post(self):
        context = pecan.request.context
        policy.authorize(reservation_policy.CREATE, context)
        partitions = pecan.request.version >= microversion.PARTITIONS
        try:
            body = body_mod.request_body(
                PartitionedReservationRequest if partitions
                else ReservationRequest)
        except exception.Invalid as error:
            reservations.count_refused(error)
            raise
        reservation, created = reservations.reserve(
            instance_uuid=body.instance_uuid,
            host=body.host,
            project_id=_optional(body.project_id) or context.project_id,
            request_spec=types.to_plain(body.request_spec),
            candidate_nodes=_optional(body.candidate_nodes),
            conductor_group=_optional(getattr(body, 'conductor_group',
                                              None)),
            shard=_optional(getattr(body, 'shard', None)))
        rendered = render(reservation)
        if not created:
            pecan.response.status = 200
        pecan.response.location = rendered['links'][0]['href']
        return rendered

    @expose.expose(body=True, media_types=(
        'application/json', body_mod.JSON_PATCH_MEDIA_TYPE))
    def patch(self, reservation_uuid):
        current = self._authorized_reservation(
            reservation_policy.UPDATE, reservation_uuid)
        patch = body_mod.request_body(types.JsonPatch(PATCHABLE))
        changes = _new_values(current, patch)
        return render(reservations.update(current, changes))

    @expose.expose(status=204)
    def delete(self, reservation_uuid):
        rule = reservation_policy.DELETE
        # Authorized on the reservation as read in the transaction that
        # deletes it: one transaction, not a read and then a delete.
        reservations.release(self._authorized_uuid(rule, reservation_uuid),
                             functools.partial(self._authorize_on, rule))
