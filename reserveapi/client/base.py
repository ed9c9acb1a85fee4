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

"""What the clients share: the adapter, retries, version negotiation,
error translation and pages.
"""

import datetime
import threading
import urllib.parse

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import discover as ks_discover
from keystoneauth1 import exceptions as ks_exc

SERVICE_TYPE = 'baremetal-reservation'
# The service type of the versions before; the microversion header names
# both, so that a service not yet upgraded still reads the version.
DEPRECATED_SERVICE_TYPE = 'reservation'
MICROVERSION_HEADER = 'OpenStack-API-Version'
# The oldest and newest microversions this client speaks; the version
# used is the newest that the service also serves.
MIN_VERSION = '1.0'
MAX_VERSION = '1.6'
# The first microversions that know Ironic partitions in a reservation
# (``shard``, ``conductor_group``), the capacity summary of a partition
# (``GET /v1/capacity`` with traits and architectures), candidates
# (``POST /v1/candidates``), holds (``/v1/holds``) and their pins (a
# hold's ``at_end``; a capacity row per running hold, under its own
# resource class).
PARTITIONS_VERSION = '1.1'
SUMMARY_VERSION = '1.2'
CANDIDATES_VERSION = '1.3'
HOLDS_VERSION = '1.5'
PINS_VERSION = '1.6'
# Idempotent calls are retried on connection failures and on these
# statuses, with keystoneauth1's exponential back-off (0.5 s, 1 s, 2 s).
RETRIES = 3
RETRIABLE_STATUS_CODES = [502, 503, 504]
# A DELETE releases a node: a 500 is retried too, since giving up leaks
# the node until someone notices.
DELETE_RETRIABLE_STATUS_CODES = [500] + RETRIABLE_STATUS_CODES
NO_VALID_NODE = 'reserveapi.no_valid_node'


class ClientError(Exception):
    """The service refused a call; ``code`` is its stable error code."""

    def __init__(self, status, code, detail, request_id):
        super().__init__('%s %s: %s (request %s)'
                         % (status, code, detail, request_id))
        self.status = status
        self.code = code
        self.detail = detail
        self.request_id = request_id


class NotFound(ClientError):
    pass


class Conflict(ClientError):
    """409: another host's instance, a stale state, ..."""


class NoValidNode(Conflict):
    """409 ``reserveapi.no_valid_node``: ``detail`` counts what each
    criterion eliminated.
    """


class ServiceUnavailable(ClientError):
    """The service cannot be reached (not in the catalog, connection
    refused or timed out) or answered 502/503/504, after the retries.
    """


def timestamp(value):
    """An ISO 8601 string as the service takes it; a datetime must carry
    its UTC offset (the service refuses a time without one)."""
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    return value


def make_adapter(session_or_adapter, **adapter_kwargs):
    if isinstance(session_or_adapter, ks_adapter.Adapter):
        return session_or_adapter
    adapter_kwargs.setdefault('service_type', SERVICE_TYPE)
    return ks_adapter.Adapter(session_or_adapter, **adapter_kwargs)


