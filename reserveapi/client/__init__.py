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
error ``code`` (``reserveapi.no_valid_node``, ...) and request id.
"""

from reserveapi.client.aggregates import AggregateMirrorClient
from reserveapi.client.base import ClientError
from reserveapi.client.base import Conflict
from reserveapi.client.base import NotFound
from reserveapi.client.nodes import NodeClient
from reserveapi.client.reservations import ReservationClient

__all__ = ['AggregateMirrorClient', 'ClientError', 'Conflict', 'NodeClient',
           'NotFound', 'ReservationClient']
