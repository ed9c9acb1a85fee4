"""``/v1/capacity``: what each compute host reports to its resource
tracker, per resource class.
"""

import pecan
from pecan import rest

from reserveapi import policy
from reserveapi import reservations
from reserveapi.api import expose

_COUNTS = ('total', 'available', 'reserved', 'memory_mb', 'vcpus',
           'local_gb', 'reserved_by_host')


class CapacityController(rest.RestController):

    @expose.expose()
    def get_all(self, host=None):
        policy.authorize('reserveapi:capacity:get', pecan.request.context)
        rows = reservations.capacity(host)
        body = {'capacity': [
            dict({'resource_class': row['resource_class']},
                 **{key: int(row[key] or 0) for key in _COUNTS
                    if key in row})
            for row in rows]}
        if host is not None:
            body['host'] = host
        return body
