"""Renders values the same way in every response."""

import datetime


def timestamp(value):
    """ISO 8601 in UTC (the database keeps naive UTC), or None."""
    if value is None:
        return None
    return value.replace(tzinfo=datetime.timezone.utc).isoformat()
