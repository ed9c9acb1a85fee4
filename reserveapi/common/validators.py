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
is written once, here, and used by the API's WSME types, the inventory
file and the command line alike.

Each takes a value as parsed from JSON (or YAML), returns it canonical,
and raises ValueError with a message that completes "field X ...".
Pure: no I/O, no configuration.
"""

import math
import uuid as uuidlib

HOST_NAME_MAX_LENGTH = 255


def canonical_uuid(value):
    """``value`` as a lower-case, hyphenated UUID string."""
    if not isinstance(value, str):
        raise ValueError('must be a UUID string, not %s'
                         % type(value).__name__)
    try:
        return str(uuidlib.UUID(value))
    except ValueError:
        raise ValueError('is not a UUID: %r' % value[:64])


def is_uuid(value):
    """Whether ``value`` is a UUID that canonical_uuid() accepts."""
    try:
        canonical_uuid(value)
    except ValueError:
        return False
    return True


def host_name(value):
    """A compute host name: a string of 1 to 255 characters."""
    if (not isinstance(value, str)
            or not 0 < len(value) <= HOST_NAME_MAX_LENGTH):
        raise ValueError('must be a host name of 1 to %d characters'
                         % HOST_NAME_MAX_LENGTH)
    return value


def name(value, max_length=255):
    """A name or identifier: a string of 1 to ``max_length`` characters."""
    if not isinstance(value, str) or not 0 < len(value) <= max_length:
        raise ValueError('must be a string of 1 to %d characters'
                         % max_length)
    return value


def node_ident(value):
    """A node UUID (made canonical) or a node name."""
    return canonical_uuid(value) if is_uuid(value) else name(value)


def non_negative_integer(value):
    """A whole number >= 0; not a bool, a float or a numeric string."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError('must be a non-negative integer, got %r' % (value,))
    return value


def non_negative_number(value):
    """A finite number >= 0; not a bool or a numeric string."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value < 0):
        raise ValueError('must be a non-negative number, got %r' % (value,))
    return value
