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

"""The service's domain vocabulary: states of reservations and of
mirrored memberships, and the Ironic provision state we reserve from.

Kept out of ``db/`` so that the API, the domain and the database all
name the same words without one importing the other.
"""

# Ironic's provision state of a node ready to be deployed: the only one
# a node is reserved from.
AVAILABLE = 'available'
# Ironic's stable provision states in which an ``instance_uuid`` is only
# a claim: nothing was deployed, so clearing it takes nothing from anyone.
UNDEPLOYED = frozenset((AVAILABLE, 'manageable', 'enroll'))

# Reservation states. Live reservations hold their node; expired ones
# are kept so that the host that held one can see why it is gone.
RESERVED = 'reserved'
ACTIVE = 'active'
EXPIRED = 'expired'
RESERVATION_STATES = (RESERVED, ACTIVE, EXPIRED)
LIVE = (RESERVED, ACTIVE)
PINNED = 'pinned'
"""A node set aside for an active hold until one of its project's
boots takes it: a reservation row, so that the node has one live row
like any reserved node, but no instance's and not in LIVE."""

# States of one host's desired membership of one mirrored aggregate.
PENDING = 'pending'
SYNCED = 'synced'
