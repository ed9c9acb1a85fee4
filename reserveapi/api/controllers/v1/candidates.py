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

"""``/v1/candidates``: how many nodes a reservation with a request spec
could get now, and why the others are excluded; nothing is held.
"""

import pecan
from pecan import rest
from wsme import types as wtypes

from reserveapi import policy
from reserveapi import reservations
from reserveapi.api import body as body_mod
from reserveapi.api import expose
from reserveapi.api import microversion
from reserveapi.api import types
from reserveapi.api.controllers import link
from reserveapi.common import exception
import reserveapi.conf
from reserveapi.policies import candidate as candidate_policy

CONF = reserveapi.conf.CONF


class CandidatesRequest(wtypes.Base):
    """A reservation's body without ``instance_uuid`` and ``host``; how
    many nodes to name, and whether to count what excluded the others."""

    project_id = types.optional_name
    candidate_nodes = [types.node_ident]
    request_spec = wtypes.wsattr(types.RequestSpec, mandatory=True)
    conductor_group = types.conductor_group
    shard = types.optional_name
    limit = types.Count()
    explain = wtypes.wsattr(bool, default=True)


class WindowedCandidatesRequest(CandidatesRequest):
    """From microversion 1.5: a window too, to ask how many nodes a hold
    over it would be admitted for."""

    start = types.timestamp
    end = types.timestamp


def _optional(value):
    return None if value is wtypes.Unset else value


def _project(context, requested):
    """``(project_id, usable_by)``: the project the nodes are matched for
    (the caller's by default, as for a reservation), and, for a caller
    who may not see every project's nodes, the one whose nodes it counts.

    :raises: Forbidden when such a caller asks for another project, or
        has none.
    """
    project_id = requested or context.project_id
    try:
        policy.authorize(candidate_policy.LIST_ALL, context)
        return project_id, None
    except exception.Forbidden:
        if not context.project_id or project_id != context.project_id:
            raise
        return project_id, context.project_id


def _window(body):
    """``(start, end)`` when the body gives both, None when neither.

    :raises: Invalid for one without the other
    """
    start, end = _optional(body.start), _optional(body.end)
    if (start is None) != (end is None):
        raise exception.Invalid(reason='start and end go together: give '
                                'both, or neither.')
    return None if start is None else (start, end)


def render(candidates, explain, version):
    body = {'count': candidates.count}
    if version >= microversion.HOLDS:
        body['promised'] = candidates.promised
    if candidates.admissible is not None:
        body['admissible'] = candidates.admissible
    if explain:
        body['total'] = candidates.total
    body['by_partition'] = [
        {'shard': shard, 'conductor_group': group, 'count': count}
        for (shard, group), count in candidates.by_partition.items()]
    if explain:
        body['excluded'] = [
            {'criterion': exclusion.criterion, 'item': exclusion.item,
             'count': exclusion.count, 'reason': exclusion.reason,
             'values': [{'value': value, 'count': count}
                        for value, count in exclusion.values]}
            for exclusion in candidates.excluded]
    body['nodes'] = [{'uuid': node.uuid, 'name': node.name,
                      'links': [link.make('v1/nodes/%s' % node.uuid)]}
                     for node in candidates.nodes]
    return body


class CandidatesController(rest.RestController):

    @expose.expose(body=True, min_version=microversion.CANDIDATES)
    def post(self):
        context = pecan.request.context
        policy.authorize(candidate_policy.LIST, context)
        windowed = pecan.request.version >= microversion.HOLDS
        body = body_mod.request_body(
            WindowedCandidatesRequest if windowed else CandidatesRequest)
        window = _window(body) if windowed else None
        project_id, usable_by = _project(context,
                                         _optional(body.project_id))
        limit = _optional(body.limit)
        return render(reservations.candidates(
            project_id=project_id,
            request_spec=types.to_plain(body.request_spec),
            candidate_nodes=_optional(body.candidate_nodes),
            conductor_group=_optional(body.conductor_group),
            shard=_optional(body.shard),
            limit=(reservations.CANDIDATES_SHOWN if limit is None
                   else min(limit, CONF.api.max_limit)),
            usable_by=usable_by, explain=body.explain, window=window),
            body.explain,
            pecan.request.version)
