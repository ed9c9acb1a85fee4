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

"""Derived data, checked against its source and repaired.

Three kinds of rows are computed from others: a node's texts (from
``node_traits`` and ``node_capabilities``), its derived flags
(``schedulable``, ``reserved``: from its columns and its live
reservation) and the summary counters (from every node). Every writer of
this version keeps them right in the same transaction; a writer that
does not (an older version's on a newer schema, a hand edit, a bug)
leaves rows that disagree, which the matcher and the capacity then read
as truth. Here they are found and rewritten from their source:
``reserveapi-dbsync migrate`` walks every node, the inventory sync a
window of nodes per pass, ``reserveapi-status upgrade check`` counts
what remains.

A repair locks the nodes it rewrites and derives them again under the
lock, so it never writes over a change made since it looked; counters
are repaired by adding, in one statement, the difference between a
recount and the counters as one snapshot sees both.
"""

import collections
import dataclasses

import sqlalchemy as sa

from reserveapi.db import base
from reserveapi.db import counters
from reserveapi.db import models
from reserveapi.db import node_texts
from reserveapi.db import nodes as db_nodes

WINDOW = 1000
"""Nodes read per statement when checking texts and flags."""


@dataclasses.dataclass
class Found:
    """What one check found wrong and what it rewrote."""

    found: int = 0
    fixed: int = 0

    def add(self, other):
        self.found += other.found
        self.fixed += other.fixed


def _children(session, node_ids):
    traits = collections.defaultdict(list)
    for node_id, trait in session.execute(
            sa.select(models.NodeTrait.node_id, models.NodeTrait.trait)
            .where(models.NodeTrait.node_id.in_(node_ids))):
        traits[node_id].append(trait)
    capabilities = collections.defaultdict(dict)
    for node_id, key, value in session.execute(
            sa.select(models.NodeCapability.node_id,
                      models.NodeCapability.key,
                      models.NodeCapability.value)
            .where(models.NodeCapability.node_id.in_(node_ids))):
        capabilities[node_id][key] = value
    return traits, capabilities


def _same(text, expected, parse):
    """Whether a stored text holds the items of the one expected; the
    order of items may differ (migration 0008 wrote them unsorted)."""
    if text == expected:
        return True
    try:
        return parse(text) == parse(expected)
    except ValueError:
        return False


def _wrong_texts(session, rows):
    """{node id: (traits text, capabilities text)} of ``rows`` (id and
    both texts) whose texts disagree with their tables."""
    traits, capabilities = _children(session, [row[0] for row in rows])
    wrong = {}
    for node_id, stored_traits, stored_capabilities in rows:
        expected = (node_texts.traits_text(traits[node_id]),
                    node_texts.capabilities_text(capabilities[node_id]))
        if not (_same(stored_traits, expected[0], node_texts.parse_traits)
                and _same(stored_capabilities, expected[1],
                          node_texts.parse_capabilities)):
            wrong[node_id] = expected
    return wrong


def _text_rows(session, node_ids, lock=False):
    node = models.Node
    query = sa.select(node.id, node.traits_text,
                      node.capabilities_text).where(node.id.in_(node_ids))
    if lock:
        query = query.order_by(node.id).with_for_update()
    return session.execute(query).all()


def _rewrite_texts(session, node_ids):
    """Lock the nodes, derive their texts again, write the wrong ones."""
    wrong = _wrong_texts(session, _text_rows(session, node_ids, lock=True))
    if wrong:
        # Core's executemany: one statement, a row of parameters a node.
        table = models.Node.__table__
        session.execute(
            sa.update(table).where(table.c.id == sa.bindparam('node_id'))
            .values(traits_text=sa.bindparam('traits'),
                    capabilities_text=sa.bindparam('capabilities'),
                    updated_at=table.c.updated_at),
            [{'node_id': node_id, 'traits': texts[0],
              'capabilities': texts[1]}
             for node_id, texts in wrong.items()])
    return len(wrong)


def check_nodes(after=0, limit=WINDOW, repair=False):
    """Texts and flags of the nodes after id ``after``, up to ``limit``
    of them. Returns ({'node texts': Found, 'node flags': Found}, the
    id to go on after, or None once the last node was read).

    :raises: DatabaseUnavailable, DatabaseBusy
    """
    node = models.Node
    results = {'node texts': Found(), 'node flags': Found()}
    with base.reader() as session:
        rows = session.execute(
            sa.select(node.id, node.traits_text, node.capabilities_text)
            .where(node.id > after).order_by(node.id).limit(limit)).all()
        if not rows:
            return results, None
        texts = set(_wrong_texts(session, rows))
        flags = db_nodes.wrong_flags(session, rows[0][0], rows[-1][0])
    results['node texts'].found = len(texts)
    results['node flags'].found = len(flags)
    if repair and (texts or flags):
        results['node texts'].fixed, results['node flags'].fixed = (
            _repair_nodes(sorted(texts), sorted(flags)))
    return results, rows[-1][0] if len(rows) == limit else None


@base.retrying()
def _repair_nodes(texts, flags):
    with base.writer() as session:
        fixed = _rewrite_texts(session, texts) if texts else 0
        db_nodes.refresh_flags(session, flags)
        return fixed, len(flags)


def _difference(table, recount):
    """Per key, the recount less the counter row, where they differ: a
    SELECT of the keys then the values."""
    recount = recount.order_by(None)
    names = [column.name for column in recount.selected_columns]
    keys = [name for name in names if name in table.primary_key.columns]
    values = [name for name in names if name not in keys]
    # Rows a bulk write appended count in their slot (db/counters.py).
    stored = sa.select(*[
        (table.c.slot % models.SUMMARY_SLOTS).label(name) if name == 'slot'
        else table.c[name] for name in keys], *[
        (-table.c[name]).label(name) for name in values])
    both = sa.union_all(recount, stored).subquery('both_sides')
    sums = [sa.func.sum(both.c[name]).label(name) for name in values]
    return sa.select(
        *[both.c[name] for name in keys], *sums).group_by(
            *[both.c[name] for name in keys]).having(
                sa.or_(*[total != 0 for total in sums]))


def check_counters(repair=False):
    """The counter rows that disagree with a recount of the nodes.
    Returns a Found counting counter rows.

    :raises: DatabaseUnavailable, DatabaseBusy
    """
    result = Found()
    with base.reader() as session:
        for table, recount in counters.contributions():
            result.found += len(session.execute(
                _difference(table, recount)).all())
    if repair and result.found:
        result.fixed = _repair_counters()
    return result


@base.retrying()
def _repair_counters():
    fixed = 0
    with base.writer() as session:
        for table, recount in counters.contributions():
            difference = _difference(table, recount)
            wrong = len(session.execute(difference).all())
            if wrong:
                counters.add(session, table, difference)
                fixed += wrong
    return fixed


CHECKS = ('node texts', 'node flags', 'summary counters')
"""What ``check_all`` reports, in its order."""


def check_all(repair=False, max_count=None):
    """Every check over every node: {name: Found}. With ``max_count``,
    the node checks stop after finding that many wrong nodes.

    :raises: DatabaseUnavailable, DatabaseBusy
    """
    results = {name: Found() for name in CHECKS}
    after = 0
    while after is not None:
        window, after = check_nodes(after, repair=repair)
        for name, found in window.items():
            results[name].add(found)
        if max_count and sum(results[name].found
                             for name in window) >= max_count:
            break
    results['summary counters'] = check_counters(repair=repair)
    return results
