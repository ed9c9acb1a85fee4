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

"""OpenStack-API-Version handling for the ``reservation`` service type."""

import microversion_parse

from reserveapi.common import exception

SERVICE_TYPE = 'reservation'
HEADER = 'OpenStack-API-Version'

# Each entry is the minor version that introduced a change; keep the
# history here so that clients can read what each version means.
VERSIONS = [
    '1.0',  # Initial version: reservations, nodes, capacity, aggregates.
    '1.1',  # Ironic partitions: POST /v1/reservations takes
            # conductor_group and shard; nodes show shard and stale_since,
            # filter by shard; GET /v1/nodes says when and from where the
            # inventory was last synced.
]
PARTITIONS = microversion_parse.parse_version_string('1.1')
MIN_VERSION = microversion_parse.parse_version_string(VERSIONS[0])
MAX_VERSION = microversion_parse.parse_version_string(VERSIONS[-1])


def header_value(version):
    return '%s %s' % (SERVICE_TYPE, version)


def _quoted(value):
    """``, not "x"`` for a printable ASCII header value; nothing for one
    that is not (WSGI hands a header over as bytes read as latin-1, so
    echoing it would garble it).
    """
    if (value and value.isascii() and value.isprintable()
            and '"' not in value and len(value) <= 64):
        return ', not "%s"' % value
    return ''


def _names_us(value):
    """Whether the header has an entry for our service type (one that
    get_version found no version in).
    """
    return any(entry.strip().split(' ')[0].lower() == SERVICE_TYPE
               for entry in (value or '').split(','))


def from_headers(headers):
    """The version a request asks for; the minimum when it asks for none.

    A malformed value is a 400; a well-formed one we do not serve is a
    406 that names the range we do serve.
    """
    try:
        requested = microversion_parse.get_version(
            headers, service_type=SERVICE_TYPE)
        if requested is None:
            if _names_us(headers.get(HEADER)):
                raise TypeError('no version')
            return MIN_VERSION
        if requested.strip().lower() == 'latest':
            return MAX_VERSION
        version = microversion_parse.parse_version_string(requested)
    except (TypeError, ValueError):
        raise exception.Invalid(
            reason='the %s header must be of the form "%s 1.N" or "%s '
                   'latest"%s.' % (HEADER, SERVICE_TYPE, SERVICE_TYPE,
                                   _quoted(headers.get(HEADER))))
    if not version.matches(MIN_VERSION, MAX_VERSION):
        raise exception.NotAcceptable(
            reason='Version %s is not supported; this service supports '
                   '%s to %s.' % (version, MIN_VERSION, MAX_VERSION))
    return version
