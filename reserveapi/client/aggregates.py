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

"""Client of ``/v1/aggregates``, for nova-api's aggregate hooks.

The service stores every change before it calls Placement and never
fails the caller for Placement being down, so a hook can call these and
move on: the answer says whether Placement already agrees (``synced``)
or the change is queued (``pending``).
"""

import urllib.parse

from reserveapi.client import base


def _path(aggregate_uuid, host=None):
    path = '/v1/aggregates/%s' % aggregate_uuid
    if host is not None:
        path += '/hosts/%s' % urllib.parse.quote(host, safe='')
    return path


class AggregateMirrorClient(base.BaseClient):

    def add_host(self, aggregate_uuid, host, timeout=None):
        return self.request('PUT', _path(aggregate_uuid, host),
                            timeout=timeout)

    def remove_host(self, aggregate_uuid, host, timeout=None):
        return self.request('DELETE', _path(aggregate_uuid, host),
                            timeout=timeout)

    def delete_aggregate(self, aggregate_uuid, timeout=None):
        return self.request('DELETE', _path(aggregate_uuid),
                            timeout=timeout)

    def get(self, aggregate_uuid):
        return self.request('GET', _path(aggregate_uuid))

    def list(self, **query):
        """Every aggregate the mirror knows, following ``next`` links;
        ``query`` takes ``limit``, ``marker``, ``sort_key``, ``sort_dir``.
        """
        return self.pages('/v1/aggregates', 'aggregates', **query)

    def sync(self, aggregates, dry_run=False, prune=False):
        """Compare Placement with ``aggregates`` (``[{"uuid", "hosts"}]``)
        and, unless ``dry_run``, fix it; the report of differences.
        """
        return self.request('POST', '/v1/aggregates/sync', json={
            'aggregates': list(aggregates), 'dry_run': dry_run,
            'prune': prune})
