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

"""WSME types for request bodies and path parameters. They never leave
api/: controllers hand the domain plain values (``to_plain``).

Every scalar rule is one of ``common.validators``, so a rule tightened
there holds for every resource. WSME validates an attribute again when
it is set, so each ``validate`` accepts its own output.
"""

import datetime
import functools

from oslo_utils import strutils
from wsme import types as wtypes

from reserveapi.common import exception
from reserveapi.common import validators
from reserveapi.mirror import desired


class _Validated(wtypes.UserType):
    """A scalar checked by one of ``common.validators``; None passes only
    when ``nullable``.
    """

    basetype = wtypes.text
    validator = None

    def __init__(self, nullable=False):
        self.nullable = nullable

    def validate(self, value):
        if value is None and self.nullable:
            return None
        return type(self).validator(value)

    def frombasetype(self, value):
        return self.validate(value)


class Uuid(_Validated):
    """Any UUID spelling uuid.UUID reads, made lower-case and hyphenated."""

    name = 'uuid'
    validator = staticmethod(validators.canonical_uuid)


class HostName(_Validated):
    name = 'host_name'
    validator = staticmethod(validators.host_name)


class Name(_Validated):
    name = 'name'
    validator = staticmethod(validators.name)


class NodeIdent(_Validated):
    """A node's UUID (made canonical) or name."""

    name = 'node_ident'
    validator = staticmethod(validators.node_ident)


class ConductorGroup(_Validated):
    name = 'conductor_group'
    validator = staticmethod(validators.conductor_group)


class Count(_Validated):
    name = 'count'
    validator = staticmethod(validators.non_negative_integer)


class Amount(_Validated):
    """How many of something, at least one."""

    name = 'amount'
    validator = staticmethod(validators.positive_integer)


class Timestamp(_Validated):
    """An ISO 8601 time with its UTC offset, as an aware datetime in
    UTC; one without an offset is refused."""

    name = 'timestamp'

    @staticmethod
    def validator(value):
        if isinstance(value, datetime.datetime) and value.tzinfo:
            return value
        return validators.aware_timestamp(value)


class Number(_Validated):
    name = 'number'
    validator = staticmethod(validators.non_negative_number)


class Text(_Validated):
    """Printable text, empty included."""

    name = 'text'
    validator = staticmethod(validators.text)


def _of_kind(value, kind, what):
    """``value``, if it is a ``kind``; otherwise it must be ``what``."""
    if not isinstance(value, kind):
        raise ValueError('must be %s, not %s'
                         % (what, validators.describe(value)))
    return value


class String(_Validated):
    """Any string, empty included; the body's parser already refused
    what no database stores.
    """

    name = 'string'
    validator = staticmethod(functools.partial(_of_kind, kind=str,
                                               what='a string'))


class ExtraSpecs(_Validated):
    """A flavor's extra specs: printable string keys and values, bounded
    as Nova bounds them; an error names its key.
    """

    name = 'extra_specs'

    def __init__(self):
        super().__init__(nullable=True)

    @staticmethod
    def validator(value):
        _of_kind(value, dict, 'an object')
        if not all(isinstance(key, str) for key in value):
            raise ValueError('keys must be strings')
        for key, item in value.items():
            try:
                if not key:
                    raise ValueError('keys must not be empty')
                validators.text(key)
                if not isinstance(item, str):
                    raise ValueError('extra spec values are strings, not %s'
                                     % validators.describe(item))
                validators.text(item)
            except ValueError as exc:
                raise exception.FieldError((key,), str(exc))
        return value


class JsonObject(_Validated):
    """A JSON object passed on as a dict; the domain reads its keys."""

    name = 'json_object'
    validator = staticmethod(functools.partial(_of_kind, kind=dict,
                                               what='an object'))


