"""Thin HTTP clients for nova-compute's Ironic driver, nova-api's aggregate
hooks and operators.

Both take a keystoneauth1 session (or an adapter), so they authenticate
like any other OpenStack client and find the service in the catalog
under the ``reservation`` service type::

    from keystoneauth1 import loading
    session = loading.load_session_from_conf_options(conf, 'reservation',
                                                     auth=auth)
    client = ReservationClient(session)
    reservation = client.reserve(instance.uuid, CONF.host, request_spec)

Errors become ``ClientError`` subclasses carrying the service's stable
error ``code`` and request id: ``NoValidNode`` (a ``Conflict`` whose
``detail`` counts what each criterion eliminated), ``Conflict``,
``NotFound``, and ``ServiceUnavailable`` when the service cannot be
reached or answers 502/503/504 after the retries, which only idempotent
calls get.
"""

from reserveapi.client.aggregates import AggregateMirrorClient
from reserveapi.client.base import ClientError
from reserveapi.client.base import Conflict
from reserveapi.client.base import NotFound
from reserveapi.client.base import NoValidNode
from reserveapi.client.base import ServiceUnavailable
from reserveapi.client.reservations import ReservationClient

__all__ = ['AggregateMirrorClient', 'ClientError', 'Conflict', 'NotFound',
           'NoValidNode', 'ReservationClient', 'ServiceUnavailable']
