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
import threading
import typing

from reserveapi.common import exception
import reserveapi.conf
from reserveapi.inventory import file as file_source
from reserveapi.inventory import ironic

CONF = reserveapi.conf.CONF

_ironic = None
_ironic_lock = threading.Lock()


def ironic_source():
    """This process's Ironic source, shared by its threads: its clients
    (session, endpoint) are built once."""
    global _ironic
    with _ironic_lock:
        if _ironic is None:
            _ironic = ironic.IronicSource(CONF)
        return _ironic


def reset_source():
    """Forget the Ironic source, e.g. after ``[ironic]`` changed."""
    global _ironic
    with _ironic_lock:
        _ironic = None


def _check_file():
    try:
        nodes = file_source.load(CONF.inventory.file)
    except OSError as exc:
        return False, 'Cannot read [inventory] file %s: %s.' % (
            CONF.inventory.file, exc.strerror)
    except exception.Invalid as exc:
        return False, exc.detail
    return True, '%s lists %d nodes.' % (CONF.inventory.file, len(nodes))


def _check_ironic():
    source = ironic_source()
    try:
        source.check()
    except exception.IronicUnavailable as exc:
        return False, 'Cannot list Ironic nodes at microversion %s: %s' % (
            ironic.API_VERSION, exc.detail)
    return True, 'Ironic at %s lists nodes at microversion %s.' % (
        source.location, ironic.API_VERSION)


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
    check: typing.Callable[[], tuple[bool, str]]
    """Read it now, as ``reserveapi-status upgrade check`` does: whether
    the service can, and what it found or why not, in a sentence."""

    @property
    def claims_in_ironic(self):
        """Whether reservations claim their nodes in Ironic."""
        return self.takes_claims and CONF.ironic.claim_nodes


FILE = Source(name='file', incremental=False, released_nodes_stale=False,
              reconciled=False, takes_claims=False, check=_check_file)
IRONIC = Source(name=ironic.NAME, incremental=True,
                released_nodes_stale=True, reconciled=True,
                takes_claims=True, check=_check_ironic)

SOURCES = {source.name: source for source in (FILE, IRONIC)}
"""Every ``[inventory] source`` choice's Source (a test insists)."""


def configured():
    """The Source ``[inventory] source`` names."""
    return SOURCES[CONF.inventory.source]
