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

"""Writing the inventory into the nodes table.

Whole, in one transaction (``sync_nodes``: the file source, validated
as it is written, a chunk read while the last is written), or a page at
a time (``upsert_nodes``, then
``remove_missing`` once a full pass has read every page: the Ironic
source, so that 100,000 nodes never sit in memory nor in one
transaction). Either way an unchanged node costs a fingerprint
comparison; changed and new ones are written in bulk: one upsert per
chunk (``INSERT … ON CONFLICT`` on PostgreSQL and SQLite, ``ON DUPLICATE
KEY UPDATE`` on MariaDB/MySQL), never a statement per node.
"""

import collections
import dataclasses
import hashlib

from oslo_utils import timeutils
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from reserveapi.db import base
from reserveapi.db import counters
from reserveapi.db import documents
from reserveapi.db import matching
from reserveapi.db import models
from reserveapi.db import node_texts
from reserveapi.db import nodes as db_nodes
from reserveapi.db import records

_CHILDREN_CHUNK = 5000
ANALYZE_AFTER_UPDATES = 1000
"""Updated rows (no row added or removed) worth fresh planner statistics."""


@dataclasses.dataclass
class _SyncPlan:
    """What a sync changes: the diff of the inventory and the table."""

    updated: list        # (node id, node dict)
    added: list          # node dicts
    removed: list        # node ids no reservation holds
    flagged: list        # node ids a reservation holds: kept, vanished
    unchanged: int

    def counts(self):
        return {'added': len(self.added), 'updated': len(self.updated),
                'unchanged': self.unchanged, 'removed': len(self.removed),
                'flagged': len(self.flagged)}


def worth_analyzing(counts):
    """Whether a sync changed the tables enough for new statistics."""
    return bool(counts.get('added') or counts.get('removed')
                or counts.get('updated', 0) >= ANALYZE_AFTER_UPDATES)


@base.retrying()
def sync_nodes(read, now=None):
    """Make the nodes table equal the inventory ``read()`` yields: pairs
    of a list of normalized inventory dicts and their fingerprints (each
    uuid's digest of its dict, so that an unchanged node costs one
    comparison). ``read`` is called again should the transaction be
    retried; each pair is written as it comes (the next may be read
    meanwhile), all in one transaction: an error raised by ``read``
    changes nothing.

    A vanished node with a live reservation is flagged ``vanished``
    instead of being dropped. Returns counts, and the digest of the table
    it leaves (see ``confirm_unchanged``).

    :raises: DBError, or what ``read`` raises
    """
    now = now or timeutils.utcnow()
    counts = collections.Counter()
    with base.writer() as session:
        existing = _existing(session)
        for nodes, fingerprints in read():
            # Each node read leaves ``existing``: what stays is gone from
            # the inventory, and memory holds no second set of uuids.
            plan = _diff(existing, nodes, fingerprints)
            _write(session, plan, fingerprints, now)
            counts.update(plan.counts())
        plan = _SyncPlan(updated=[], added=[], removed=[], flagged=[],
                         unchanged=0)
        _plan_removal(session, plan, existing, ())
        _remove(session, plan.removed, plan.flagged, now)
        counts.update(plan.counts())
        # Everything was just read again (another source's marks too).
        _clear_stale(session, None)
        db_nodes.refresh_flags(session)
        digest = _table_digest(session)
    if worth_analyzing(counts):
        analyze()
    return dict(counts), digest


@base.retrying()
def confirm_unchanged(digest):
    """The sync of a document already applied: if the table is still
    what that sync left (``digest``, as ``sync_nodes`` returned it) and
    no vanished node has lost its reservation since, it only clears the
    stale marks, as a sync does, and returns counts; otherwise None, and
    the caller syncs in full.

    :raises: DBError
    """
    node = models.Node
    with base.writer() as session:
        if _table_digest(session) != digest or session.scalar(
                sa.select(sa.func.count()).select_from(node).where(
                    node.vanished.is_(True),
                    sa.not_(matching.has_live_reservation()))):
            return None
        db_nodes.refresh_flags(session, _clear_stale(session, None))
        unchanged = session.scalar(sa.select(sa.func.count()).select_from(
            node).where(node.vanished.is_(False)))
    return {'added': 0, 'updated': 0, 'unchanged': unchanged, 'removed': 0,
            'flagged': 0}


