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

"""What both clients share: the adapter and error translation."""

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc

SERVICE_TYPE = 'reservation'
MICROVERSION = '1.0'
# Connection failures and 503s are retried: every call we make is safe to
# repeat (a repeated reservation returns the existing one).
CONNECT_RETRIES = 3
STATUS_CODE_RETRIES = 3


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
    """409: no valid node, another host's instance, a stale state."""


def make_adapter(session_or_adapter, **adapter_kwargs):
    if isinstance(session_or_adapter, ks_adapter.Adapter):
        return session_or_adapter
    adapter_kwargs.setdefault('service_type', SERVICE_TYPE)
    adapter_kwargs.setdefault('default_microversion', MICROVERSION)
    adapter_kwargs.setdefault('connect_retries', CONNECT_RETRIES)
    adapter_kwargs.setdefault('status_code_retries', STATUS_CODE_RETRIES)
    adapter_kwargs.setdefault('retriable_status_codes', [503])
    return ks_adapter.Adapter(session_or_adapter, **adapter_kwargs)


class BaseClient:

    def __init__(self, session_or_adapter, **adapter_kwargs):
        self.adapter = make_adapter(session_or_adapter, **adapter_kwargs)

    def request(self, method, url, **kwargs):
        """The decoded JSON body (None when there is none), or raise."""
        try:
            response = self.adapter.request(url, method, **kwargs)
        except ks_exc.HttpError as exc:
            raise _client_error(exc)
        return response.json() if response.content else None


def _client_error(exc):
    try:
        error = exc.response.json()['errors'][0]
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        error = {}
    status = exc.http_status
    cls = {404: NotFound, 409: Conflict}.get(status, ClientError)
    return cls(status, error.get('code'), error.get('detail', exc.message),
               error.get('request_id', exc.request_id))
