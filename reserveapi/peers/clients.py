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

"""How the service talks to its peers: Ironic, Placement and Nova.

Watcher's ``common/clients.py`` idea, in our terms; every peer client is
built here, with:

* one way to load credentials: keystoneauth1's auth, session and adapter
  options of the peer's own group (``[ironic]``, ``[placement]``,
  ``[nova]``, all registered by ``conf/ksa.py``);
* one timeout and retry policy: a caller who waits (an API request) gets
  a deadline for all its calls together and no retries, whose back-off
  would keep it waiting on a peer that is down; a background job gets
  the group's own ``timeout`` and retries;
* one outage signal: the peer's ``PeerUnavailable`` (a 503) from
  ``common/exception.py``.
"""

import importlib
import time

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading

from reserveapi.common import exception
import reserveapi.conf
from reserveapi.peers import credentials

CONF = reserveapi.conf.CONF


class _OnFirstUse:
    """A module imported when first used: python-ironicclient pulls in
    the OpenStack SDK, a third of a second at the start of every process,
    which a process not syncing from Ironic need not pay."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attribute):
        return getattr(importlib.import_module(self._name), attribute)


ironic_exc = _OnFirstUse('ironicclient.exc')
ironic_client = _OnFirstUse('ironicclient.v1.client')


def deadline_for(timeout):
    """Monotonic time by which a call must end, or None for no bound."""
    return None if timeout is None else time.monotonic() + timeout


def time_left(deadline):
    """Seconds until ``deadline`` (never negative), or None for no bound."""
    return None if deadline is None else max(deadline - time.monotonic(), 0)


def load_adapter(conf, group, timeout=None, **adapter_kwargs):
    """A keystoneauth1 Adapter (with its session and auth) on ``[group]``.

    ``timeout`` (seconds) replaces the group's for every request of the
    session, fetching a token included.

    :raises: keystoneauth1's MissingRequiredOptions when the auth plugin
        lacks options.
    """
    auth = ks_loading.load_auth_from_conf_options(conf, group)
    session_overrides = {} if timeout is None else {'timeout': timeout}
    session = ks_loading.load_session_from_conf_options(
        conf, group, auth=auth, **session_overrides)
    return ks_loading.load_adapter_from_conf_options(
        conf, group, session=session, auth=auth, **adapter_kwargs)


def ironic_failures():
    """Whatever python-ironicclient or keystoneauth1 raise when Ironic
    (or the catalog, or Keystone) could not be asked."""
    return (ironic_exc.ClientException, ks_exc.ClientException)


def ironic(conf, api_version, waiting):
    """python-ironicclient on ``[ironic]``.

    A background job's client retries as ``api_max_retries`` says; a
    waiting caller's never does (a claim classifies a 409 itself, and an
    outage must fail a request at once).

    :raises: IronicUnavailable when the catalog has no endpoint or the
        credentials cannot be loaded.
    """
    group = 'ironic'
    settings = conf[group]
    try:
        adapter = load_adapter(conf, group)
        endpoint = adapter.get_endpoint()
        if not endpoint:
            raise exception.IronicUnavailable(
                reason='no %s endpoint in the catalog and no [%s] '
                       'endpoint_override' % (settings.service_type, group))
        return ironic_client.Client(
            endpoint_override=endpoint, session=adapter.session,
            os_ironic_api_version=api_version,
            max_retries=0 if waiting else settings.api_max_retries,
            retry_interval=settings.api_retry_interval,
            interface=adapter.interface,
            region_name=settings.region_name)
    except ironic_failures() as error:
        raise ironic_unavailable(error)


def ironic_unavailable(error):
    """The outage signal for what python-ironicclient raised.

    ``delivered``: requests' words when no connection could be made
    (refused, no route) mean the request never left; anything else may
    have reached Ironic, a timeout or a dropped connection included.
    """
    return exception.IronicUnavailable(
        reason=describe_error(error),
        delivered='Failed to establish a new connection' not in str(error))


def describe_error(error):
    """One line on why a peer could not be asked."""
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


class PeerClient:
    """A keystoneauth1 Adapter on one config group, with a deadline per
    call: Placement's and Nova's clients.

    ``timeout`` (seconds) bounds a whole public call, including its retries
    after generation conflicts and its pages: each HTTP request gets only the
    time left, and no connect or status-code retries. It also bounds the
    session's own requests, such as fetching a token. Without a timeout the
    group's ``timeout`` and retry options apply, which is what a background
    worker wants.
    """

    group = None
    service_type = None
    microversion = None
    error = exception.PeerError
    unavailable = exception.PeerUnavailable

    def __init__(self, timeout=None):
        self.timeout = timeout
        self._unusable = None
        try:
            # The microversion header names the service type, so never go
            # without one even if the option was emptied.
            self._adapter = load_adapter(
                CONF, self.group, timeout=timeout,
                service_type=CONF[self.group].service_type
                or self.service_type,
                default_microversion=self.microversion, raise_exc=False,
                client_name='reserveapi')
        except ks_exc.MissingRequiredOptions:
            # The plugin registered its options; name what is missing.
            self._unusable = credentials.describe_missing(
                self.group, credentials.missing_options(self.group))

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