def _table_digest(session):
    """A digest of every node's fingerprint and vanished flag: equal
    digests, equal tables (but for derived flags and stale marks).

    PostgreSQL and MariaDB/MySQL add it up themselves: the number of
    rows and the sum of a 60-bit hash of each row's fingerprint (twice,
    plus its vanished flag), which any change of a row changes. A million
    rows sent to be digested here took 10 s through PyMySQL. SQLite's
    rows are read here, sorted and hashed.
    """
    node = models.Node
    dialect = session.get_bind().dialect.name
    if dialect in _ROW_HASH:
        row_hash = _ROW_HASH[dialect](node.fingerprint)
        count, total = session.execute(sa.select(
            sa.func.count(), sa.func.coalesce(sa.func.sum(
                2 * row_hash + sa.case((node.vanished, 1), else_=0)), 0)
        )).one()
        lines = ['%d %d\n' % (count, total)]
    else:
        lines = sorted('%s %d\n' % (fingerprint, vanished)
                       for fingerprint, vanished in session.execute(
                           sa.select(node.fingerprint, node.vanished),
                           execution_options=_STREAMED))
    return hashlib.sha256(''.join(lines).encode()).hexdigest()


def _md5_head(fingerprint):
    """The first 15 hexadecimal digits of the MD5 of a fingerprint (any
    text, a hand-edited one included; '' for none), in SQL."""
    return sa.func.substr(sa.func.md5(sa.func.coalesce(fingerprint, '')),
                          1, 15)


# _md5_head as an integer, in SQL.
_ROW_HASH = {
    'postgresql': lambda fingerprint: sa.cast(sa.cast(
        sa.func.concat('x', _md5_head(fingerprint)),
        postgresql.BIT(60)), sa.BigInteger),
    'mysql': lambda fingerprint: sa.cast(sa.func.conv(
        _md5_head(fingerprint), 16, 10), sa.BigInteger),
}


