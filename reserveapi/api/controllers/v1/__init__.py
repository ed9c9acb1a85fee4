"""The v1 API: its version document and its resources."""

from pecan import rest

from reserveapi.api import expose
from reserveapi.api.controllers import versions


class V1Controller(rest.RestController):

    @expose.expose()
    def get(self):
        return {'version': versions.version_document()}
