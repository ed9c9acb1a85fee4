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

"""The v1 API: its version document and its resources."""

from pecan import rest

from reserveapi.api import expose
from reserveapi.api.controllers import versions
from reserveapi.api.controllers.v1 import aggregates
from reserveapi.api.controllers.v1 import candidates
from reserveapi.api.controllers.v1 import capacity
from reserveapi.api.controllers.v1 import holds
from reserveapi.api.controllers.v1 import nodes
from reserveapi.api.controllers.v1 import reservations


class V1Controller(rest.RestController):

    aggregates = aggregates.AggregatesController()
    candidates = candidates.CandidatesController()
    capacity = capacity.CapacityController()
    holds = holds.HoldsController()
    nodes = nodes.NodesController()
    reservations = reservations.ReservationsController()

    @expose.expose()
    def get(self):
        return {'version': versions.version_document()}
