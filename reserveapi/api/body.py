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

"""Request bodies and path parameters, validated by their WSME types.

One JSON parser and one converter serve every resource. The converter
walks the WSME type definitions itself rather than calling WSME's
``fromjson``, which accepts ``"8"`` or ``1.5`` for an integer, lets any
value through a text field and cannot say which nested field it
rejected; the types and their validators are still WSME's.
"""

import pecan
from wsme import types as wtypes
from wsme.rest import json as wsme_json

from reserveapi.common import exception


class _BodyError(Exception):
    """A rejected value and where it is: a tuple of keys and indexes."""

    def __init__(self, path, reason):
        super().__init__(reason)
        self.path = path
        self.reason = reason


def json_body():
    """The request body as parsed JSON, or a 400."""
    try:
        return pecan.request.json
    except ValueError:
        raise exception.Invalid(reason='the request body is not valid JSON.')


def request_body(datatype):
    """The JSON body converted to ``datatype``, or a 400 naming the field.

    :raises: Invalid, or what the type declares for its own fields (the
        request spec raises InvalidRequestSpec).
    """
    return from_json(datatype, json_body())


def from_json(datatype, data):
    """``data`` (parsed JSON) converted to ``datatype``.

    :raises: as request_body().
    """
    try:
        return convert(datatype, data)
    except _BodyError as error:
        if not error.path:
            raise exception.Invalid(reason='the request body %s.'
                                    % error.reason)
        raise exception.Invalid(reason='field %s: %s.' % (
            dotted(error.path), error.reason))


def path_arg(datatype, value, name):
    """A path parameter validated by ``datatype``, or a 400 naming it."""
    try:
        return datatype.validate(value)
    except ValueError as exc:
        raise exception.Invalid(reason='%s %s.' % (name, exc))


def dotted(path):
    """``('image', 'properties')`` → ``image.properties``; ``[3]`` for an
    index.
    """
    text = ''
    for key in path:
        text += '[%d]' % key if isinstance(key, int) else (
            '.%s' % key if text else key)
    return text


def convert(datatype, value, path=()):
    """``value`` (parsed JSON) as ``datatype``; raises _BodyError."""
    if wtypes.iscomplex(datatype):
        return _complex(datatype, value, path)
    if isinstance(datatype, wtypes.ArrayType):
        if value is None:
            return None
        if not isinstance(value, list):
            raise _BodyError(path, 'must be a list')
        return [convert(datatype.item_type, item, path + (index,))
                for index, item in enumerate(value)]
    if isinstance(datatype, wtypes.DictType):
        return _dict(datatype, value, path)
    try:
        if wtypes.isusertype(datatype):
            return datatype.validate(value)
        return None if value is None else wsme_json.fromjson(datatype,
                                                              value)
    except (ValueError, TypeError) as exc:
        raise _BodyError(path, str(exc))


def _dict(datatype, value, path):
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _BodyError(path, 'must be an object')
    if not all(isinstance(key, str) for key in value):
        raise _BodyError(path, 'keys must be strings')
    return {key: convert(datatype.value_type, item, path + (key,))
            for key, item in value.items()}


def _complex(datatype, value, path):
    """An instance of a wtypes.Base subclass; None for a null field, but
    a body must be an object.

    Unknown fields are refused unless the type sets ``_ignore_unknown``.
    A type with an ``invalid_input(key, reason)`` hook raises what it
    returns for errors in its own fields, keyed relative to it.
    """
    if value is None and path:
        return None
    if not isinstance(value, dict):
        raise _BodyError(path, 'must be an object')
    attributes = wtypes.list_attributes(datatype)
    unknown = set(value) - {attribute.name for attribute in attributes}
    if unknown and not getattr(datatype, '_ignore_unknown', False):
        raise _BodyError(path, 'has unknown field(s) %s'
                         % ', '.join(sorted(unknown)))
    result = datatype()
    try:
        for attribute in attributes:
            _set(result, attribute, value, path)
    except _BodyError as error:
        invalid_input = getattr(datatype, 'invalid_input', None)
        if invalid_input is None:
            raise
        raise invalid_input(key=dotted(error.path[len(path):]),
                            reason=error.reason)
    return result


def _set(result, attribute, value, path):
    field = path + (attribute.name,)
    if attribute.name not in value:
        if attribute.mandatory:
            raise _BodyError(field, 'is missing')
        return
    item = value[attribute.name]
    if item is None and attribute.mandatory:
        raise _BodyError(field, 'must not be null')
    setattr(result, attribute.key, convert(attribute.datatype, item, field))
