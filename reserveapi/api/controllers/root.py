"""Version discovery at ``GET /``."""

from pecan import rest

from reserveapi.api import expose
from reserveapi.api.controllers import v1
from reserveapi.api.controllers import versions


class RootController(rest.RestController):

    v1 = v1.V1Controller()

    @expose.expose()
    def get(self):
        return {'versions': [versions.version_document()]}
