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

"""A keystoneauth1 client for a peer service, bounded by a deadline.

The mirror calls Placement and Nova with what a caller is willing to
wait: an API request has ``[mirror] inline_timeout`` for all its calls
together, a worker the peer group's own timeouts and retries.
"""

import time

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading

from reserveapi.common import exception
import reserveapi.conf
from reserveapi.mirror import credentials

CONF = reserveapi.conf.CONF


def deadline_for(timeout):
    """Monotonic time by which a call must end, or None for no bound."""
    return None if timeout is None else time.monotonic() + timeout


def time_left(deadline):
    """Seconds until ``deadline`` (never negative), or None for no bound."""
    return None if deadline is None else max(deadline - time.monotonic(), 0)


class PeerClient:
    """A keystoneauth1 Adapter on one config group, with a deadline per call.

    ``timeout`` (seconds) bounds a whole public call, including its retries
    after generation conflicts and its pages: each HTTP request gets only the
    time left, and no connect or status-code retries (whose back-off sleeps
    would otherwise keep a caller waiting on a peer that is down). It also
    bounds the session's own requests, such as fetching a token. Without a
    timeout the group's ``timeout`` and retry options apply, which is what a
    background worker wants.
    """

    group = None
    service_type = None
    microversion = None
    error = exception.PeerError
    unavailable = exception.PeerError

    def __init__(self, timeout=None):
        self.timeout = timeout
        self._unusable = None
        try:
            auth = ks_loading.load_auth_from_conf_options(CONF, self.group)
        except ks_exc.MissingRequiredOptions:
            # The plugin registered its options; name what is missing.
            self._unusable = credentials.describe_missing(
                self.group, credentials.missing_options(self.group))
            return
        session_overrides = {} if timeout is None else {'timeout': timeout}
        session = ks_loading.load_session_from_conf_options(
            CONF, self.group, auth=auth, **session_overrides)
        # The microversion header names the service type, so never go
        # without one even if the option was emptied.
        service_type = CONF[self.group].service_type or self.service_type
        self._adapter = ks_loading.load_adapter_from_conf_options(
            CONF, self.group, session=session, auth=auth,
            service_type=service_type,
            default_microversion=self.microversion, raise_exc=False,
            client_name='reserveapi')

    def _deadline(self, timeout):
        return deadline_for(self.timeout if timeout is None else timeout)

    def _request(self, method, path, deadline, **kwargs):
        """Send one request; raise ``unavailable`` for outages and 5xx."""
        if deadline is not None:
            left = time_left(deadline)
            if not left:
                raise self.unavailable(
                    reason='no answer before the deadline (%s %s)'
                    % (method, path))
            kwargs.update(timeout=left, connect_retries=0,
                          status_code_retries=0)
        if self._unusable:
            raise self.unavailable(reason=self._unusable)
        try:
            response = self._adapter.request(path, method, **kwargs)
        except ks_exc.MissingAuthPlugin:
            raise self.unavailable(
                reason=credentials.unusable_reason(self.group))
        except (ks_exc.ConnectionError, ks_exc.DiscoveryFailure,
                ks_exc.EndpointNotFound) as exc:
            raise self.unavailable(reason=str(exc))
        except ks_exc.ClientException as exc:
            raise self.error(reason='%s %s: %s' % (method, path, exc))
        if response.status_code >= 500:
            raise self.unavailable(reason=describe(response))
        return response

    def _get_json(self, path, deadline, **kwargs):
        response = self._request('GET', path, deadline, **kwargs)
        if response.status_code != 200:
            raise self.error(reason=describe(response))
        return response.json()


def describe(response):
    """Method, URL, status and the peer's own error detail, for last_error."""
    detail = response.text[:200]
    try:
        errors = response.json().get('errors') or []
    except (ValueError, AttributeError):
        errors = []
    if errors and isinstance(errors[0], dict):
        detail = errors[0].get('detail') or errors[0].get('title') or detail
    return '%s %s returned %s: %s' % (
        response.request.method, response.request.url,
        response.status_code, detail)