class BaseClient:
    """Calls the service at the newest microversion both sides speak,
    negotiated once from the version document at the endpoint's root.

    The catalog (or ``endpoint_override``) may name the service's root or
    its ``/v1``: paths are resolved against the root either way.
    """

    def __init__(self, session_or_adapter, retries=RETRIES,
                 **adapter_kwargs):
        self.adapter = make_adapter(session_or_adapter, **adapter_kwargs)
        # 0 for callers that must make one bounded attempt (nova-api's
        # aggregate hook), whatever the call.
        self.retries = retries
        self._version = None
        self._root = None
        self._lock = threading.Lock()

    def speaks(self, version):
        """Whether the negotiated microversion is ``version`` or newer."""
        return (ks_discover.normalize_version_number(self.api_version)
                >= ks_discover.normalize_version_number(version))

    @property
    def api_version(self):
        with self._lock:
            if self._version is None:
                # A version the caller chose (openstack's
                # --os-baremetal-reservation-api-version) is used as is.
                self._version = (self.adapter.default_microversion
                                 or self._negotiate())
            return self._version

    def _require(self, version, what):
        """Refuse a call the negotiated microversion cannot make."""
        if not self.speaks(version):
            raise ClientError(
                None, None, '%s: needs microversion %s; the service speaks '
                'up to %s.' % (what, version, self.api_version), None)

    def _url(self, path):
        """``path`` (``/v1/...``) under the service's root; a full URL (a
        ``next`` link) as it is.
        """
        if urllib.parse.urlsplit(path).netloc:
            return path
        if self._root is None:
            self._root = self._find_root()
        return self._root + path

    def _find_root(self):
        try:
            endpoint = self.adapter.get_endpoint()
        except (ks_exc.EndpointNotFound, ks_exc.DiscoveryFailure,
                ks_exc.ConnectionError) as exc:
            raise ServiceUnavailable(None, None, str(exc), None)
        if not endpoint:
            raise ServiceUnavailable(None, None, 'No endpoint of service '
                                     'type %s found.' % SERVICE_TYPE, None)
        endpoint = endpoint.rstrip('/')
        if endpoint.endswith('/v1'):
            endpoint = endpoint[:-len('/v1')]
        return endpoint

    def request(self, method, url, idempotent=None, timeout=None, **kwargs):
        """The decoded JSON body (None when there is none), or raise.

        GET, PUT and DELETE are retried; a POST or PATCH only when the
        caller says the service makes it safe to repeat (``idempotent``).
        ``timeout`` (seconds) bounds connecting and each read of this
        call, in place of the session's.
        """
        if idempotent is None:
            idempotent = method in ('GET', 'HEAD', 'PUT', 'DELETE')
        if 'microversion' not in kwargs:
            kwargs['microversion'] = self.api_version
        if timeout is not None:
            kwargs['timeout'] = timeout
        return self._send(method, url, idempotent, **kwargs)

    def _send(self, method, url, idempotent, **kwargs):
        retries = self.retries if idempotent else 0
        version = (kwargs.pop('microversion', None)
                   or self.adapter.default_microversion)
        # None, not absent: the adapter would set its own header.
        kwargs['microversion'] = None
        if version:
            kwargs['headers'] = dict(kwargs.get('headers') or {}, **{
                MICROVERSION_HEADER: '%s %s, %s %s' % (
                    SERVICE_TYPE, version, DEPRECATED_SERVICE_TYPE,
                    version)})
        retriable = (DELETE_RETRIABLE_STATUS_CODES if method == 'DELETE'
                     else RETRIABLE_STATUS_CODES)
        try:
            url = self._url(url)
            response = self.adapter.request(
                url, method, connect_retries=retries,
                status_code_retries=retries,
                retriable_status_codes=retriable, **kwargs)
        except ks_exc.HttpError as exc:
            raise _client_error(exc)
        except (ks_exc.ConnectionError, ks_exc.EndpointNotFound,
                ks_exc.DiscoveryFailure) as exc:
            raise ServiceUnavailable(None, None, str(exc), None)
        return response.json() if response.content else None

    def _negotiate(self):
        document = self._send('GET', '/', idempotent=True)
        versions = [version for version in document.get('versions', ())
                    if version.get('id') == 'v1']
        if not versions:
            raise ServiceUnavailable(
                None, None, 'The service at this endpoint offers no v1 API '
                'in its version document.', None)
        served_min = versions[0].get('min_version') or MIN_VERSION
        served_max = versions[0].get('max_version') or MIN_VERSION
        best = min(ks_discover.normalize_version_number(MAX_VERSION),
                   ks_discover.normalize_version_number(served_max))
        if best < max(ks_discover.normalize_version_number(MIN_VERSION),
                      ks_discover.normalize_version_number(served_min)):
            raise ClientError(
                None, None, 'The service speaks microversions %s to %s; '
                'this client %s to %s.' % (served_min, served_max,
                                           MIN_VERSION, MAX_VERSION), None)
        return ks_discover.version_to_string(best)

    def pages(self, path, key, **query):
        """Every item of the list at ``path``, following ``next`` links.

        ``query`` (filters, ``limit``, ``marker``, ``sort_key``...) goes
        on the first request; the service repeats it in each ``next``
        link. ``limit`` is a page size, so stop iterating to read fewer.
        """
        query = {name: value for name, value in query.items()
                 if value is not None}
        url = path
        if query:
            url += '?' + urllib.parse.urlencode(sorted(query.items()))
        while url:
            page = self.request('GET', url)
            yield from page[key]
            url = page.get('next')


def _client_error(exc):
    try:
        error = exc.response.json()['errors'][0]
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        error = {}
    status = exc.http_status
    code = error.get('code')
    if status == 409 and code == NO_VALID_NODE:
        cls = NoValidNode
    elif status in RETRIABLE_STATUS_CODES:
        cls = ServiceUnavailable
    else:
        cls = {404: NotFound, 409: Conflict}.get(status, ClientError)
    return cls(status, code, error.get('detail', exc.message),
               error.get('request_id', exc.request_id))
