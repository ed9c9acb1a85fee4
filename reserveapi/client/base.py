"""What the clients share: the adapter, error translation, pages."""

import urllib.parse

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
    cls = {404: NotFound, 409: Conflict}.get(status, ClientError)
    return cls(status, error.get('code'), error.get('detail', exc.message),
               error.get('request_id', exc.request_id))
