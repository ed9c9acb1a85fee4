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

"""The summary counters: what a set of nodes counts in them, and bulk
writes that count their nodes by statement instead of by row.

Triggers keep the counters (db/summary.py declares what they count),
whatever code path writes a node. On MariaDB/MySQL they can only be row
triggers: an upsert per counter table per node, five to twenty times a
bulk change's own cost (a sync of 100,000 changed nodes: 126 s against
20 s without them). On PostgreSQL they are statement triggers,
set-based, cheap for a sync's 10,000-row statements; but each
statement's trigger joins its rows with the whole of ``node_traits``, so
many small statements (a refresh of a million flags, 1,000 at a time)
cost minutes.

Those bulk writes run ``counted_by_statement``: in their transaction,
with the nodes locked, what the nodes count is read, the rows are
written with the triggers told to stand aside (a session variable on
MariaDB/MySQL, a transaction-local setting on PostgreSQL, migrations
0012 and 0013: that connection only, that window only), what the nodes
as written count is read, and the difference is appended to the
counters. Any other writer, an older version's included, is still
counted by the triggers.

Appended, not added: a window updates none of the counter rows every
reservation updates, so no other writer waits on one for the rest of its
transaction (on Galera, a sync holding one was aborted by the first
reservation replicated from another node, and retried whole). Its counts are
rows of their own, under slots no other writer uses (past
``models.SUMMARY_SLOTS``; ``slot % SUMMARY_SLOTS`` is still the nodes'
slot). Readers sum every slot already, an older version's too; ``fold``
adds the appended rows into the shared ones later, in a transaction of
its own, short enough to be retried.
"""

import contextlib
import random

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from reserveapi.db import base
from reserveapi.db import documents
from reserveapi.db import models
from reserveapi.db import summary

ROWS_PER_STATEMENT = 1000
"""Counter rows written per statement."""

TABLES = tuple(sorted((models.Base.metadata.tables[counter.table]
                      for counter in summary.COUNTERS),
                     key=lambda table: table.name))
"""The counter tables, in the order writers lock them."""

APPENDS = 2 ** 26
"""Appended counts go under slots ``SUMMARY_SLOTS * n + slot``, ``n``
drawn from 1 to APPENDS - 1 (within a signed 32-bit INTEGER): two
writes seldom draw the same, and if they do they add to the same rows,
as any two writers of one counter row do."""

ID_CHUNK = 10000
"""Node ids per statement that counts them."""


def _partition(node):
    return tuple(sa.func.coalesce(getattr(node, column), '').label(column)
                 for column in summary.PARTITION)


def _slot(node):
    return (node.id % models.SUMMARY_SLOTS).label('slot')


RANGES = 16
"""Most runs of consecutive ids selected by their ranges alone."""


def _of_nodes(node_ids):
    """The clauses selecting the nodes ``node_ids`` (sorted). Their runs
    of consecutive ids by their ranges alone when there are few, as
    the nodes a sync inserts make (each INSERT's ids follow each
    other): no id sent, nor escaped by the driver. Otherwise their
    range too, by which the database reads them by key, whatever it
    guesses of a long list of values."""
    node = models.Node
    runs = []  # [first, last] of each run
    for node_id in node_ids:
        if runs and node_id == runs[-1][1] + 1:
            runs[-1][1] = node_id
        else:
            runs.append([node_id, node_id])
    if len(runs) <= RANGES:
        return (sa.or_(*[node.id.between(first, last)
                         for first, last in runs]),)
    return (node.id.between(node_ids[0], node_ids[-1]),
            node.id.in_(node_ids))


