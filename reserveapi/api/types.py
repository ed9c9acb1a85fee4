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


class Count(_Validated):
    name = 'count'
    validator = staticmethod(validators.non_negative_integer)


class Number(_Validated):
    name = 'number'
    validator = staticmethod(validators.non_negative_number)


def _string(message):
    def check(value):
        if not isinstance(value, str):
            raise ValueError('%s, got %r' % (message, value))
        return value
    return staticmethod(check)


class String(_Validated):
    """Any string, empty included."""

    name = 'string'
    validator = _string('must be a string')


class ExtraSpecValue(_Validated):
    name = 'extra_spec_value'
    validator = _string('extra spec values are strings')


class JsonObject(_Validated):
    """A JSON object passed on as a dict; the domain reads its keys."""

    name = 'json_object'

    @staticmethod
    def validator(value):
        if not isinstance(value, dict):
            raise ValueError('must be an object, not %s'
                             % type(value).__name__)
        return value


class JsonPatch(_Validated):
    """A JSON Patch that may only replace (or test) some paths."""

    name = 'json_patch'
    OPERATIONS = ('replace', 'test')

    def __init__(self, paths):
        super().__init__()
        self.paths = paths

    def validate(self, value):
        if not isinstance(value, list) or not value:
            raise ValueError('must be a non-empty JSON Patch list')
        for operation in value:
            if (not isinstance(operation, dict)
                    or operation.get('op') not in self.OPERATIONS
                    or operation.get('path') not in self.paths):
                raise ValueError(
                    'may only "replace" (or "test") %s, got %s'
                    % (' and '.join(self.paths), operation))
        return value


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
    extra_specs = {wtypes.text: ExtraSpecValue()}
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
