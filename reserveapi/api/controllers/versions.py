"""The version document served by ``GET /`` and ``GET /v1``."""

from reserveapi.api import microversion
from reserveapi.api.controllers import link


def version_document():
    return {
        'id': 'v1',
        'status': 'CURRENT',
        'min_version': str(microversion.MIN_VERSION),
        'max_version': str(microversion.MAX_VERSION),
        'links': [link.make('v1/')],
    }
