"""Make the database's node table equal the inventory source."""

import hashlib
import json

from oslo_log import log

from reserveapi import conf as reserveapi_conf
from reserveapi.common import exception
from reserveapi.db import api as db_api
from reserveapi.inventory import file as file_source

LOG = log.getLogger(__name__)


def fingerprint(node):
    """A digest of everything we store about a node."""
    return hashlib.sha256(
        json.dumps(node, sort_keys=True).encode()).hexdigest()


def sync(conf=None):
    """Upsert the inventory; returns counts of what changed.

    The source is read and validated whole before anything is written,
    so a broken or unreadable inventory changes nothing and raises
    ``Invalid``.
    """
    conf = conf or reserveapi_conf.CONF
    try:
        nodes = file_source.load(conf.inventory.file)
    except OSError as exc:
        # Unreadable is as unusable as malformed: say so, change nothing.
        raise exception.Invalid(reason='cannot read the inventory: %s' % exc)
    counts = db_api.sync_nodes(
        nodes, {node['uuid']: fingerprint(node) for node in nodes})
    db_api.record_inventory_sync(conf.inventory.source, len(nodes))
    LOG.info('Inventory sync: %s', ', '.join(
        '%s %d' % item for item in sorted(counts.items())))
    if counts['flagged']:
        LOG.warning('%d reserved nodes vanished from the inventory; they '
                    'stay, flagged, until their reservations end.',
                    counts['flagged'])
    return counts


def last_sync(conf=None):
    """When the configured source was last synced completely (a record
    with ``source``, ``synced_at``, ``nodes``), or None.
    """
    conf = conf or reserveapi_conf.CONF
    return db_api.get_inventory_sync(conf.inventory.source)
