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
