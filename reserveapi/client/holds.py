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

"""Client of ``/v1/holds`` (microversion 1.5), for operators: nodes
promised to a project from a start to an end; from 1.6, what it pinned
and what becomes of its instances at its end."""

from reserveapi.client import base


def _path(uuid=None):
    return '/v1/holds' if uuid is None else '/v1/holds/%s' % uuid


class HoldClient(base.BaseClient):

    def create(self, project_id, amount, request_spec, start, end,
               shard=None, conductor_group=None, at_end=None):
        """Hold ``amount`` nodes matching ``request_spec`` for
        ``project_id`` from ``start`` to ``end``; the service admits it
        only if it fits beside every other hold (409
        ``reserveapi.hold_not_admitted`` otherwise). ``at_end``
        (``keep``, the service's default, or ``delete``) says what
        becomes of its instances at its end; it needs microversion 1.6.
        Not retried: a repeated request would be a second hold.
        """
        self._require(base.HOLDS_VERSION, 'holds')
        if at_end is not None:
            self._require(base.PINS_VERSION, "a hold's at_end")
        body = {'project_id': project_id, 'amount': amount,
                'request_spec': request_spec, 'start': base.timestamp(start),
                'end': base.timestamp(end)}
        body.update({name: value for name, value in (
            ('shard', shard), ('conductor_group', conductor_group),
            ('at_end', at_end)) if value is not None})
        return self.request('POST', _path(), json=body)

    def list(self, **filters):
        """Every hold matching ``filters`` (``project_id``,
        ``resource_class``, ``limit``, ``marker``, ``sort_key``,
        ``sort_dir``), following ``next``."""
        self._require(base.HOLDS_VERSION, 'holds')
        return self.pages(_path(), 'holds', **filters)

    def get(self, uuid):
        self._require(base.HOLDS_VERSION, 'holds')
        return self.request('GET', _path(uuid))

    def update(self, uuid, end=None, amount=None):
        """Move the hold's end or change its amount; both are absolute
        values, so the call is retried."""
        self._require(base.HOLDS_VERSION, 'holds')
        body = {}
        if end is not None:
            body['end'] = base.timestamp(end)
        if amount is not None:
            body['amount'] = amount
        return self.request('PATCH', _path(uuid), json=body,
                            idempotent=True)

    def cancel(self, uuid):
        """Cancel the hold: its nodes are free at once. Cancelling a
        cancelled hold changes nothing, so the call is retried."""
        self._require(base.HOLDS_VERSION, 'holds')
        self.request('DELETE', _path(uuid))
