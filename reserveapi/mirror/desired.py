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

"""The desired state of the aggregates we mirror.

``POST /v1/aggregates/sync`` and ``reserveapi-manage sync-aggregates
--file`` take the same document, ``[{"uuid": ..., "hosts": [...]}]``;
its structural rules live here, once. Pure: the callers read it.
"""

import dataclasses
import json

from reserveapi.common import validators


@dataclasses.dataclass(frozen=True)
class DesiredState:
    """Aggregate UUID → frozenset of host names, for every aggregate.

    ``recorded`` when it was read from our database, so that fixing it
    must not store it again, only requeue rows that were read.
    """

    hosts: dict
    recorded: bool = False


def parse(aggregates):
    """A full desired state from ``[{"uuid": ..., "hosts": [...]}]``.

    :raises: ValueError naming what is wrong; UUIDs come back canonical.
    """
    if not isinstance(aggregates, list):
        raise ValueError('must be a list of {"uuid": ..., "hosts": [...]}')
    desired = {}
    for item in aggregates:
        if not isinstance(item, dict) or set(item) != {'uuid', 'hosts'}:
            raise ValueError('each aggregate must be an object with exactly '
                             '"uuid" and "hosts", got %s' % json.dumps(item))
        try:
            aggregate_uuid = validators.canonical_uuid(item['uuid'])
        except ValueError:
            raise ValueError('%s is not an aggregate UUID'
                             % json.dumps(item['uuid']))
        if aggregate_uuid in desired:
            raise ValueError('aggregate %s is listed twice' % aggregate_uuid)
        desired[aggregate_uuid] = _hosts(aggregate_uuid, item['hosts'])
    return DesiredState(desired)


def _hosts(aggregate_uuid, hosts):
    try:
        if not isinstance(hosts, list):
            raise ValueError()
        return frozenset(validators.host_name(host) for host in hosts)
    except ValueError:
        raise ValueError('hosts of aggregate %s must be a list of names of '
                         '1 to %d characters' % (
                             aggregate_uuid, validators.HOST_NAME_MAX_LENGTH))


def recorded(table):
    """The desired state our database holds: its live aggregates'
    members, from MirrorAggregateRecords.
    """
    return DesiredState(
        {aggregate.uuid: frozenset(row.host for row in aggregate.hosts
                                   if row.member)
         for aggregate in table if not aggregate.deleted},
        recorded=True)
