"""WSME types shared by the v1 controllers. They never leave api/."""

from wsme import types as wtypes


class JsonObject(wtypes.UserType):
    """A JSON object passed on as a dict; the domain validates its keys."""

    basetype = wtypes.text
    name = 'json_object'

    def validate(self, value):
        if not isinstance(value, dict):
            raise ValueError('Value must be a JSON object, not %s'
                             % type(value).__name__)
        return value

    frombasetype = validate


uuid = wtypes.UuidType()
host_name = wtypes.StringType(min_length=1, max_length=255)
