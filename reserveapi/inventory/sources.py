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

"""The inventory sources, and what the rest of the service does
differently by source: each question is answered here, by the source
``[inventory] source`` names, rather than by comparing that option's
value where the question comes up.
"""

import dataclasses

import reserveapi.conf
from reserveapi.inventory import ironic

CONF = reserveapi.conf.CONF


@dataclasses.dataclass(frozen=True)
class Source:
    """One kind of inventory source."""

    name: str
    """Its ``[inventory] source`` value, and its row in
    ``inventory_syncs``."""
    incremental: bool
    """Read a change at a time, one process at a time under a lease (a
    service); otherwise a document, read whole at every pass."""
    released_nodes_stale: bool
    """A node a reservation leaves is offered again only once a sync has
    read it again (Ironic may be cleaning it)."""
    reconciled: bool
    """The worker's ironic-reconcile checks our reservations against
    it."""
    takes_claims: bool
    """A reservation may also claim its node in it, with ``[ironic]
    claim_nodes``."""

    @property
    def claims_in_ironic(self):
        """Whether reservations claim their nodes in Ironic."""
        return self.takes_claims and CONF.ironic.claim_nodes


FILE = Source(name='file', incremental=False, released_nodes_stale=False,
              reconciled=False, takes_claims=False)
IRONIC = Source(name=ironic.NAME, incremental=True,
                released_nodes_stale=True, reconciled=True,
                takes_claims=True)

SOURCES = {source.name: source for source in (FILE, IRONIC)}
"""Every ``[inventory] source`` choice's Source (a test insists)."""


def configured():
    """The Source ``[inventory] source`` names."""
    return SOURCES[CONF.inventory.source]
