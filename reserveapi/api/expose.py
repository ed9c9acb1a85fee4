"""The one decorator every controller method uses.

WSME is used for what it is good at, turning a JSON body into typed,
validated values; we call it ourselves instead of through ``wsexpose``
because that swallows exceptions before pecan's error hook can render
them in the API-WG format.
"""

import functools

import pecan
from wsme import exc as wsme_exc
from wsme.rest import json as wsme_json

from reserveapi.common import exception


def request_body(body_type):
    """The JSON body as a validated ``body_type``, or a 400."""
    try:
        data = pecan.request.json
    except ValueError:
        raise exception.Invalid(reason='the request body is not valid JSON.')
    if not isinstance(data, dict):
        raise exception.Invalid(reason='the request body must be an object.')
    try:
        return wsme_json.fromjson(body_type, data)
    except wsme_exc.UnknownAttribute as exc:
        raise exception.Invalid(
            reason='unknown field(s) %s.' % ', '.join(sorted(exc.attributes)))
    except wsme_exc.ClientSideError as exc:
        raise exception.Invalid(reason=exc.faultstring)


def expose(status=200):
    """Expose a JSON method; ``status`` is its usual success status.

    A method may still set ``pecan.response.status`` itself.
    """

    def decorate(method):
        @functools.wraps(method)
        def wrapped(*args, **kwargs):
            # No named "self" here: pecan then reads the argument list of
            # the wrapped method, and routes path segments accordingly.
            pecan.response.status = status
            return method(*args, **kwargs)

        return pecan.expose('json', content_type='application/json')(wrapped)

    return decorate