def contributions(node_ids=None, sign=1):
    """(counter table, a SELECT of its keys then its values): what the
    nodes ``node_ids`` (None: every node) count in each counter table,
    times ``sign``, as summary.COUNTERS declares it and the triggers
    count it. Ordered by key, so that writers lock counter rows in one
    order.
    """
    node, trait = models.Node, models.NodeTrait
    # Still in the inventory: what a ``live`` counter asks of its nodes.
    live = sa.and_(*models.in_universe(node))
    found = []
    for counter in summary.COUNTERS:
        key = (trait.trait if counter.key == summary.TRAIT
               else getattr(node, counter.key))
        keys = _partition(node) + (key.label(counter.key), _slot(node))
        query = sa.select(*keys, *[
            (sign * summary.value(declared, node)).label(name)
            for name, declared in counter.values.items()])
        if counter.key == summary.TRAIT:
            query = query.join(trait, trait.node_id == node.id)
        query = query.where(*([live] if counter.live else []),
                            *summary.clauses(counter.terms, node))
        if node_ids is not None:
            query = query.where(*_of_nodes(node_ids))
        found.append((models.Base.metadata.tables[counter.table],
                      query.group_by(*keys).order_by(*keys)))
    return found


_INSERTS = {'postgresql': postgresql.insert, 'sqlite': sqlite.insert,
            'mysql': mysql.insert}


def add(session, table, select):
    """Add the rows of ``select`` (the keys of ``table``, then values by
    column name) to the counter rows of the same key, in one statement.
    Returns the rows it wrote."""
    names = [column.name for column in select.selected_columns]
    dialect = session.get_bind().dialect.name
    return _upsert(session, table, names,
                   _INSERTS[dialect](table).from_select(names, select))


def _upsert(session, table, names, insert, parameters=None):
    keys = [name for name in names if name in table.primary_key.columns]
    values = [name for name in names if name not in keys]
    if session.get_bind().dialect.name == 'mysql':
        statement = insert.on_duplicate_key_update(
            {name: table.c[name] + insert.inserted[name] for name in values})
    else:
        statement = insert.on_conflict_do_update(
            index_elements=keys,
            set_={name: table.c[name] + insert.excluded[name]
                  for name in values})
    return session.execute(statement, parameters).rowcount


class _Tally:
    """What a set of nodes counts, per counter table and key, summed as
    it is read in chunks of ids."""

    def __init__(self):
        self.tables = {}

    def read(self, session, node_ids, sign, inserted=False):
        """Add what ``node_ids`` count, times ``sign``; ``inserted``:
        nodes this transaction inserted, which no one else can see."""
        # MariaDB/MySQL read the transaction's snapshot, which can be
        # older than the locked rows: a locking read reads them as they
        # are (PostgreSQL's statements read what is committed). It locks
        # every row it reads: by key, nodes first, it reads only these
        # nodes and their traits, not (and so never holds) a reserved
        # node's row.
        locking = (not inserted
                   and session.get_bind().dialect.name == 'mysql')
        for ids in base.chunks(sorted(node_ids), ID_CHUNK):
            for table, select in contributions(ids, sign):
                if locking:
                    select = select.with_hint(
                        models.Node, 'FORCE INDEX (PRIMARY)').prefix_with(
                            'STRAIGHT_JOIN').with_for_update(read=True)
                names = [column.name for column in select.selected_columns]
                width = len(table.primary_key.columns)
                _table, _names, rows = self.tables.setdefault(
                    table.name, (table, names, {}))
                for row in session.execute(select):
                    key, values = tuple(row[:width]), row[width:]
                    total = rows.setdefault(key, [0] * len(values))
                    for index, value in enumerate(values):
                        total[index] += int(value or 0)

    def append_to(self, session):
        """Add the tally to the counters as rows of its own (see the
        module's docstring), leaving out keys that net to nothing. The
        windows of one transaction (a sync's pages) share their rows:
        as many rows to fold as one window's, not one set per page."""
        offset = session.info.setdefault(
            _APPENDED_AT, models.SUMMARY_SLOTS * random.randrange(1, APPENDS))
        for name in sorted(self.tables):
            table, names, rows = self.tables[name]
            changed = []
            for key, values in sorted(rows.items()):
                if any(values):
                    row = dict(zip(names, key + tuple(values), strict=True))
                    row['slot'] += offset
                    changed.append(row)
            _add_rows(session, table, names, changed)


