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

"""Make the database's node table equal the inventory source.

``file``: the document is validated a chunk at a time while the last
chunk is written, all in one transaction, so a broken document changes
nothing; the same document again, on a table nobody changed since, is
not even parsed.

``ironic``: a full pass reads every node a page at a time and writes
each page as it comes (the next one is fetched meanwhile), then removes
the nodes it did not see; an incremental pass reads only what changed
since the watermark (Ironic's clock, less ``[inventory] sync_margin``)
and re-reads the nodes waiting for a fresh read (released, or refused by
Ironic). One worker syncs at a time, by a lease in the database; an
Ironic outage keeps the inventory, is noted in the database (so the API
shows it) and logged once, whichever process saw it first.
"""

import collections
import datetime
import hashlib
import json
import queue
import threading
import time

from oslo_log import log
from oslo_utils import timeutils

from reserveapi import notifications
from reserveapi.common import collector
from reserveapi.common import exception
from reserveapi.common import heartbeat
from reserveapi.common import metrics
import reserveapi.conf
from reserveapi.db import counters as db_counters
from reserveapi.db import derived
from reserveapi.db import inventory as db_inventory
from reserveapi.db import node_sync
from reserveapi.db import nodes as db_nodes
from reserveapi.inventory import file as file_source
from reserveapi.inventory import ironic
from reserveapi.inventory import sources

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF

LEASE_WAIT = 1.0
"""Seconds between two attempts of ``sync-nodes`` to take the lease."""

WAIT_SECONDS = 600
"""How long ``sync-nodes`` waits for another process's pass to end."""

STALE_REREADS = 200
"""Nodes waiting for a fresh read that one incremental pass re-reads one
by one; the rest wait for the next pass."""

REPAIR_WINDOW = 2000
"""Nodes whose derived rows each pass checks (reserveapi/db/derived.py):
a few milliseconds per thousand nodes, on top of a pass that changed
nothing."""

_repair_after = 0


def fingerprint(node):
    """A digest of everything we store about a node."""
    return hashlib.sha256(
        json.dumps(node, sort_keys=True).encode()).hexdigest()


def _fingerprints(nodes):
    return {node['uuid']: fingerprint(node) for node in nodes}


def sync(full=True, wait=True):
    """One pass over the configured source; returns counts of what
    changed.

    With ``source = ironic``: ``full=False`` reads only what changed,
    unless ``[inventory] full_sync_interval`` asks for a full pass;
    ``wait`` waits for another process's pass to end instead of raising
    ``SyncInProgress``.

    :raises: Invalid when the file cannot be read or used;
        IronicUnavailable when Ironic cannot be read (noted, logged once
        per outage, nothing removed); SyncInProgress.
    """
    with collector.fewer_collections():
        if sources.configured().incremental:
            counts = _sync_ironic(full, wait)
        else:
            counts = _sync_file()
    repair_derived()
    return counts


def repair_derived():
    """Check the derived rows of the next ``REPAIR_WINDOW`` nodes, and
    the counters once the window wraps around, repairing what disagrees
    with its source. A node the sync finds unchanged is not rewritten,
    so rows an older version's writer left wrong are found here, a
    window per pass, however long the inventory stays the same. First
    the counts a bulk write appended are folded into the counters
    (db/counters.py).
    """
    global _repair_after
    db_counters.fold()
    results, _repair_after = derived.check_nodes(
        _repair_after, REPAIR_WINDOW, repair=True)
    if _repair_after is None:
        results['summary counters'] = derived.check_counters(repair=True)
        _repair_after = 0
    fixed = ['%d %s' % (found.fixed, name)
             for name, found in results.items() if found.fixed]
    if fixed:
        LOG.warning('Repaired derived rows that disagreed with their '
                    'source: %s.', ', '.join(fixed))


