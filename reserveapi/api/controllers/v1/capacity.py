"""``/v1/capacity``: what each compute host reports to its resource
tracker, per resource class.
"""

import pecan
from pecan import rest

from reserveapi import policy
from reserveapi import reservations
from reserveapi.api import expose
from reserveapi.policies import capacity as capacity_policy


class CapacityController(rest.RestController):

    @expose.expose()
    def get_all(self, host=None):
        policy.authorize(capacity_policy.GET, pecan.request.context)
        body = {'capacity': reservations.get_capacity(host)}
        if host is not None:
            body['host'] = host
        return body