def _add_rows(session, table, names, rows):
    """Add ``rows`` (dicts by ``names``: keys, then values) to the
    counter rows of the same key: as one document where the database
    reads one, which costs neither SQLAlchemy nor PyMySQL a step per
    value (a sync's windows append thousands of rows)."""
    dialect = session.get_bind().dialect.name
    insert = _INSERTS[dialect](table)
    if dialect in documents.DIALECTS:
        if rows:
            source, parameters = documents.rows_source(dialect, table, rows)
            _upsert(session, table, names,
                    insert.from_select(names, source), parameters)
        return
    for chunk in base.chunks(rows, ROWS_PER_STATEMENT):
        _upsert(session, table, names, insert.values(chunk))


@base.retrying()
def fold():
    """Add the counts bulk writes appended (see the module's docstring)
    into the counter rows of their slots, and delete them: one short
    transaction. Returns how many appended rows it folded.

    :raises: DBError
    """
    folded = 0
    with base.writer() as session:
        for table in TABLES:
            key = list(table.primary_key.columns)
            own_slot = [(column % models.SUMMARY_SLOTS).label('slot')
                        if column.name == 'slot' else column
                        for column in key]
            appended = [tuple(row) for row in session.execute(
                sa.select(*key).where(table.c.slot >= models.SUMMARY_SLOTS)
                .order_by(*key).with_for_update())]
            for chunk in base.chunks(appended, ROWS_PER_STATEMENT):
                these = sa.tuple_(*key).in_(chunk)
                add(session, table, sa.select(*own_slot, *[
                    sa.func.sum(column).label(column.name)
                    for column in table.columns if column not in key])
                    .where(these).group_by(*own_slot).order_by(*own_slot))
                session.execute(sa.delete(table).where(these))
            folded += len(appended)
    return folded


def _lock(session, node_ids):
    node = models.Node
    for ids in base.chunks(sorted(node_ids), ID_CHUNK):
        session.execute(sa.select(node.id).where(*_of_nodes(ids))
                        .with_for_update())


def by_statement(session, many_statements=False):
    """Whether a bulk write in ``session`` counts its nodes itself: on
    MariaDB/MySQL, whose triggers count row by row; on PostgreSQL too
    for a write of ``many_statements`` (see the module's docstring)."""
    dialect = session.get_bind().dialect.name
    return dialect == 'mysql' or (many_statements
                                  and dialect == 'postgresql')


def _stand_aside(session, on):
    """Tell the triggers on this connection to stand aside, or not."""
    if session.get_bind().dialect.name == 'mysql':
        session.execute(sa.text('SET %s = %s' % (
            summary.BULK_VARIABLE, '1' if on else 'NULL')))
    else:
        session.execute(sa.select(sa.func.set_config(
            summary.BULK_SETTING, '1' if on else '', True)))


_WINDOW = 'reserveapi_counted_by_statement'
"""The session's open window (``session.info``): its list of inserted
ids."""

_APPENDED_AT = 'reserveapi_appended_at'
"""The session's offset of appended slots (``session.info``), drawn by
its first window."""


@contextlib.contextmanager
def counted_by_statement(session, node_ids, many_statements=False):
    """A window of ``session``'s transaction in which nodes are written
    in bulk and counted by statement (see the module's docstring).

    ``node_ids``: the existing nodes the window will change or delete;
    they are locked, and what they count is read, before it opens.
    Yields a list: the caller appends the ids of the nodes it inserts.
    When it closes, what the nodes of both lists still there count is
    read, and the difference added to the counters. Nothing else may be
    written to ``nodes`` or ``node_traits`` in the window: no trigger
    counts it. A window opened inside another is the outer one (its
    nodes must be the outer one's). Where the write does not count by
    statement (see by_statement), a plain window: the triggers count.
    """
    if session.info.get(_WINDOW) is not None:
        yield session.info[_WINDOW]
        return
    inserted = []
    if not by_statement(session, many_statements):
        yield inserted
        return
    _lock(session, node_ids)
    tally = _Tally()
    tally.read(session, node_ids, -1)
    _stand_aside(session, True)
    session.info[_WINDOW] = inserted
    try:
        yield inserted
    finally:
        del session.info[_WINDOW]
        # If this fails the connection is gone, and the setting with it.
        _stand_aside(session, False)
    tally.read(session, node_ids, 1)
    tally.read(session, set(inserted) - set(node_ids), 1, inserted=True)
    tally.append_to(session)
