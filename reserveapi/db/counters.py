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

Triggers keep the counters (migration 0007), whatever code path writes a
node. On PostgreSQL they are statement triggers, set-based already. On
MariaDB/MySQL they can only be row triggers: an upsert per counter table
per node, five to twenty times a bulk change's own cost (a sync of
100,000 changed nodes: 126 s against 20 s without them). There a bulk
write of this release runs ``counted_by_statement``: in its transaction,
with the nodes locked, their contribution is taken out in one statement
per counter table, the rows are written with the triggers told to stand
aside (a session variable, set for that connection only and only for the
window), and the contribution of the nodes as written is added back.
Any other writer, an older release's included, is still counted by the
triggers, row by row.
"""

import contextlib

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from reserveapi.db import base
from reserveapi.db import models

BULK_VARIABLE = '@reserveapi_counted_by_statement'
"""Set (to 1) on a MariaDB/MySQL connection while its bulk write counts
its nodes itself: the row triggers of migration 0012 then add nothing."""

ID_CHUNK = 10000
"""Node ids per statement that counts them."""


def _partition(node):
    return (sa.func.coalesce(node.shard, '').label('shard'),
            sa.func.coalesce(node.conductor_group, '').label(
                'conductor_group'))


def _slot(node):
    return (node.id % models.SUMMARY_SLOTS).label('slot')


def contributions(node_ids=None, sign=1):
    """(counter table, a SELECT of its keys then its values): what the
    nodes ``node_ids`` (None: every node) count in each counter table,
    times ``sign``, as migration 0007's triggers count them. Ordered by
    key, so that writers lock counter rows in one order.
    """
    node, trait = models.Node, models.NodeTrait

    def total(value):
        return (sign * value).label(value.name)

    def count_if(condition, name):
        return total(sa.func.sum(sa.case((condition, 1), else_=0))
                     .label(name))

    def only(query):
        if node_ids is not None:
            query = query.where(node.id.in_(node_ids))
        return query

    free = sa.and_(node.schedulable, sa.not_(node.reserved))
    capacity_keys = _partition(node) + (
        node.resource_class.label('resource_class'), _slot(node))
    arch_keys = _partition(node) + (node.cpu_arch.label('cpu_arch'),
                                    _slot(node))
    trait_keys = _partition(node) + (trait.trait.label('trait'),
                                     _slot(node))
    return [
        (models.CapacityCounter.__table__, only(sa.select(
            *capacity_keys, total(sa.func.count().label('total')),
            count_if(free, 'available'),
            count_if(node.reserved, 'reserved'),
            total(sa.func.sum(node.memory_mb).label('memory_mb')),
            total(sa.func.sum(node.cpus).label('vcpus')),
            total(sa.func.sum(node.local_gb).label('local_gb')))
            .where(sa.not_(node.vanished), node.resource_class.is_not(None)))
         .group_by(*capacity_keys).order_by(*capacity_keys)),
        (models.CpuArchCounter.__table__, only(sa.select(
            *arch_keys, total(sa.func.count().label('node_count')))
            .where(sa.not_(node.vanished), node.cpu_arch.is_not(None)))
         .group_by(*arch_keys).order_by(*arch_keys)),
        (models.FreeTraitCounter.__table__, only(sa.select(
            *trait_keys, total(sa.func.count().label('node_count')))
            .join(trait, trait.node_id == node.id).where(free))
         .group_by(*trait_keys).order_by(*trait_keys)),
    ]


_INSERTS = {'postgresql': postgresql.insert, 'sqlite': sqlite.insert,
            'mysql': mysql.insert}


def add(session, table, select):
    """Add the rows of ``select`` (the keys of ``table``, then values by
    column name) to the counter rows of the same key, in one statement.
    Returns the rows it wrote."""
    names = [column.name for column in select.selected_columns]
    keys = [name for name in names if name in table.primary_key.columns]
    values = [name for name in names if name not in keys]
    dialect = session.get_bind().dialect.name
    insert = _INSERTS[dialect](table).from_select(keys + values, select)
    if dialect == 'mysql':
        statement = insert.on_duplicate_key_update(
            {name: table.c[name] + insert.inserted[name] for name in values})
    else:
        statement = insert.on_conflict_do_update(
            index_elements=keys,
            set_={name: table.c[name] + insert.excluded[name]
                  for name in values})
    return session.execute(statement).rowcount


def _count(session, node_ids, sign):
    for ids in base.chunks(sorted(node_ids), ID_CHUNK):
        for table, select in contributions(ids, sign):
            add(session, table, select)


def _lock(session, node_ids):
    node = models.Node
    for ids in base.chunks(sorted(node_ids), ID_CHUNK):
        session.execute(sa.select(node.id).where(node.id.in_(ids))
                        .with_for_update())


def by_statement(session):
    """Whether bulk writes in ``session`` count their nodes themselves:
    on MariaDB/MySQL, whose triggers count row by row."""
    return session.get_bind().dialect.name == 'mysql'


_WINDOW = 'reserveapi_counted_by_statement'
"""The session's open window (``session.info``): its list of inserted
ids."""


@contextlib.contextmanager
def counted_by_statement(session, node_ids):
    """A window of ``session``'s transaction in which nodes are written
    in bulk and counted by statement (see the module's docstring).

    ``node_ids``: the existing nodes the window will change or delete;
    they are locked, and their contribution taken out, before it opens.
    Yields a list: the caller appends the ids of the nodes it inserts.
    When it closes, the contribution of every node of both lists still
    there is added. Nothing else may be written to ``nodes`` or
    ``node_traits`` in the window: no trigger counts it. A window opened
    inside another is the outer one (its nodes must be the outer one's).
    Elsewhere than on MariaDB/MySQL, a plain window: the triggers count.
    """
    if session.info.get(_WINDOW) is not None:
        yield session.info[_WINDOW]
        return
    inserted = []
    if not by_statement(session):
        yield inserted
        return
    _lock(session, node_ids)
    _count(session, node_ids, -1)
    session.execute(sa.text('SET %s = 1' % BULK_VARIABLE))
    session.info[_WINDOW] = inserted
    try:
        yield inserted
    finally:
        del session.info[_WINDOW]
        # If this fails the connection is gone, and the variable with it.
        session.execute(sa.text('SET %s = NULL' % BULK_VARIABLE))
    _count(session, set(node_ids) | set(inserted), 1)
