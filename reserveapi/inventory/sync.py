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

"""Make the database's node table equal the inventory source."""

import hashlib
import json

from oslo_log import log

from reserveapi.common import exception
import reserveapi.conf
from reserveapi.db import nodes as db_nodes
from reserveapi.inventory import file as file_source

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF


def fingerprint(node):
    """A digest of everything we store about a node."""
    return hashlib.sha256(
        json.dumps(node, sort_keys=True).encode()).hexdigest()


def sync():
    """Upsert the inventory; returns counts of what changed.

    The source is read and validated whole before anything is written,
    so a broken or unreadable inventory changes nothing and raises
    ``Invalid``.

    :raises: Invalid when the inventory cannot be read or used.
    """
    try:
        nodes = file_source.load(CONF.inventory.file)
    except OSError as exc:
        # Unreadable is as unusable as malformed: say so, change nothing.
        raise exception.Invalid(reason='cannot read the inventory: %s' % exc)
    counts = db_nodes.sync_nodes(
        nodes, {node['uuid']: fingerprint(node) for node in nodes})
    db_nodes.record_inventory_sync(CONF.inventory.source, len(nodes))
    LOG.info('Inventory sync: %s', ', '.join(
        '%s %d' % item for item in sorted(counts.items())))
    if counts['flagged']:
        LOG.warning('%d reserved nodes vanished from the inventory; they '
                    'stay, flagged, until their reservations end.',
                    counts['flagged'])
    return counts


def last_sync():
    """When the configured source was last synced completely (a record
    with ``source``, ``synced_at``, ``nodes``), or None.
    """
    return db_nodes.get_inventory_sync(CONF.inventory.source)
