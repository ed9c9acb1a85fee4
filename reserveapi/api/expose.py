"""The one decorator every controller method uses.

WSME is used for what it is good at, turning a JSON body into typed,
validated values; we call it ourselves instead of through ``wsexpose``
because that swallows exceptions before pecan's error hook can render
them in the API-WG format.
"""

import functools
import inspect

import pecan
import webob.exc
from wsme import exc as wsme_exc
from wsme import types as wsme_types
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
    except ValueError as exc:
        # WSME's list and user types raise this without naming the field.
        field = _rejected_field(body_type, data)
        raise exception.Invalid(reason='%s%s' % (
            'field %s: ' % field if field else '', exc))


def _rejected_field(body_type, data):
    """The first field of ``data`` whose value WSME rejects, or None."""
    for attribute in wsme_types.list_attributes(body_type):
        if attribute.name not in data:
            continue
        try:
            wsme_json.fromjson(attribute.datatype, data[attribute.name])
        except (ValueError, wsme_exc.ClientSideError):
            return attribute.name
    return None


def _query_arguments(signature, controller, path_args, kwargs):
    """The query parameters to pass on; a 404 or 400 if they do not fit.

    pecan also hands over the fields of a JSON body as keyword arguments;
    only the query string's are wanted. Path segments the method does not
    take mean no such resource.
    """
    query = {key: value for key, value in kwargs.items()
             if key in pecan.request.GET}
    unknown = sorted(set(query) - set(signature.parameters))
    if unknown:
        raise exception.Invalid(reason='unknown query parameter(s) %s.'
                                % ', '.join(unknown))
    try:
        signature.bind(controller, *path_args, **query)
    except TypeError:
        raise webob.exc.HTTPNotFound()
    return query


def expose(status=200):
    """Expose a JSON method; ``status`` is its usual success status.

    A method may still set ``pecan.response.status`` itself.
    """

    def decorate(method):
        signature = inspect.signature(method)

        @functools.wraps(method)
        def wrapped(self, *args, **kwargs):
            query = _query_arguments(signature, self, args, kwargs)
            pecan.response.status = status
            result = method(self, *args, **query)
            if result is None and pecan.response.status_int == 204:
                # Returning the response tells pecan the body is done;
                # rendering None would send "null" with a 204.
                return pecan.response
            return result

        return pecan.expose('json', content_type='application/json')(wrapped)

    return decorate
