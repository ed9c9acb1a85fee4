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

"""``/v1/aggregates``: Nova host aggregates mirrored into Placement.

Writes answer 200 when Placement already agrees and 202 when the change
is stored and pending; a Placement failure is never an error here.
"""

import pecan
from pecan import rest
from wsme import types as wtypes

from reserveapi import policy
from reserveapi import rendering
from reserveapi.api import body as body_mod
from reserveapi.api import expose
from reserveapi.api import types
from reserveapi.api.controllers import link
from reserveapi.api.controllers.v1 import collection
from reserveapi.common import states
from reserveapi.mirror import state as mirror_state
from reserveapi.mirror import sync as mirror_sync
from reserveapi.policies import aggregate as aggregate_policy


class SyncRequest(wtypes.Base):
    aggregates = wtypes.wsattr(types.DesiredAggregates(), mandatory=True)
    dry_run = wtypes.wsattr(bool, default=False)
    prune = wtypes.wsattr(bool, default=False)


def _aggregate_uuid(value):
    return body_mod.path_arg(types.uuid, value, 'aggregate_uuid')


def _host(value):
    return body_mod.path_arg(types.host_name, value, 'host')


def _aggregate_link(aggregate_uuid):
    return [link.make('v1/aggregates/%s' % aggregate_uuid)]


def render_host(record):
    return {
        'host': record.host,
        'member': record.member,
        'state': record.state,
        'attempts': record.attempts,
        'last_error': record.last_error,
        'pending_since': rendering.timestamp(record.pending_since),
        'next_attempt_at': rendering.timestamp(record.next_attempt_at),
        'synced_at': rendering.timestamp(record.synced_at),
    }


def render_membership(record):
    return dict(render_host(record), aggregate_uuid=record.aggregate_uuid,
                links=_aggregate_link(record.aggregate_uuid))


def render(aggregate):
    """Desired members, and hosts whose leaving is not yet synced."""
    return {
        'uuid': aggregate.uuid,
        'deleted': aggregate.deleted,
        'state': states.SYNCED if aggregate.synced else states.PENDING,
        'hosts': [render_host(row) for row in aggregate.hosts
                  if row.member or not row.synced],
        'created_at': rendering.timestamp(aggregate.created_at),
        'updated_at': rendering.timestamp(aggregate.updated_at),
        'links': _aggregate_link(aggregate.uuid),
    }


def render_report(report):
    return {
        'dry_run': report.dry_run,
        'prune': report.prune,
        'in_sync': report.in_sync,
        'differences': [{
            'aggregate_uuid': item.aggregate_uuid,
            'host': item.host,
            'provider_uuid': item.provider_uuid,
            'difference': item.difference,
            'action': item.action,
            'detail': item.detail,
        } for item in report.differences],
    }


def _answer(body, synced):
    pecan.response.status = 200 if synced else 202
    return body


class AggregateHostsController(rest.RestController):
    """``/v1/aggregates/{aggregate_uuid}/hosts/{host}``."""

    @expose.expose()
    def put(self, aggregate_uuid, host):
        policy.authorize(aggregate_policy.ADD_HOST,
                         pecan.request.context)
        record = mirror_state.join(_aggregate_uuid(aggregate_uuid),
                                   _host(host))
        return _answer(render_membership(record), record.synced)

    @expose.expose()
    def delete(self, aggregate_uuid, host):
        policy.authorize(aggregate_policy.REMOVE_HOST,
                         pecan.request.context)
        record = mirror_state.leave(_aggregate_uuid(aggregate_uuid),
                                    _host(host))
        return _answer(render_membership(record), record.synced)


class AggregatesController(rest.RestController):

    hosts = AggregateHostsController()
    _custom_actions = {'sync': ['POST']}

    @expose.expose(query=collection.page_query(mirror_state.SORT_KEYS))
    def get_all(self, limit=None, marker=None, sort_key=None,
                sort_dir=None):
        policy.authorize(aggregate_policy.LIST, pecan.request.context)
        limit, marker, sort_key, sort_dir = collection.page_args(
            limit, marker, sort_key, sort_dir, 'uuid')
        items = mirror_state.list_aggregates(limit + 1, marker, sort_key,
                                             sort_dir)
        return collection.render(
            'aggregates', [render(item) for item in items], limit,
            'v1/aggregates', lambda item: item['uuid'])

    @expose.expose()
    def get_one(self, aggregate_uuid):
        policy.authorize(aggregate_policy.GET, pecan.request.context)
        return render(mirror_state.get_aggregate(
            _aggregate_uuid(aggregate_uuid)))

    @expose.expose()
    def delete(self, aggregate_uuid):
        policy.authorize(aggregate_policy.DELETE,
                         pecan.request.context)
        aggregate = mirror_state.delete_aggregate(
            _aggregate_uuid(aggregate_uuid))
        return _answer(render(aggregate), aggregate.synced)

    @expose.expose(body=True)
    def sync(self):
        policy.authorize(aggregate_policy.SYNC, pecan.request.context)
        body = body_mod.request_body(SyncRequest)
        report = mirror_sync.sync(body.aggregates, dry_run=body.dry_run,
                                prune=body.prune, inline=True)
        return _answer(render_report(report), not report.pending)
