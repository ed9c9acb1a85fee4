"""Placement side of the aggregate mirror.

A provider's aggregates are changed one UUID at a time, guarded by the
provider generation: memberships that somebody else set (an operator, another
service, another aggregate of ours) always survive our writes.
"""

import time

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging

from reserveapi.common import exception
import reserveapi.conf

LOG = logging.getLogger(__name__)

PLACEMENT_MICROVERSION = '1.19'
"""Aggregates carry the provider generation from 1.19 on."""


class PeerError(exception.ReserveapiException):
    """Placement or Nova did not do what we asked: the change stays pending.

    The mirror never fails its caller for these; the worker retries.
    """

    status = 502
    code = 'reserveapi.peer_error'
    msg_fmt = 'A peer service failed: %(reason)s'


class PlacementError(PeerError):
    """Placement answered in a way we cannot act on (4xx, bad body...)."""

    code = 'reserveapi.placement_error'
    msg_fmt = 'Placement request failed: %(reason)s'


class PlacementUnavailable(PlacementError):
    """No answer in time: refused, timed out, no endpoint, or a 5xx."""

    status = 503
    code = 'reserveapi.placement_unavailable'
    msg_fmt = 'Placement is unavailable: %(reason)s'


class PlacementConflict(PlacementError):
    """The provider generation kept changing for every attempt we had."""

    code = 'reserveapi.placement_conflict'
    msg_fmt = ('Resource provider %(provider)s changed concurrently on each '
               'of %(attempts)d attempts.')


class ProviderGone(PlacementError):
    """The provider does not exist (deleted, or not created yet).

    Distinct from other errors because the cure is to resolve the host
    again, not to retry the same provider.
    """

    code = 'reserveapi.provider_gone'
    msg_fmt = 'Resource provider %(provider)s does not exist.'


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
    error = PeerError
    unavailable = PeerError

    def __init__(self, conf=reserveapi.conf.CONF, timeout=None):
        self.timeout = timeout
        auth = ks_loading.load_auth_from_conf_options(conf, self.group)
        session_overrides = {} if timeout is None else {'timeout': timeout}
        session = ks_loading.load_session_from_conf_options(
            conf, self.group, auth=auth, **session_overrides)
        # The microversion header names the service type, so never go
        # without one even if the option was emptied.
        service_type = conf[self.group].service_type or self.service_type
        self._adapter = ks_loading.load_adapter_from_conf_options(
            conf, self.group, session=session, auth=auth,
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
        try:
            response = self._adapter.request(path, method, **kwargs)
        except (ks_exc.ConnectionError, ks_exc.DiscoveryFailure,
                ks_exc.EndpointNotFound) as exc:
            raise self.unavailable(reason=str(exc))
        except ks_exc.ClientException as exc:
            raise self.error(reason='%s %s: %s' % (method, path, exc))
        if response.status_code >= 500:
            raise self.unavailable(reason=_describe(response))
        return response

    def _get_json(self, path, deadline, **kwargs):
        response = self._request('GET', path, deadline, **kwargs)
        if response.status_code != 200:
            raise self.error(reason=_describe(response))
        return response.json()


def _describe(response):
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


class PlacementClient(PeerClient):
    """Placement calls the mirror needs, from the ``[placement]`` group.

    Every method takes ``timeout`` (seconds, overriding the client's) so the
    API can apply ``[mirror] inline_timeout`` while the worker waits longer.
    """

    group = 'placement'
    service_type = 'placement'
    microversion = PLACEMENT_MICROVERSION
    error = PlacementError
    unavailable = PlacementUnavailable

    def __init__(self, conf=reserveapi.conf.CONF, timeout=None):
        super().__init__(conf=conf, timeout=timeout)
        self.generation_retries = conf.mirror.generation_retries

    def providers_named(self, name, timeout=None):
        """Providers whose name is exactly ``name``: uuid, name, generation."""
        body = self._get_json('/resource_providers',
                              self._deadline(timeout), params={'name': name})
        return [{'uuid': rp['uuid'], 'name': rp['name'],
                 'generation': rp['generation']}
                for rp in body['resource_providers']]

    def aggregate_providers(self, aggregate_uuid, timeout=None):
        """UUIDs of the providers directly in ``aggregate_uuid``."""
        body = self._get_json('/resource_providers', self._deadline(timeout),
                              params={'member_of': aggregate_uuid})
        return {rp['uuid'] for rp in body['resource_providers']}

    def get_aggregates(self, rp_uuid, timeout=None):
        """(aggregate UUIDs, provider generation) of one provider."""
        return self._aggregates(rp_uuid, self._deadline(timeout))

    def add_aggregate(self, rp_uuid, aggregate_uuid, timeout=None):
        """Make the provider a member; True if Placement had to change."""
        return self._change(rp_uuid, aggregate_uuid, True,
                            self._deadline(timeout))

    def remove_aggregate(self, rp_uuid, aggregate_uuid, timeout=None):
        """End the provider's membership; True if Placement had to change."""
        return self._change(rp_uuid, aggregate_uuid, False,
                            self._deadline(timeout))

    def _aggregates_path(self, rp_uuid):
        return '/resource_providers/%s/aggregates' % rp_uuid

    def _aggregates(self, rp_uuid, deadline):
        response = self._request('GET', self._aggregates_path(rp_uuid),
                                 deadline)
        if response.status_code == 404:
            raise ProviderGone(provider=rp_uuid)
        if response.status_code != 200:
            raise PlacementError(reason=_describe(response))
        body = response.json()
        return set(body['aggregates']), body['resource_provider_generation']

    def _change(self, rp_uuid, aggregate_uuid, member, deadline):
        """Read, edit only ``aggregate_uuid``, write with the generation.

        A 409 means someone changed the provider between our read and our
        write: read again and re-apply, so their change survives too.
        """
        for attempt in range(1, self.generation_retries + 1):
            current, generation = self._aggregates(rp_uuid, deadline)
            if member:
                wanted = current | {aggregate_uuid}
            else:
                wanted = current - {aggregate_uuid}
            if wanted == current:
                return False
            response = self._request(
                'PUT', self._aggregates_path(rp_uuid), deadline,
                json={'aggregates': sorted(wanted),
                      'resource_provider_generation': generation})
            if response.status_code == 200:
                LOG.info('%(action)s aggregate %(aggregate)s on resource '
                         'provider %(provider)s.',
                         {'action': 'Added' if member else 'Removed',
                          'aggregate': aggregate_uuid,
                          'provider': rp_uuid})
                return True
            if response.status_code == 404:
                raise ProviderGone(provider=rp_uuid)
            if response.status_code != 409:
                raise PlacementError(reason=_describe(response))
            LOG.debug('Resource provider %(provider)s changed under us '
                      '(attempt %(attempt)d of %(attempts)d): %(detail)s',
                      {'provider': rp_uuid, 'attempt': attempt,
                       'attempts': self.generation_retries,
                       'detail': _describe(response)})
        raise PlacementConflict(provider=rp_uuid,
                                attempts=self.generation_retries)
