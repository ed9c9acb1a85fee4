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

One parser reads every body, before pecan routes the request
(``hooks.RouteHook``): the media type is JSON, the charset UTF-8, the
nesting bounded (checked before parsing), no number is NaN, Infinity or
absurdly long, no object repeats a key and no string holds what a
database cannot store. One converter then serves every resource. It
walks the WSME type definitions itself rather than calling WSME's
``fromjson``, which accepts ``"8"`` or ``1.5`` for an integer, lets any
value through a text field and cannot say which nested field it
rejected; the types and their validators are still WSME's.
"""

import json

import pecan
from wsme import types as wtypes
from wsme.rest import json as wsme_json

from reserveapi.common import exception
from reserveapi.common import validators

MAX_DEPTH = 32
"""Deepest nesting of objects and lists a body may have. A request spec
nests four levels; Python's parser would recurse until it failed."""
MAX_NUMBER_DIGITS = 20
JSON_MEDIA_TYPES = ('application/json',)
JSON_PATCH_MEDIA_TYPE = 'application/json-patch+json'
_ENVIRON_KEY = 'reserveapi.body'


def parse(request, media_types=JSON_MEDIA_TYPES):
    """Check and parse the body of ``request`` into its environ, for
    ``json_body()``; None when there is no body.

    :raises: UnsupportedMediaType (415) for another media type or charset;
        Invalid (400) for a body that is not JSON or breaks a bound.
    """
    raw = request.body
    if not raw:
        return None
    media_type = (request.content_type or '').lower()
    if media_type not in media_types:
        raise exception.UnsupportedMediaType(
            reason='The request body must be %s, not %s.'
            % (' or '.join(media_types), media_type or 'unlabelled'))
    charset = request.charset
    if charset != 'UTF-8':
        raise exception.UnsupportedMediaType(
            reason='The request body must be encoded as UTF-8; charset %s '
                   'is not supported.' % validators.describe(charset))
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise exception.Invalid(reason='the request body is not valid '
                                'UTF-8 (byte %d).' % exc.start)
    _check_depth(text)
    try:
        document = json.loads(text, parse_constant=_no_constant,
                              parse_int=_bounded_int,
                              object_pairs_hook=_unique_keys)
    except exception.FieldError as exc:
        raise exception.Invalid(reason='the request body %s.' % exc.reason)
    except ValueError as exc:
        raise exception.Invalid(reason='the request body is not valid '
                                'JSON: %s.' % _json_error(exc))
    _check_strings(document, ())
    request.environ[_ENVIRON_KEY] = document
    return document


def _check_depth(text):
    """Refuse nesting deeper than MAX_DEPTH without parsing: count the
    brackets outside strings.
    """
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == '\\':
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in '[{':
            depth += 1
            if depth > MAX_DEPTH:
                raise exception.Invalid(
                    reason='the request body nests objects and lists more '
                           'than %d levels deep.' % MAX_DEPTH)
        elif char in ']}':
            depth -= 1


def _no_constant(name):
    raise exception.FieldError((), 'contains %s, which is not a JSON '
                                'number' % name)


def _bounded_int(digits):
    if len(digits.lstrip('-')) > MAX_NUMBER_DIGITS:
        raise exception.FieldError((), 'contains an integer of more than '
                                    '%d digits' % MAX_NUMBER_DIGITS)
    return int(digits)


def _unique_keys(pairs):
    document = {}
    for key, value in pairs:
        if key in document:
            raise exception.FieldError(
                (), 'repeats the key %s in an object'
                % validators.describe(key))
        document[key] = value
    return document


def _json_error(exc):
    """``Expecting ',' delimiter at line 1, column 9``, without Python's
    character offset.
    """
    if isinstance(exc, json.JSONDecodeError):
        return '%s at line %d, column %d' % (exc.msg, exc.lineno, exc.colno)
    return 'it cannot be parsed'


def _check_strings(value, path):
    """Every key and string is text a database can store."""
    if isinstance(value, str):
        problem = validators.storable_text_problem(value)
        if problem:
            raise _field_invalid(path, problem)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_strings(item, path + (index,))
    elif isinstance(value, dict):
        for key, item in value.items():
            problem = validators.storable_text_problem(key)
            if problem:
                raise _field_invalid(path, 'has a key that ' + problem)
            _check_strings(item, path + (key,))


def _field_invalid(path, reason):
    if not path:
        return exception.Invalid(reason='the request body %s.' % reason)
    return exception.Invalid(reason='field %s %s.'
                             % (exception.dotted(path), reason))


def json_body():
    """The request body as parsed JSON; a 400 when there is none."""
    if _ENVIRON_KEY not in pecan.request.environ:
        raise exception.Invalid(reason='this request needs a JSON body.')
    return pecan.request.environ[_ENVIRON_KEY]


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
    except exception.FieldError as error:
        raise _field_invalid(error.path, error.reason)


def path_arg(datatype, value, name):
    """A path parameter validated by ``datatype``, or a 400 naming it."""
    try:
        return datatype.validate(value)
    except ValueError as exc:
        raise exception.Invalid(reason='%s %s.' % (name, exc))


def convert(datatype, value, path=()):
    """``value`` (parsed JSON) as ``datatype``; raises FieldError."""
    if wtypes.iscomplex(datatype):
        return _complex(datatype, value, path)
    if isinstance(datatype, wtypes.ArrayType):
        if value is None:
            return None
        if not isinstance(value, list):
            raise exception.FieldError(path, 'must be a list')
        return [convert(datatype.item_type, item, path + (index,))
                for index, item in enumerate(value)]
    if isinstance(datatype, wtypes.DictType):
        return _dict(datatype, value, path)
    try:
        if wtypes.isusertype(datatype):
            return datatype.validate(value)
        if value is not None and datatype is bool and not isinstance(
                value, bool):
            raise ValueError('must be true or false, not %s'
                             % validators.describe(value))
        return None if value is None else wsme_json.fromjson(datatype,
                                                              value)
    except exception.FieldError as exc:
        raise exception.FieldError(path + exc.path, exc.reason)
    except (ValueError, TypeError) as exc:
        raise exception.FieldError(path, str(exc))


def _dict(datatype, value, path):
    if value is None:
        return None
    if not isinstance(value, dict):
        raise exception.FieldError(path, 'must be an object')
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
        raise exception.FieldError(path, 'must be an object, not %s'
                                    % validators.describe(value))
    attributes = wtypes.list_attributes(datatype)
    unknown = set(value) - {attribute.name for attribute in attributes}
    if unknown and not getattr(datatype, '_ignore_unknown', False):
        raise exception.FieldError(path, 'has unknown field(s) %s' % (
            ', '.join(validators.describe(name) for name in sorted(unknown))))
    result = datatype()
    try:
        for attribute in attributes:
            _set(result, attribute, value, path)
    except exception.FieldError as error:
        invalid_input = getattr(datatype, 'invalid_input', None)
        if invalid_input is None:
            raise
        raise invalid_input(key=exception.dotted(error.path[len(path):]),
                            reason=error.reason)
    return result


def _set(result, attribute, value, path):
    field = path + (attribute.name,)
    if attribute.name not in value:
        if attribute.mandatory:
            raise exception.FieldError(field, 'is missing')
        return
    item = value[attribute.name]
    if item is None and (attribute.mandatory or attribute.datatype is bool):
        raise exception.FieldError(field, 'must not be null')
    setattr(result, attribute.key, convert(attribute.datatype, item, field))
