"""``/v1/reservations``: hold one node for one instance."""

import jsonpatch
import pecan
from pecan import rest
from wsme import types as wtypes

from reserveapi import policy
from reserveapi import reservations
from reserveapi.api import expose
from reserveapi.api import types
from reserveapi.api.controllers import link
from reserveapi.api.controllers.v1 import collection
from reserveapi.api.controllers.v1 import fields
from reserveapi.common import exception

PATCHABLE = ('/host', '/state')


class ReservationRequest(wtypes.Base):
    instance_uuid = wtypes.wsattr(types.uuid, mandatory=True)
    host = wtypes.wsattr(types.host_name, mandatory=True)
    project_id = wtypes.StringType(min_length=1, max_length=255)
    candidate_nodes = [wtypes.StringType(min_length=1, max_length=255)]
    request_spec = wtypes.wsattr(types.JsonObject(), mandatory=True)


def _optional(value):
    return None if value is wtypes.Unset else value


def render(reservation):
    return {
        'uuid': reservation.uuid,
        'instance_uuid': reservation.instance_uuid,
        'host': reservation.host,
        'project_id': reservation.project_id,
        'node_uuid': reservation.node_uuid,
        'node_name': reservation.node_name,
        'resource_class': reservation.resource_class,
        'state': reservation.state,
        'created_at': fields.timestamp(reservation.created_at),
        'updated_at': fields.timestamp(reservation.updated_at),
        'expires_at': fields.timestamp(
            reservations.expires_at(reservation)),
        'links': [link.make('v1/reservations/%s' % reservation.uuid)],
    }


def _changes(patch):
    """The ``{'host', 'state'}`` a JSON Patch asks for, or a 400."""
    if not isinstance(patch, list) or not patch:
        raise exception.Invalid(
            reason='the body must be a non-empty JSON Patch list.')
    for operation in patch:
        if not isinstance(operation, dict) or operation.get('op') not in (
                'replace', 'test') or operation.get('path') not in PATCHABLE:
            raise exception.Invalid(
                reason='only "replace" (or "test") of %s can be patched, '
                       'got %s.' % (' and '.join(PATCHABLE), operation))
    return patch


def _new_values(current, patch):
    document = {'host': current.host, 'state': current.state}
    try:
        patched = jsonpatch.JsonPatch(patch).apply(document)
    except jsonpatch.JsonPatchTestFailed as exc:
        raise exception.Conflict(reason='JSON Patch test failed: %s' % exc)
    except (jsonpatch.JsonPatchException,
            jsonpatch.JsonPointerException) as exc:
        raise exception.Invalid(reason='invalid JSON Patch: %s' % exc)
    host = patched['host']
    if not isinstance(host, str) or not 0 < len(host) <= 255:
        raise exception.Invalid(
            reason='host must be a string of 1 to 255 characters.')
    if patched['state'] not in reservations.STATES:
        raise exception.Invalid(reason='state must be one of %s.'
                                % ', '.join(reservations.STATES))
    return {key: value for key, value in patched.items()
            if value != document[key]}


def _check_marker_in_project(marker, project_id):
    """Another project's reservation is no marker for a caller restricted
    to ``project_id``: it is refused exactly as a marker that does not
    exist, or the answer would tell that it exists.
    """
    if marker is None:
        return
    try:
        reservation = reservations.get(marker)
    except exception.ReservationNotFound:
        return  # the listing itself refuses it
    if reservation.project_id != project_id:
        raise exception.Invalid(reason='marker %s does not exist.' % marker)


class ReservationsController(rest.RestController):

    @staticmethod
    def _authorized_reservation(rule, uuid):
        """The reservation, if the caller may act on it.

        Another project's reservation is reported as not found, so that
        its existence does not leak.
        """
        context = pecan.request.context
        policy.authorize(rule, context)
        reservation = reservations.get(uuid)
        try:
            policy.authorize(rule, context,
                             {'project_id': reservation.project_id})
        except exception.Forbidden:
            raise exception.ReservationNotFound(reservation=uuid)
        return reservation

    @expose.expose()
    def get_all(self, host=None, instance_uuid=None, node_uuid=None,
                state=None, project_id=None, limit=None, marker=None,
                sort_key=None, sort_dir=None):
        context = pecan.request.context
        policy.authorize('reserveapi:reservation:list', context)
        try:
            policy.authorize('reserveapi:reservation:list_all', context)
        except exception.Forbidden:
            if not context.project_id:
                # "project_id:%(project_id)s" matched None to None: with
                # no project to restrict the list to, there is none.
                raise
            project_id = context.project_id
            _check_marker_in_project(marker, project_id)
        limit, marker, sort_key, sort_dir = collection.page_args(
            limit, marker, sort_key, sort_dir,
            reservations.SORT_KEYS, 'created_at')
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
    def get_one(self, uuid):
        return render(self._authorized_reservation(
            'reserveapi:reservation:get', uuid))

    @expose.expose(status=201)
    def post(self):
        context = pecan.request.context
        policy.authorize('reserveapi:reservation:create', context)
        body = expose.request_body(ReservationRequest)
        reservation, created = reservations.reserve(
            instance_uuid=body.instance_uuid,
            host=body.host,
            project_id=_optional(body.project_id) or context.project_id,
            request_spec=body.request_spec,
            candidate_nodes=_optional(body.candidate_nodes))
        rendered = render(reservation)
        if not created:
            pecan.response.status = 200
        pecan.response.location = rendered['links'][0]['href']
        return rendered

    @expose.expose()
    def patch(self, uuid):
        current = self._authorized_reservation(
            'reserveapi:reservation:update', uuid)
        try:
            patch = pecan.request.json
        except ValueError:
            raise exception.Invalid(reason='the body is not valid JSON.')
        changes = _new_values(current, _changes(patch))
        return render(reservations.update(current, changes))

    @expose.expose(status=204)
    def delete(self, uuid):
        self._authorized_reservation('reserveapi:reservation:delete', uuid)
        reservations.release(uuid)
