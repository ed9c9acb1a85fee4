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


"""The plugin module openstackclient loads (``openstack.cli.extension``).

It adds ``--os-baremetal-reservation-api-version`` and builds the clients of
``reserveapi.client`` on the session openstackclient made, so every
``--os-*`` authentication option works, and so does a service without
Keystone::

    openstack --os-auth-type none --os-endpoint http://127.0.0.1:6390 \\
        baremetal reservation list

(with auth type ``none`` the endpoint comes from ``--os-endpoint``;
otherwise from the catalog, service type ``baremetal-reservation``, or
``baremetal_reservation_endpoint_override`` in clouds.yaml).

Our names are our own, beside Blazar's (API ``reservation``, option
``--os-reservation-api-version``, commands ``openstack reservation ...``)
and python-ironicclient's (``baremetal``, ``openstack baremetal ...``), as
ironic-inspector's ``baremetal_introspection`` is.
"""

import logging

from osc_lib import utils

from reserveapi import client
from reserveapi.client import base as client_base

LOG = logging.getLogger(__name__)

API_NAME = 'baremetal_reservation'
API_VERSION_OPTION = 'os_baremetal_reservation_api_version'
KNOWN_VERSIONS = ('1.0', '1.1', '1.2', '1.3', '1.4', '1.5', '1.6')
"""The microversions whose answers these commands can show."""
LATEST_KNOWN_VERSION = KNOWN_VERSIONS[-1]
API_VERSIONS = ('1',) + KNOWN_VERSIONS
"""``1`` means the newest we know."""
DEFAULT_API_VERSION = '1'


class Clients:
    """What ``client_manager.baremetal_reservation`` is: one client per
    resource, sharing one keystoneauth1 adapter.
    """

    def __init__(self, adapter):
        self.reservations = client.ReservationClient(adapter)
        self.holds = client.HoldClient(adapter)
        self.nodes = client.NodeClient(adapter)
        self.aggregates = client.AggregateMirrorClient(adapter)


def microversion(requested):
    return LATEST_KNOWN_VERSION if requested == '1' else requested


def make_client(instance):
    """Called by openstackclient the first time a command needs us."""
    version = microversion(instance._api_version[API_NAME])
    region_name = instance.region_name
    endpoint = instance.get_endpoint_for_service_type(
        client_base.SERVICE_TYPE, region_name=region_name,
        interface=instance.interface)
    LOG.debug('Bare metal reservation API %s at %s', version, endpoint)
    adapter = client_base.make_adapter(
        instance.session, interface=instance.interface,
        region_name=region_name, endpoint_override=endpoint,
        default_microversion=version)
    return Clients(adapter)


def build_option_parser(parser):
    """Add ``--os-baremetal-reservation-api-version`` to openstack's
    options.
    """
    parser.add_argument(
        '--os-baremetal-reservation-api-version',
        metavar='<baremetal-reservation-api-version>',
        default=utils.env('OS_BAREMETAL_RESERVATION_API_VERSION',
                          default=DEFAULT_API_VERSION),
        help='Bare metal reservation API microversion, default=%s (the '
             'newest these commands know, %s). (Env: '
             'OS_BAREMETAL_RESERVATION_API_VERSION)'
             % (DEFAULT_API_VERSION, LATEST_KNOWN_VERSION))
    return parser
