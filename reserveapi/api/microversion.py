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

"""OpenStack-API-Version handling for the ``baremetal-reservation``
service type.

``reservation`` is Blazar's service type; the versions before this one
used it, so it stays accepted in the header as a deprecated alias, and
the answer names the type the request named.
"""

import microversion_parse

from reserveapi.common import exception

SERVICE_TYPE = 'baremetal-reservation'
DEPRECATED_SERVICE_TYPE = 'reservation'
SERVICE_TYPES = (SERVICE_TYPE, DEPRECATED_SERVICE_TYPE)
HEADER = 'OpenStack-API-Version'

# Each entry is the minor version that introduced a change; keep the
# history here so that clients can read what each version means.
VERSIONS = [
    '1.0',  # Initial version: reservations, nodes, capacity, aggregates.
    '1.1',  # Ironic partitions: POST /v1/reservations takes
            # conductor_group and shard; nodes show shard and stale_since,
            # filter by shard; GET /v1/nodes says when and from where the
            # inventory was last synced.
    '1.2',  # Capacity summary: GET /v1/capacity takes shard and
            # conductor_group and also answers the free nodes' traits and
            # the architectures, all of that partition: a compute host's
            # periodic report in one request that costs the same at any
            # number of nodes.
    '1.3',  # Capacity planning: POST /v1/candidates answers how many
            # nodes a reservation with a request spec could get now,
            # per partition, and what excluded the others.
    '1.4',  # A project's view: a reader, member or manager of a project
            # sees only the nodes its project owns or leases (another is
            # a 404) and is named only those among candidates; capacity
            # is admin's and service's. By policy
            # (reserveapi:node:list_all, reserveapi:capacity:get), at
            # every microversion: a client cannot ask for the old view.
    '1.5',  # Holds: /v1/holds promises a project N nodes matching a
            # request spec from a start to an end; each hold is admitted
            # only if it fits beside the others at every instant of its
            # window, and on-demand reservations keep every hold.
            # Capacity and candidates say how many free nodes the holds
            # keep (promised); candidates asked with a window say how
            # many a hold over it would be admitted for (admissible).
    '1.6',  # Pins: a hold pins its nodes from its start; its project
            # boots them through a private flavor the service creates in
            # Nova, asking for the hold's own resource class. POST
            # /v1/holds takes at_end (keep or delete its instances at
            # the end); a hold shows at_end, reclaimed, shortfall,
            # flavor_id, boot_resource_class, pinned and in_use, and is
            # degraded or reclaimed while it runs short. Capacity lists
            # a row per running hold under its class.
]
PARTITIONS = microversion_parse.parse_version_string('1.1')
CAPACITY_SUMMARY = microversion_parse.parse_version_string('1.2')
CANDIDATES = microversion_parse.parse_version_string('1.3')
HOLDS = microversion_parse.parse_version_string('1.5')
PINS = microversion_parse.parse_version_string('1.6')
MIN_VERSION = microversion_parse.parse_version_string(VERSIONS[0])
MAX_VERSION = microversion_parse.parse_version_string(VERSIONS[-1])


def header_value(version, service_type=SERVICE_TYPE):
    return '%s %s' % (service_type, version)


def _quoted(value):
    """``, not "x"`` for a printable ASCII header value; nothing for one
    that is not (WSGI hands a header over as bytes read as latin-1, so
    echoing it would garble it).
    """
    if (value and value.isascii() and value.isprintable()
            and '"' not in value and len(value) <= 64):
        return ', not "%s"' % value
    return ''


def _named_types(value):
    """Our service types (either spelling) that the header has an entry
    for, in lower case.
    """
    return {entry.strip().split(' ')[0].lower()
            for entry in (value or '').split(',')} & set(SERVICE_TYPES)


def requested_service_type(headers):
    """The type to echo: the one the request named, ours by default."""
    named = _named_types(headers.get(HEADER))
    if SERVICE_TYPE in named or not named:
        return SERVICE_TYPE
    return DEPRECATED_SERVICE_TYPE


def from_headers(headers):
    """The version a request asks for; the minimum when it asks for none.

    ``baremetal-reservation 1.N``, or the deprecated ``reservation 1.N``
    when the header has no entry for ours. A malformed value is a 400; a
    well-formed one we do not serve is a 406 that names the range we do
    serve.
    """
    service_type = requested_service_type(headers)
    try:
        requested = microversion_parse.get_version(
            headers, service_type=service_type)
        if requested is None:
            if _named_types(headers.get(HEADER)):
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


def require_for_query(version, minimum, **params):
    """400 for a query parameter given (not None) below the microversion
    ``minimum`` that introduced it, as for any unknown parameter."""
    for name, value in sorted(params.items()):
        if value is not None and version < minimum:
            raise exception.Invalid(
                reason='unknown query parameter %s; it takes microversion '
                       '%s or later.' % (name, minimum))