class JsonPatch(_Validated):
    """A JSON Patch that may only replace (or test) some paths, each
    with a value; other members of an operation are ignored, as RFC 6902
    says.
    """

    name = 'json_patch'
    OPERATIONS = ('replace', 'test')

    def __init__(self, paths):
        super().__init__()
        self.paths = paths

    def validate(self, value):
        if not isinstance(value, list) or not value:
            raise ValueError('must be a non-empty JSON Patch list')
        for index, operation in enumerate(value):
            self._check(index, operation)
        return value

    def _check(self, index, operation):
        if not isinstance(operation, dict):
            raise exception.FieldError(
                (index,), 'must be an operation object, not %s'
                % validators.describe(operation))
        for member, allowed in (('op', self.OPERATIONS),
                                ('path', self.paths)):
            if operation.get(member) not in allowed:
                raise exception.FieldError(
                    (index, member), 'must be %s, got %s' % (
                        _one_of(allowed),
                        validators.describe(operation.get(member))
                        if member in operation else 'none'))
        if 'value' not in operation:
            raise exception.FieldError((index, 'value'), 'is missing')


def _one_of(choices):
    quoted = ['"%s"' % choice for choice in choices]
    if len(quoted) == 1:
        return quoted[0]
    return '%s or %s' % (', '.join(quoted[:-1]), quoted[-1])


class OneOf(_Validated):
    """A query parameter or body field that takes one of a few words."""

    name = 'one_of'

    def __init__(self, choices):
        super().__init__()
        self.choices = tuple(choices)

    def validate(self, value):
        if value not in self.choices:
            raise ValueError('must be %s, got %s' % (
                _one_of(self.choices), validators.describe(value)))
        return value


class Limit(_Validated):
    """A page size in a query string: a whole number from 1."""

    name = 'limit'

    @staticmethod
    def validator(value):
        if not (isinstance(value, str) and value.isascii()
                and value.isdigit() and len(value) <= 10):
            raise ValueError('must be a whole number from 1, got %s'
                             % validators.describe(value))
        number = int(value)
        if number < 1:
            raise ValueError('must be at least 1')
        return number


class Boolean(_Validated):
    """``true`` or ``false`` (or another spelling oslo.utils reads) in a
    query string.
    """

    name = 'boolean'

    @staticmethod
    def validator(value):
        try:
            return strutils.bool_from_string(value, strict=True)
        except ValueError:
            raise ValueError('must be true or false, got %s'
                             % validators.describe(value))


class DesiredAggregates(wtypes.UserType):
    """The aggregates of a sync request, as a mirror DesiredState: the
    document's rules are the mirror's, shared with the command line.
    """

    basetype = wtypes.text
    name = 'desired_aggregates'

    def validate(self, value):
        if isinstance(value, desired.DesiredState):
            return value
        return desired.parse(value)

    frombasetype = validate


uuid = Uuid()
host_name = HostName()
name = Name()
optional_name = Name(nullable=True)
node_ident = NodeIdent()
conductor_group = ConductorGroup(nullable=True)
amount = Amount()
timestamp = Timestamp()
text = Text()
limit = Limit()
boolean = Boolean()
sort_dir = OneOf(('asc', 'desc'))


class Image(wtypes.Base):
    """The image of a request spec; other fields are ignored."""

    _ignore_unknown = True
    id = String(nullable=True)
    properties = JsonObject(nullable=True)


class RequestSpec(wtypes.Base):
    """An instance's request spec as Nova has it; fields other than these
    are ignored. Its errors name their key and say it is the spec's.
    """

    _ignore_unknown = True
    memory_mb = Count()
    vcpus = Count()
    vcpu_weight = Count(nullable=True)
    root_gb = Count()
    ephemeral_gb = Count()
    swap = Count()
    rxtx_factor = Number()
    extra_specs = ExtraSpecs()
    image = Image

    @staticmethod
    def invalid_input(key, reason):
        return exception.InvalidRequestSpec(key=key, reason=reason)


def to_plain(value):
    """A converted body as dicts and lists, fields never set left out."""
    if isinstance(value, wtypes.Base):
        return {attribute.name: to_plain(getattr(value, attribute.key))
                for attribute in wtypes.list_attributes(type(value))
                if getattr(value, attribute.key) is not wtypes.Unset}
    if isinstance(value, list):
        return [to_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: to_plain(item) for key, item in value.items()}
    return value
