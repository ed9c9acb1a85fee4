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

"""Thin HTTP clients for nova-compute's Ironic driver, nova-api's aggregate
hooks and operators.

Both take a keystoneauth1 session (or an adapter), so they authenticate
like any other OpenStack client and find the service in the catalog
under the ``baremetal-reservation`` service type::

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
from reserveapi.client.holds import HoldClient
from reserveapi.client.nodes import NodeClient
from reserveapi.client.reservations import ReservationClient

__all__ = ['AggregateMirrorClient', 'ClientError', 'Conflict', 'HoldClient',
           'NodeClient', 'NotFound', 'NoValidNode', 'ReservationClient',
           'ServiceUnavailable']
