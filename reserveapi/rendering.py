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

"""A reservation, a hold, and a timestamp, as the API's bodies and the
events' payloads all show them, rendered once so that they cannot drift
apart.

Pure: the API (which may not import the notifications) and the
notifications (which may import no other layer) both import it.
"""

import datetime


def timestamp(value):
    """ISO 8601 in UTC (the database keeps naive UTC), or None."""
    if value is None:
        return None
    return value.replace(tzinfo=datetime.timezone.utc).isoformat()


def reservation(record, **extra):
    """A reservation record's fields, then ``extra``.

    What only the API shows it adds as ``extra``: ``expires_at`` (the
    domain's reckoning) and ``links`` (built from the request's URL, which
    an event sent by the worker or ``reserveapi-manage`` has not); an
    event adds what it is about, such as ``previous_host``.
    """
    return {
        'uuid': record.uuid,
        'instance_uuid': record.instance_uuid,
        'host': record.host,
        'project_id': record.project_id,
        'node_uuid': record.node_uuid,
        'node_name': record.node_name,
        'resource_class': record.resource_class,
        'state': record.state,
        'created_at': timestamp(record.created_at),
        'updated_at': timestamp(record.updated_at),
        **extra,
    }


def hold(record, state, **extra):
    """A hold record's fields, its ``state``, then ``extra``.

    ``state`` is the domain's reckoning (holds/admission.py's
    ``state()``), which its callers pass in: this module imports no
    layer. What only the API shows it adds as ``extra``: ``links``; an
    event adds what it is about, such as ``previous_end``.
    """
    return {
        'uuid': record.uuid,
        'project_id': record.project_id,
        'amount': record.amount,
        'request_spec': record.request_spec,
        'resource_class': record.resource_class,
        'shard': record.shard,
        'conductor_group': record.conductor_group,
        'start': timestamp(record.start_at),
        'end': timestamp(record.end_at),
        'padding': record.padding,
        'state': state,
        'created_at': timestamp(record.created_at),
        'updated_at': timestamp(record.updated_at),
        'cancelled_at': timestamp(record.cancelled_at),
        'at_end': record.at_end,
        'reclaimed': record.reclaimed,
        'shortfall': record.shortfall,
        'flavor_id': record.flavor_id,
        **extra,
    }
