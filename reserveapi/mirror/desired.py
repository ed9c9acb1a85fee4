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

from reserveapi.common import exception
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

    :raises: exception.FieldError (a ValueError) naming where the
        document is wrong, e.g. ``[0].hosts[2]``; UUIDs come back
        canonical.
    """
    if not isinstance(aggregates, list):
        raise exception.FieldError(
            (), 'must be a list of {"uuid": ..., "hosts": [...]}')
    desired = {}
    for index, item in enumerate(aggregates):
        if not isinstance(item, dict) or set(item) != {'uuid', 'hosts'}:
            raise exception.FieldError(
                (index,), 'must be an object with exactly "uuid" and '
                '"hosts"')
        try:
            aggregate_uuid = validators.canonical_uuid(item['uuid'])
        except ValueError as exc:
            raise exception.FieldError((index, 'uuid'), str(exc))
        if aggregate_uuid in desired:
            raise exception.FieldError(
                (index, 'uuid'), 'lists aggregate %s a second time'
                % aggregate_uuid)
        desired[aggregate_uuid] = _hosts(index, item['hosts'])
    return DesiredState(desired)


def _hosts(index, hosts):
    if not isinstance(hosts, list):
        raise exception.FieldError((index, 'hosts'),
                                    'must be a list of host names')
    names = set()
    for position, host in enumerate(hosts):
        try:
            names.add(validators.host_name(host))
        except ValueError as exc:
            raise exception.FieldError((index, 'hosts', position),
                                        str(exc))
    return frozenset(names)


def recorded(table):
    """The desired state our database holds: its live aggregates'
    members, from MirrorAggregateRecords.
    """
    return DesiredState(
        {aggregate.uuid: frozenset(row.host for row in aggregate.hosts
                                   if row.member)
         for aggregate in table if not aggregate.deleted},
        recorded=True)
