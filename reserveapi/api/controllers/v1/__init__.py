"""The v1 API: its version document and its resources."""

from pecan import rest

from reserveapi.api import expose
from reserveapi.api.controllers import versions
from reserveapi.api.controllers.v1 import aggregates
from reserveapi.api.controllers.v1 import capacity
from reserveapi.api.controllers.v1 import nodes
from reserveapi.api.controllers.v1 import reservations


class V1Controller(rest.RestController):

    aggregates = aggregates.AggregatesController()
    capacity = capacity.CapacityController()
    nodes = nodes.NodesController()
    reservations = reservations.ReservationsController()

    @expose.expose()
    def get(self):
        return {'version': versions.version_document()}