def sync_changes():
    """The worker's periodic pass: what changed, or everything when a
    full pass is due. Another worker's pass in progress, or Ironic down
    (already logged once), is no error to report again.
    """
    try:
        return sync(full=False, wait=False)
    except exception.SyncInProgress:
        LOG.debug('Another process is syncing the inventory.')
    except exception.IronicUnavailable:
        pass
    return None


def _sync_file():
    """The document, validated as it is written, all in one transaction
    (an invalid entry changes nothing); one already applied to a table
    nobody changed since is not even parsed."""
    started = timeutils.utcnow()
    began = time.monotonic()
    path = CONF.inventory.file
    try:
        document = file_source.Document(path)
    except OSError as exc:
        raise _unreadable(exc)
    state = db_inventory.get_inventory_sync(CONF.inventory.source)
    counts = None
    if state is not None and state.document_digest == document.digest:
        counts = node_sync.confirm_unchanged(state.nodes_digest)
    if counts is None:
        try:
            counts, table_digest = node_sync.sync_nodes(
                lambda: _prefetched((chunk, _fingerprints(chunk))
                                    for chunk in document.chunks()))
        except OSError as exc:
            # Read as it is parsed: gone or unreadable since its digest.
            raise _unreadable(exc)
    else:
        table_digest = state.nodes_digest
    db_inventory.record_inventory_sync(
        CONF.inventory.source, counts['added'] + counts['updated']
        + counts['unchanged'], started, location=path,
        digests=(document.digest, table_digest))
    _log(counts, 'Inventory sync')
    metrics.sync_observed(CONF.inventory.source, 'full',
                          time.monotonic() - began, counts)
    notifications.inventory_synced(CONF.inventory.source, True, counts)
    return counts


def _unreadable(error):
    """Unreadable is as unusable as malformed: say so, change nothing."""
    return exception.Invalid(reason='cannot read the inventory: %s' % error)


def _sync_ironic(full, wait):
    """One pass under the sync lease, which a heartbeat keeps short-lived:
    a worker killed mid-pass blocks no other for more than
    ``heartbeat.SECONDS``."""
    source = sources.ironic_source()
    holder = heartbeat.holder()
    _take_lease(holder, wait)
    keeper = heartbeat.Heartbeat(
        lambda: db_inventory.take_sync_lease(ironic.NAME, holder,
                                             heartbeat.SECONDS),
        name='inventory-sync')
    try:
        with keeper:
            state = db_inventory.get_inventory_sync(ironic.NAME)
            full = full or _full_pass_due(state)
            started = timeutils.utcnow()
            began = time.monotonic()
            try:
                if full:
                    counts, watermark = _full_pass(source, keeper)
                else:
                    counts, watermark = _incremental_pass(source, state,
                                                         keeper)
            except exception.IronicUnavailable as error:
                note_outage(error)
                raise
            _still_ours(keeper)
            outage = db_inventory.record_inventory_sync(
                ironic.NAME, db_nodes.count_nodes(), started, full=full,
                watermark=watermark, location=source.location)
    finally:
        db_inventory.drop_sync_lease(ironic.NAME, holder)
    if outage is not None:
        LOG.warning('Ironic is reachable again; it was not since %s.',
                    outage)
        notifications.ironic_reachable(outage)
    kind = 'full' if full else 'incremental'
    _log(counts, 'Ironic %s sync' % kind)
    metrics.sync_observed(ironic.NAME, kind, time.monotonic() - began,
                          counts)
    notifications.inventory_synced(ironic.NAME, full, counts)
    return counts


def _take_lease(holder, wait):
    deadline = time.monotonic() + WAIT_SECONDS
    while not db_inventory.take_sync_lease(ironic.NAME, holder,
                                           heartbeat.SECONDS):
        if not wait or time.monotonic() > deadline:
            raise exception.SyncInProgress()
        time.sleep(LEASE_WAIT)


def _still_ours(keeper):
    """Another process took the sync over (we stalled past the lease):
    stop before our older pages overwrite its newer ones."""
    if not keeper.held():
        raise exception.SyncInProgress()


