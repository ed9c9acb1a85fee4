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

"""The service's validators for values that come from outside: each rule
is written once, here, and used by the API's WSME types, the query
string, the inventory file and the command line alike.

Each takes a value as parsed from JSON (or YAML, or a query string),
returns it canonical, and raises ValueError with a message that
completes "field X ...". Messages quote a value as JSON, never as a
Python repr. Pure: no I/O, no configuration.
"""

import datetime
import json
import math
import re
import uuid as uuidlib

MAX_NAME_LENGTH = 255
HOST_NAME_MAX_LENGTH = MAX_NAME_LENGTH
MAX_INTEGER = 2 ** 31 - 1
"""Sizes and counts are stored in, or compared with, signed 32-bit
INTEGER columns on every backend."""
_QUOTED_LENGTH = 64
_CONDUCTOR_GROUP = re.compile(r'[a-zA-Z0-9_.-]*')


def describe(value):
    """``value`` for a message: JSON, strings shortened; a list or an
    object by its kind only.
    """
    if isinstance(value, str):
        if len(value) > _QUOTED_LENGTH:
            value = value[:_QUOTED_LENGTH - 3] + '...'
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return 'a list'
    if isinstance(value, dict):
        return 'an object'
    if isinstance(value, (bool, float)) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        text = str(value) if abs(value) < 10 ** 20 else 'a huge number'
        return text
    return 'a %s' % type(value).__name__


def storable_text_problem(value):
    """Why ``value`` cannot be stored as text on every backend, or None:
    PostgreSQL refuses NUL, and no backend stores a lone surrogate
    (JSON's ``"\\ud800"``), which is no character at all.
    """
    if '\x00' in value:
        return 'contains a NUL character'
    try:
        value.encode('utf-8')
    except UnicodeEncodeError:
        return 'contains an unpaired surrogate, which is no character'
    return None


def text(value, max_length=MAX_NAME_LENGTH):
    """A string of at most ``max_length`` printable characters; may be
    empty.
    """
    if not isinstance(value, str):
        raise ValueError('must be a string, not %s' % describe(value))
    problem = storable_text_problem(value)
    if problem:
        raise ValueError(problem)
    if not value.isprintable():
        raise ValueError('must contain only printable characters')
    if len(value) > max_length:
        raise ValueError('must be at most %d characters long' % max_length)
    return value


def name(value, max_length=MAX_NAME_LENGTH):
    """A name or identifier: 1 to ``max_length`` printable characters,
    not blank, with no white space around it (MariaDB would find
    ``"a "`` equal to ``"a"``).
    """
    if not isinstance(value, str):
        raise ValueError('must be a string of 1 to %d characters, not %s'
                         % (max_length, describe(value)))
    text(value, max_length)
    if not value.strip():
        raise ValueError('must not be empty or blank')
    if value != value.strip():
        raise ValueError('must not start or end with white space')
    return value


def host_name(value):
    """A compute host name: a name without ``/`` (it could not be one
    segment of a URL path).
    """
    name(value, HOST_NAME_MAX_LENGTH)
    if '/' in value:
        raise ValueError('must not contain "/"')
    return value


def canonical_uuid(value):
    """``value`` as a lower-case, hyphenated UUID string."""
    if not isinstance(value, str):
        raise ValueError('must be a UUID string, not %s' % describe(value))
    try:
        return str(uuidlib.UUID(value))
    except ValueError:
        raise ValueError('is not a UUID: %s' % describe(value))


def is_uuid(value):
    """Whether ``value`` is a UUID that canonical_uuid() accepts."""
    try:
        canonical_uuid(value)
    except ValueError:
        return False
    return True


def conductor_group(value):
    """An Ironic conductor group as Ironic takes one (letters, digits,
    ``_``, ``-`` and ``.``), lower-cased as Ironic stores it; empty is
    Ironic's default group.
    """
    if not isinstance(value, str):
        raise ValueError('must be a string, not %s' % describe(value))
    if len(value) > MAX_NAME_LENGTH:
        raise ValueError('must be at most %d characters long'
                         % MAX_NAME_LENGTH)
    if not _CONDUCTOR_GROUP.fullmatch(value):
        raise ValueError('must contain only letters, digits, "_", "-" and '
                         '".", got %s' % describe(value))
    return value.lower()


def node_ident(value):
    """A node UUID (made canonical) or a node name."""
    return canonical_uuid(value) if is_uuid(value) else name(value)


def non_negative_integer(value):
    """A whole number from 0 to MAX_INTEGER; not a bool, a float or a
    numeric string.
    """
    if (isinstance(value, bool) or not isinstance(value, int)
            or not 0 <= value <= MAX_INTEGER):
        raise ValueError('must be a non-negative integer of at most %d, '
                         'got %s' % (MAX_INTEGER, describe(value)))
    return value


def positive_integer(value):
    """A whole number from 1 to MAX_INTEGER; not a bool, a float or a
    numeric string.
    """
    if (isinstance(value, bool) or not isinstance(value, int)
            or not 1 <= value <= MAX_INTEGER):
        raise ValueError('must be an integer from 1 to %d, got %s'
                         % (MAX_INTEGER, describe(value)))
    return value


def aware_timestamp(value):
    """An ISO 8601 date and time with its UTC offset (``Z`` or
    ``+02:00``), as an aware datetime in UTC. A time without an offset
    is refused: whose local time it is cannot be guessed.
    """
    if not isinstance(value, str):
        raise ValueError('must be an ISO 8601 date and time string, not %s'
                         % describe(value))
    text = value[:-1] + '+00:00' if value[-1:] in ('Z', 'z') else value
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError('is not an ISO 8601 date and time: %s'
                         % describe(value))
    if moment.tzinfo is None:
        raise ValueError('must be a date and time with a UTC offset, such '
                         'as 2030-01-31T08:00:00+00:00, got %s'
                         % describe(value))
    try:
        return moment.astimezone(datetime.timezone.utc)
    except OverflowError:
        raise ValueError('is out of range: %s' % describe(value))


def non_negative_number(value):
    """A finite number from 0 to MAX_INTEGER; not a bool or a numeric
    string.
    """
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not 0 <= value <= MAX_INTEGER
            or not math.isfinite(value)):
        raise ValueError('must be a non-negative number of at most %d, '
                         'got %s' % (MAX_INTEGER, describe(value)))
    return value