@base.retrying(duplicates=True)
def upsert_nodes(nodes, fingerprints, read_at, now=None):
    """Write one page of nodes read from the source at ``read_at``.

    Nothing is removed here (see ``remove_missing``). A node marked stale
    before ``read_at`` is what was just read again: the mark goes. Returns
    counts of ``added``, ``updated``, ``unchanged`` and ``refreshed``
    (stale marks cleared). A page where nothing changed is only read: no
    write transaction, no commit to wait for.

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    with base.reader() as session:
        plan, refreshed = _page_plan(session, nodes, fingerprints, read_at)
    if plan.updated or plan.added or refreshed:
        with base.writer() as session:
            # Read again under the write lock: the plan must be current.
            plan, refreshed = _page_plan(session, nodes, fingerprints,
                                         read_at)
            written_ids = _write(session, plan, fingerprints, now)
            _clear_stale(session, read_at, refreshed)
            db_nodes.refresh_flags(session, sorted(
                set(refreshed) | set(written_ids)))
    counts = plan.counts()
    del counts['removed'], counts['flagged']
    counts['refreshed'] = len(refreshed)
    return counts


def _page_plan(session, nodes, fingerprints, read_at):
    """What writing a page changes, and which stale marks it clears."""
    existing = {}
    for uuids in base.chunks([node['uuid'] for node in nodes]):
        existing.update((row.uuid, row) for row in session.execute(
            sa.select(*_DIFF_COLUMNS).where(models.Node.uuid.in_(uuids))))
    refreshed = [row.id for row in existing.values()
                 if row.stale_since is not None
                 and row.stale_since < read_at]
    return _diff(existing, nodes, fingerprints), refreshed


@base.retrying()
def remove_missing(seen_uuids, now=None):
    """After a pass that read every node: drop each node not in
    ``seen_uuids`` unless a live reservation holds it (that one is
    flagged ``vanished`` and kept). Returns ``removed`` and ``flagged``.

    :raises: DBError
    """
    now = now or timeutils.utcnow()
    plan = _SyncPlan(updated=[], added=[], removed=[], flagged=[],
                     unchanged=0)
    with base.writer() as session:
        existing = _existing(session)
        _plan_removal(session, plan, existing, seen_uuids)
        _remove(session, plan.removed, plan.flagged, now)
        db_nodes.refresh_flags(session, plan.flagged)
    return {'removed': len(plan.removed), 'flagged': len(plan.flagged)}


_DIFF_COLUMNS = (models.Node.id, models.Node.uuid, models.Node.fingerprint,
                 models.Node.vanished, models.Node.stale_since)
_STREAMED = {'stream_results': True, 'yield_per': 10000}
"""A read of every node, a batch of rows at a time: the driver holds no
second copy of the whole table (PyMySQL buffers a result whole, a
million rows' tuples beside the rows made of them)."""


def _existing(session):
    """Every node's row of _DIFF_COLUMNS, by uuid."""
    return {row.uuid: row for row in session.execute(
        sa.select(*_DIFF_COLUMNS), execution_options=_STREAMED)}


def _diff(existing, nodes, fingerprints):
    """Which of ``nodes`` are new, changed or unchanged; the rows of
    ``existing`` (by uuid) they match are taken out of it."""
    plan = _SyncPlan(updated=[], added=[], removed=[], flagged=[],
                     unchanged=0)
    for node in nodes:
        row = existing.pop(node['uuid'], None)
        if row is None:
            plan.added.append(node)
        elif row.fingerprint == fingerprints[node['uuid']] and not (
                row.vanished):
            plan.unchanged += 1
        else:
            plan.updated.append((row.id, node))
    return plan


def _plan_removal(session, plan, existing, wanted_uuids):
    """Rows no longer in the inventory: removed, or flagged if held."""
    gone = [row for uuid, row in existing.items() if uuid not in wanted_uuids]
    reserved_ids = set()
    for ids in base.chunks([row.id for row in gone]):
        reserved_ids.update(session.scalars(
            sa.select(models.Reservation.active_node_id).where(
                models.Reservation.active_node_id.in_(ids))))
    for row in gone:
        if row.id not in reserved_ids:
            plan.removed.append(row.id)
        elif not row.vanished:
            plan.flagged.append(row.id)


def _columns(node):
    """A node's row: its inventory columns, and its traits and
    capabilities as the texts matching reads (see node_texts)."""
    return dict({column: node[column] for column in records.NODE_COLUMNS},
                traits_text=node_texts.traits_text(node['traits']),
                capabilities_text=node_texts.capabilities_text(
                    node['capabilities']))


_UPSERT_CHUNK = 500
"""Rows per upsert on SQLite: 23 columns each, under its limit of bound
parameters in one statement. On PostgreSQL and MariaDB/MySQL the rows
are one document (see documents.rows_source): on PostgreSQL a write is
then one statement per table, whatever its length (each statement's
triggers write a version of the same summary counter rows, which the
transaction cannot prune, and each next upsert walks them all: a
million nodes in 500-row statements cost their square); on
MariaDB/MySQL one statement per ``_JSON_CHUNK`` rows, well under the
server's default packet size (16 MB)."""
_JSON_CHUNK = 5000


def _statement_chunks(session, rows, size):
    """``rows`` in the slices one statement writes: of at most ``size``
    on SQLite, ``_JSON_CHUNK`` on MariaDB/MySQL, whole on PostgreSQL."""
    dialect = session.get_bind().dialect.name
    if dialect == 'postgresql':
        return [rows] if rows else []
    return base.chunks(rows, _JSON_CHUNK if dialect == 'mysql' else size)


def _write(session, plan, fingerprints, now):
    """Insert the new nodes and rewrite the changed ones, then their
    traits and capabilities; returns the ids of every node written.

    Upserts rather than an UPDATE per changed row: psycopg2 sends an
    UPDATE executemany one row at a time, while an upsert is one
    statement per chunk for new and changed nodes alike.
    """
    nodes = plan.added + [node for _node_id, node in plan.updated]
    if not nodes:
        return []
    same = {'vanished': False, 'synced_at': now, 'created_at': now,
            'updated_at': None}
    ids = {}
    updated_ids = [node_id for node_id, _node in plan.updated]
    with counters.counted_by_statement(session, updated_ids) as inserted:
        for chunk in _statement_chunks(session, nodes, _UPSERT_CHUNK):
            ids.update(_upsert(session, [
                dict(_columns(node), fingerprint=fingerprints[node['uuid']])
                for node in chunk], same))
        inserted.extend(ids.values())
        _replace_children(session, updated_ids,
                          [(ids[node['uuid']], node) for node in nodes])
        if counters.by_statement(session):
            # The changed nodes' flags in the window too, counted once as
            # written (a new node's are right as inserted).
            db_nodes.refresh_flags(session, updated_ids)
    return list(ids.values())


def _upsert(session, rows, same):
    """Write node rows (dicts of the same columns), each with the values
    of ``same`` too; their (uuid, id)."""
    dialect = session.get_bind().dialect.name
    node = models.Node
    written = (node.uuid, node.id)
    if dialect in documents.DIALECTS:
        # A new row gets its derived flag here, not by rewriting it later.
        source, parameters = documents.rows_source(
            dialect, node.__table__, rows, same,
            derived={'schedulable': db_nodes.new_node_schedulable})
        statement = _upsert_statement(dialect, source)
        if session.get_bind().dialect.insert_returning:
            # PostgreSQL; MariaDB from 10.5, an upsert's updated rows too.
            return session.execute(statement.returning(*written),
                                   parameters).all()
        # MySQL: no RETURNING; the uuids read back as one document too.
        session.execute(statement, parameters)
        uuids, parameters = documents.rows_source(
            dialect, node.__table__, [{'uuid': row['uuid']} for row in rows])
        return session.execute(
            sa.select(*written).where(node.uuid.in_(uuids)),
            parameters).all()
    # SQLite: RETURNING also has SQLAlchemy send the chunk as one
    # multi-row statement.
    return session.execute(_upsert_statement(dialect).returning(*written),
                           [dict(row, **same) for row in rows]).all()


_REWRITTEN = records.NODE_COLUMNS + ('traits_text', 'capabilities_text',
                                     'fingerprint', 'vanished', 'synced_at')


def _upsert_statement(dialect, source=None):
    """INSERT of node rows (from ``source``, a SELECT, if given) that
    rewrites the row of the same uuid instead, keeping its id, creation
    time and derived flags. Its ``updated_at`` becomes the ``created_at``
    the row would have had: the time of this write.
    """
    table = models.Node.__table__
    insert = _INSERTS[dialect](table)
    if source is not None:
        insert = insert.from_select(list(source.selected_columns.keys()),
                                    source)
    if dialect == 'mysql':
        new = insert.inserted
        return insert.on_duplicate_key_update(
            [(column, new[column]) for column in _REWRITTEN]
            + [('updated_at', new.created_at)])
    new = insert.excluded
    return insert.on_conflict_do_update(
        index_elements=['uuid'],
        set_=dict({column: new[column] for column in _REWRITTEN},
                  updated_at=new.created_at))


_INSERTS = {'postgresql': postgresql.insert, 'sqlite': sqlite.insert,
            'mysql': mysql.insert}


def _clear_stale(session, read_at, node_ids=None):
    """Clear the stale marks set before ``read_at`` (None: all of them) of
    ``node_ids`` (None: any node); returns the ids looked at. A node
    whose claim of ours in Ironic waits to be cleared keeps its mark:
    the clear lifts it."""
    node = models.Node
    if node_ids is None:
        node_ids = list(session.scalars(sa.select(node.id).where(
            node.stale_since.is_not(None))))
    for ids in base.chunks(node_ids):
        query = sa.update(node).where(node.id.in_(ids),
                                      ~db_nodes.awaiting_ironic_clear())
        if read_at is not None:
            query = query.where(node.stale_since < read_at)
        session.execute(
            query.values(stale_since=None, updated_at=node.updated_at),
            execution_options={'synchronize_session': False})
    return node_ids


def _remove(session, removed, flagged, now):
    with counters.counted_by_statement(session, removed + flagged):
        for chunk in base.chunks(removed):
            # Their traits and capabilities first: no foreign key removes
            # them (migration 0009), and the summary's triggers count a
            # statement's traits out at once, a deleted node's own ones
            # one node at a time (migration 0007). The nodes locked
            # before, as for every write of traits: a reservation of one of
            # them meanwhile would count its traits out a second time.
            session.execute(sa.select(models.Node.id).where(
                models.Node.id.in_(chunk)).with_for_update())
            _delete_children(session, chunk)
            session.execute(sa.delete(models.Node).where(
                models.Node.id.in_(chunk)))
        for chunk in base.chunks(flagged):
            session.execute(sa.update(models.Node).where(
                models.Node.id.in_(chunk)).values(vanished=True,
                                                  updated_at=now))


def _delete_children(session, node_ids):
    """Delete the traits and capabilities of ``node_ids`` (one chunk)."""
    for child in (models.NodeTrait, models.NodeCapability):
        session.execute(sa.delete(child).where(child.node_id.in_(node_ids)))


def _replace_children(session, stale_ids, nodes):
    """Rewrite traits and capabilities of ``(node_id, node)`` pairs."""
    for chunk in base.chunks(stale_ids):
        _delete_children(session, chunk)
    # Core inserts of the tables: the ORM's bulk insert sends most of
    # these rows a statement each on PostgreSQL.
    traits = [{'node_id': node_id, 'trait': trait}
              for node_id, node in nodes for trait in node['traits']]
    capabilities = [{'node_id': node_id, 'key': key, 'value': value}
                    for node_id, node in nodes
                    for key, value in node['capabilities'].items()]
    for chunk in _statement_chunks(session, traits, _CHILDREN_CHUNK):
        documents.insert(session, models.NodeTrait.__table__, chunk)
    for chunk in _statement_chunks(session, capabilities, _CHILDREN_CHUNK):
        documents.insert(session, models.NodeCapability.__table__, chunk)


def analyze():
    """Refresh the planner's statistics after a bulk change.

    Without them, PostgreSQL plans the candidate query for an empty table
    and a reservation at 100,000 nodes takes 300 ms instead of 10 ms.

    :raises: DBError
    """
    tables = ('nodes', 'node_traits', 'node_capabilities')
    engine = base.get_engine()
    statements = {
        'postgresql': ['ANALYZE %s' % ', '.join(tables)],
        'mysql': ['ANALYZE TABLE %s' % ', '.join(tables)],
        'sqlite': ['ANALYZE %s' % table for table in tables],
    }.get(engine.dialect.name, [])
    with engine.connect() as connection:
        for statement in statements:
            connection.exec_driver_sql(statement)
        connection.commit()