def _full_pass_due(state):
    interval = CONF.inventory.full_sync_interval
    if (state is None or state.watermark is None
            or state.full_synced_at is None or not interval):
        return True
    age = timeutils.utcnow() - state.full_synced_at
    return age >= datetime.timedelta(seconds=interval)


def _full_pass(source, keeper):
    """Every node, then away with what Ironic no longer lists."""
    watermark = source.newest_change()
    counts = collections.Counter()
    seen = set()
    # Digests are taken in the reading thread too, while the last page
    # is being written.
    for page, fingerprints in _prefetched(
            (page, _fingerprints(page.nodes))
            for page in source.full_pages()):
        counts.update(node_sync.upsert_nodes(page.nodes, fingerprints,
                                             page.read_at))
        seen.update(node['uuid'] for node in page.nodes)
        seen.update(page.skipped)
        _still_ours(keeper)
    counts.update(node_sync.remove_missing(seen))
    if node_sync.worth_analyzing(counts):
        node_sync.analyze()
    return counts, watermark


def _incremental_pass(source, state, keeper):
    """What changed since the watermark, and the nodes waiting to be
    read again; returns the new watermark."""
    since = state.watermark - datetime.timedelta(
        seconds=CONF.inventory.sync_margin)
    newest = state.watermark
    counts = collections.Counter()
    read = set()
    for page in source.changed_pages(since):
        _still_ours(keeper)
        counts.update(write(page))
        read.update(node['uuid'] for node in page.nodes)
        if page.newest is not None:
            newest = max(newest, page.newest)
    for uuid in db_nodes.list_stale(STALE_REREADS):
        if uuid not in read:
            page = source.get_node(uuid)
            _still_ours(keeper)
            counts.update(write(page))
    if node_sync.worth_analyzing(counts):
        node_sync.analyze()
    return counts, newest


def write(page):
    """Write one page read from Ironic; returns counts.

    :raises: DBError
    """
    return node_sync.upsert_nodes(page.nodes, _fingerprints(page.nodes),
                                  page.read_at)


def _prefetched(pages):
    """``pages`` (a generator: Ironic's pages, or a document's chunks),
    each read while the previous one is written: a thread reads at most
    one page ahead, so memory holds two pages.
    """
    ahead = queue.Queue(maxsize=1)
    done = object()
    stop = threading.Event()

    def read():
        try:
            for page in pages:
                ahead.put(page)
                if stop.is_set():
                    pages.close()
                    return
            ahead.put(done)
        except BaseException as error:  # noqa: B036 - handed over
            ahead.put(error)

    reader = threading.Thread(target=read, name='ironic-pages', daemon=True)
    reader.start()
    try:
        while True:
            item = ahead.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while reader.is_alive():
            try:
                ahead.get(timeout=0.1)
            except queue.Empty:
                pass


def note_outage(error):
    """Note that Ironic cannot be read; log it once per outage."""
    try:
        began = db_inventory.note_outage(ironic.NAME, error.detail)
    except Exception:  # the outage is what matters here
        LOG.debug('Could not note the Ironic outage', exc_info=True)
        began = True  # say it at least here
    if began:
        LOG.error('Ironic is unreachable: %s. The inventory keeps what was '
                  'last synced; reservations that claim nodes in Ironic '
                  'fail with 503 until it is back.', error.detail)
        notifications.ironic_unreachable(error.detail)
    else:
        LOG.debug('Ironic is still unreachable: %s', error.detail)


def _log(counts, what):
    LOG.info('%s: %s', what, ', '.join(
        '%s %d' % item for item in sorted(counts.items())))
    if counts.get('flagged'):
        LOG.warning('%d reserved nodes vanished from the inventory; they '
                    'stay, flagged, until their reservations end.',
                    counts['flagged'])


def last_sync():
    """When the configured source was last synced completely (a record
    with ``source``, ``synced_at``, ``nodes``, ...), or None.
    """
    state = db_inventory.get_inventory_sync(CONF.inventory.source)
    return state if state is not None and state.synced_at else None

