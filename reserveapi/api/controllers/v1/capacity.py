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

"""``/v1/capacity``: what each compute host reports to its resource
tracker, per resource class.
"""

import pecan
from pecan import rest

from reserveapi import policy
from reserveapi import reservations
from reserveapi.api import expose
from reserveapi.api import microversion
from reserveapi.api import types
from reserveapi.policies import capacity as capacity_policy


class CapacityController(rest.RestController):

    @expose.expose(query={'host': types.host_name, 'shard': types.name,
                          'conductor_group': types.conductor_group})
    def get_all(self, host=None, shard=None, conductor_group=None):
        policy.authorize(capacity_policy.GET, pecan.request.context)
        version = pecan.request.version
        microversion.require_for_query(
            version, microversion.CAPACITY_SUMMARY, shard=shard,
            conductor_group=conductor_group)
        summary = version >= microversion.CAPACITY_SUMMARY
        body = reservations.get_capacity(
            host, shard, conductor_group, labels=summary,
            promised=version >= microversion.HOLDS,
            holds=version >= microversion.PINS)
        for name, value in (('host', host), ('shard', shard),
                            ('conductor_group', conductor_group)):
            if value is not None:
                body[name] = value
        return body
