"""WSME types shared by the v1 controllers. They never leave api/."""

from wsme import types as wtypes

from reserveapi.mirror import desired


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


class DesiredAggregates(wtypes.UserType):
    """The aggregates of a sync request, as a mirror DesiredState: the
    document's rules are the mirror's, shared with the command line.
    """

    basetype = wtypes.text
    name = 'desired_aggregates'

    def validate(self, value):
        # WSME validates again what it has converted.
        if isinstance(value, desired.DesiredState):
            return value
        return desired.parse(value)

    frombasetype = validate
