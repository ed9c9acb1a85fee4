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

"""``/v1/holds``: promise a project nodes matching a request spec from
a start to an end (microversion 1.5); from 1.6, what the hold pinned
and what happens at its end."""

import pecan
from pecan import rest
from wsme import types as wtypes

from reserveapi import pinning
from reserveapi import policy
from reserveapi import rendering
from reserveapi.api import body as body_mod
from reserveapi.api import expose
from reserveapi.api import microversion
from reserveapi.api import types
from reserveapi.api.controllers import link
from reserveapi.api.controllers.v1 import collection
from reserveapi.common import exception
from reserveapi.holds import admission
from reserveapi.policies import hold as hold_policy

SORT_KEYS = {'created_at': 'created_at', 'start': 'start_at',
             'end': 'end_at', 'uuid': 'uuid'}
"""A list's sort keys, named as a hold shows its fields, to the
domain's."""


class HoldRequest(wtypes.Base):
    project_id = wtypes.wsattr(types.name, mandatory=True)
    amount = wtypes.wsattr(types.amount, mandatory=True)
    request_spec = wtypes.wsattr(types.RequestSpec, mandatory=True)
    start = wtypes.wsattr(types.timestamp, mandatory=True)
    end = wtypes.wsattr(types.timestamp, mandatory=True)
    conductor_group = types.conductor_group
    shard = types.optional_name


class PinnedHoldRequest(HoldRequest):
    """From microversion 1.6: what becomes of the hold's instances at
    its end."""

    at_end = wtypes.wsattr(types.OneOf(admission.AT_END), default='keep')


class HoldUpdate(wtypes.Base):
    """What may change once a hold is admitted: its end and amount."""

    end = types.timestamp
    amount = types.amount


def _optional(value):
    return None if value is wtypes.Unset else value


PINS_FIELDS = ('at_end', 'reclaimed', 'shortfall', 'flavor_id')
"""The record's fields an older client does not know (before 1.6)."""
OLDER_STATES = {admission.DEGRADED: admission.ACTIVE,
                admission.RECLAIMED: admission.ACTIVE}
"""States new in 1.6, as an older client knows them."""


def render(hold, version, usage=None):
    """The hold as its events show it (rendering.hold), then what it
    has pinned and its links, from microversion 1.6 with ``usage``
    (admission.usage of it); before, only what 1.5 showed, so that an
    older client meets no field or state it does not know.
    """
    links = [link.make('v1/holds/%s' % hold.uuid)]
    state = admission.state(hold)
    if version < microversion.PINS:
        body = rendering.hold(hold, OLDER_STATES.get(state, state),
                              links=links)
        for name in PINS_FIELDS:
            del body[name]
        return body
    used = usage[hold.uuid]
    return rendering.hold(
        hold, state,
        boot_resource_class=admission.boot_resource_class(hold.uuid),
        pinned=used.pinned, in_use=used.in_use, links=links)


def _rendered(holds):
    """Each of ``holds`` rendered at the request's microversion, their
    usage read once for all of them."""
    version = pecan.request.version
    usage = (admission.usage(holds) if version >= microversion.PINS
             else None)
    return [render(hold, version, usage) for hold in holds]


def _rendered_one(hold):
    return _rendered([hold])[0]


class HoldsController(rest.RestController):

    @staticmethod
    def _authorized_hold(rule, hold_uuid):
        """The hold, if the caller may act on it by ``rule``.

        Another project's hold is reported as not found, so that its
        existence does not leak.
        """
        context = pecan.request.context
        policy.authorize(rule, context)
        hold = admission.get_hold(
            body_mod.path_arg(types.uuid, hold_uuid, 'hold_uuid'))
        try:
            policy.authorize(rule, context, {'project_id': hold.project_id})
        except exception.Forbidden:
            raise exception.HoldNotFound(hold=hold.uuid)
        return hold

    @expose.expose(min_version=microversion.HOLDS, query=dict(
        collection.page_query(tuple(SORT_KEYS)), project_id=types.name,
        resource_class=types.name))
    def get_all(self, project_id=None, resource_class=None, limit=None,
                marker=None, sort_key=None, sort_dir=None):
        context = pecan.request.context
        policy.authorize(hold_policy.LIST, context)
        project_id = policy.listed_project(hold_policy.LIST_ALL, context,
                                           project_id)
        limit, marker, sort_key, sort_dir = collection.page_args(
            limit, marker, sort_key, sort_dir, 'created_at')
        filters = {key: value for key, value in (
            ('project_id', project_id), ('resource_class', resource_class))
            if value is not None}
        items = admission.list_holds(filters, limit + 1, marker,
                                     SORT_KEYS[sort_key], sort_dir)
        return collection.render('holds', _rendered(items), limit,
                                 'v1/holds', lambda item: item['uuid'])

    @expose.expose(min_version=microversion.HOLDS)
    def get_one(self, hold_uuid):
        return _rendered_one(self._authorized_hold(hold_policy.GET,
                                                   hold_uuid))

    @expose.expose(status=201, body=True, min_version=microversion.HOLDS)
    def post(self):
        context = pecan.request.context
        policy.authorize(hold_policy.CREATE, context)
        pins = pecan.request.version >= microversion.PINS
        body = body_mod.request_body(PinnedHoldRequest if pins
                                     else HoldRequest)
        # Checked again on the project the hold is for, so that a rule
        # naming the project (a manager's own) cannot hold for another.
        policy.authorize(hold_policy.CREATE, context,
                         {'project_id': body.project_id})
        hold = admission.create_hold(
            project_id=body.project_id, amount=body.amount,
            request_spec=types.to_plain(body.request_spec),
            start=body.start, end=body.end,
            shard=_optional(body.shard),
            conductor_group=_optional(body.conductor_group),
            at_end=body.at_end if pins else 'keep')
        rendered = _rendered_one(hold)
        pecan.response.location = rendered['links'][0]['href']
        return rendered

    @expose.expose(body=True, min_version=microversion.HOLDS)
    def patch(self, hold_uuid):
        current = self._authorized_hold(hold_policy.UPDATE, hold_uuid)
        body = body_mod.request_body(HoldUpdate)
        end, amount = _optional(body.end), _optional(body.amount)
        if end is None and amount is None:
            raise exception.Invalid(reason='the body is missing both end '
                                    'and amount: give either, or both.')
        return _rendered_one(admission.update_hold(current.uuid, end=end,
                                                   amount=amount))

    @expose.expose(status=204, min_version=microversion.HOLDS)
    def delete(self, hold_uuid):
        # Its pins are freed now, not at the worker's next round.
        pinning.cancel_hold(
            self._authorized_hold(hold_policy.CANCEL, hold_uuid).uuid)
