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

"""Matching in SQL: the clauses that narrow the inventory before Python
checks every rule, the candidate batches, and the counts that explain an
empty match.

The eligibility clauses are derived from common/eligibility.py, as the
matcher's checks are; they are also what the derived ``schedulable``
flag, a new reservation's re-check and the capacity counts are
computed from, so that no two places can disagree on what an eligible
node is. What a request asks is narrowed as its criterion's shape (an
eligibility.SQLShape, declared on its row of matcher/filters.py) says:
SHAPE_CLAUSES holds the builder of each shape type.
"""

import collections
import dataclasses
import functools

import sqlalchemy as sa

from reserveapi.common import eligibility
from reserveapi.db import base
from reserveapi.db import models
from reserveapi.db import node_texts
from reserveapi.db import records
from reserveapi.db import summary


@dataclasses.dataclass(frozen=True)
class NodeFilter:
    """What SQL can decide about a node before Python looks at it:
    ``asked``, ``(criterion name, SQL shape, what it asks)`` triples in
    the matcher's order (matcher/filters.asked), each narrowed as its
    shape's builder in SHAPE_CLAUSES says.

    Matching re-checks every rule in Python, so this must only ever drop
    nodes that Python would drop too.
    """

    asked: tuple = ()

    def decides(self, name):
        """Whether SQL decides the criterion ``name`` (or ``name:item``)
        exactly, rather than only narrowing by it: an eligibility
        criterion always, one asked here as its shape says."""
        name = name.partition(':')[0]
        return all(shape.exact for asked_name, shape, _asked in self.asked
                   if asked_name == name)


# The order candidates are read in: smallest first, which is best fit
# whichever dimensions a flavor sizes on, and exactly the best-fit
# index's order, so the database stops reading at the LIMIT.
FIT_ORDER = ('memory_mb', 'cpus', 'local_gb', 'id')
_CANDIDATE_COLUMNS = ('id', 'vanished', 'stale_since', 'synced_at',
                      'created_at', 'updated_at', 'traits_text',
                      'capabilities_text') + records.NODE_COLUMNS


def live_reservation_join():
    """Joins a node to its live reservation, if it has one."""
    return models.Reservation.active_node_id == models.Node.id


def has_live_reservation():
    return sa.exists().where(live_reservation_join())


def eligible_clauses():
    """The criteria common/eligibility.py has SQL decide from the node
    alone (its row, its live reservation), each a (criterion name,
    clause) pair, in the matcher's order."""
    return [(criterion.name, sa.not_(has_live_reservation())
             if criterion.sql == eligibility.RESERVATION
             else models.passing(criterion.rule))
            for criterion in eligibility.CRITERIA]


_UNIVERSE = {criterion.name for criterion in eligibility.UNIVERSE}
"""The criteria every count is over (see tally)."""


def free_clauses():
    """Eligibility but for the live reservation, which callers judge
    their own way (a join, the derived flag, a unique constraint).
    """
    return [clause for name, clause in eligible_clauses()
            if eligibility.BY_NAME[name].sql != eligibility.RESERVATION]


def _literal(item, encode=None, expanding=False):
    return encode(item) if encode is not None else item


def filter_clauses(node_filter):
    """(criterion name, clause) pairs, in the matcher's criteria order:
    the eligibility rules, then what ``node_filter`` asks."""
    return eligible_clauses() + _request_clauses(node_filter, _literal)


def _request_clauses(node_filter, value):
    """What ``node_filter`` asks beyond eligibility, each clause named
    after the criterion it narrows (``criterion:item`` for one trait or
    capability).

    ``value(item, encode=None, expanding=False)`` turns each value asked
    into what the clause compares with: the value itself (``encode``'d,
    where the clause compares with an encoding of it), or, in a template
    (see _parameterized), a bound parameter of that name (a list, if
    ``expanding``), which _parameterized encodes the same way.
    """
    clauses = []
    for name, shape, asked in node_filter.asked:
        asked = _shaped(asked, lambda param: param.value)
        for item, clause in SHAPE_CLAUSES[type(shape)](shape, asked, value):
            clauses.append((name if item is None else '%s:%s' % (name, item),
                            clause))
    return clauses


def _column(name):
    return getattr(models.Node, name)


def _any_column_in(shape, values, value):
    # One parameter, a list, however many columns compare with it.
    values = value(values, expanding=True)
    yield None, sa.or_(*[_column(column).in_(values)
                         for column in shape.columns])


def _in_partition(shape, asked, value):
    yield None, sa.and_(*_partition_clauses(shape, *asked, value))


def _partition_clauses(shape, conductor_group, shard, value):
    """The default conductor group ('') is stored as NULL, as the
    inventory normalizes empty strings."""
    group = _column(shape.group)
    if conductor_group == '':
        yield group.is_(None)
    elif conductor_group is not None:
        yield group == value(conductor_group)
    if shard is not None:
        yield _column(shape.shard) == value(shard)


def partition_clauses(conductor_group=None, shard=None):
    """The matcher's partition clauses for a query of nodes of its own."""
    return list(_partition_clauses(eligibility.PARTITION, conductor_group,
                                   shard, _literal))


def _usable_by(shape, project_id, value):
    owner, lessee = _column(shape.owner), _column(shape.lessee)
    project_id = value(project_id)
    yield None, sa.or_(sa.and_(owner.is_(None), lessee.is_(None)),
                       owner == project_id, lessee == project_id)


def _equals(shape, asked, value):
    yield None, _column(shape.column) == value(asked)


def _at_least_or_exactly(shape, asked, value):
    need, exact = asked
    column = _column(shape.column)
    yield None, (column == value(need) if exact else column >= value(need))


def _items_in_text(shape, items, value):
    """Each item tested in the row's text (see node_texts)."""
    text = _column(shape.column)
    for item in items:
        pattern = value(item, node_texts.trait_pattern)
        yield item, (text.like(pattern) if shape.present
                     else text.not_like(pattern))


def _key_values_in_text(shape, asked, value):
    """Exact values, tested in the row's text (see node_texts), their
    key in each pattern and in the statement's shape; the any-case
    ``true`` of a key by a sub-query, which a pattern cannot express."""
    equal, true = asked
    text = _column(shape.column)
    for key, values in equal:
        encode = functools.partial(node_texts.capability_pattern, key)
        yield key, sa.or_(*[text.like(value(item, encode))
                            for item in values])
    capability = models.NodeCapability
    for key in true:
        yield key, sa.exists().where(
            capability.node_id == models.Node.id,
            capability.key == value(key),
            sa.func.lower(capability.value) == 'true')


SHAPE_CLAUSES = {
    eligibility.AnyColumnIn: _any_column_in,
    eligibility.InPartition: _in_partition,
    eligibility.UsableBy: _usable_by,
    eligibility.Equals: _equals,
    eligibility.AtLeastOrExactly: _at_least_or_exactly,
    eligibility.ItemsInText: _items_in_text,
    eligibility.KeyValuesInText: _key_values_in_text,
}
"""The builder of each SQL shape of common/eligibility.py:
``builder(shape, asked, value)`` yields ``(item, clause)`` pairs
(``item`` None, or the trait or capability) from what a criterion of
that shape asks (see _request_clauses for ``value``)."""


def _shaped(asked, slot):
    """``asked`` with each eligibility.Param replaced by ``slot(it)``."""
    if isinstance(asked, eligibility.Param):
        return slot(asked)
    if isinstance(asked, tuple):
        return tuple(_shaped(part, slot) for part in asked)
    return asked


def _parameterized(node_filter):
    """``(template, params)``: ``node_filter`` with each value replaced by
    the name of a bound parameter, and the values by name, encoded as the
    template's statements bind them.

    Filters that differ only in their values share a template, so the
    statement built from it serves them all (see _candidate_queries).
    """
    values = {}

    def slotted(name, shape, asked):
        def slot(param):
            key = '%s_%d' % (name, len(values))
            values[key] = param.value
            return key
        return name, shape, _shaped(asked, slot)

    template = NodeFilter(tuple(slotted(name, shape, asked)
                                for name, shape, asked in node_filter.asked))
    encoders = _candidate_queries(template)[2]
    return template, {key: _literal(values[key], encode)
                      for key, encode in encoders}


@functools.lru_cache(maxsize=256)
def _candidate_queries(template):
    """The first-batch and next-batch queries for a template, built once,
    and how each of its parameters is encoded (``(name, encode)``
    pairs): SQLAlchemy then finds their compiled form by a cache key
    computed once per statement, instead of rebuilding and re-keying the
    whole expression for every request.
    """
    encoders = []

    def bound(name, encode=None, expanding=False):
        encoders.append((name, encode))
        return sa.bindparam(name, expanding=expanding)

    node = models.Node
    # Eligibility is the derived flags' alone: the matcher checks every
    # rule again in Python and the reservation's INSERT re-checks them in
    # SQL, while each
    # clause here, the live-reservation anti-join above all, costs the
    # planner time on every request (0.55 -> 0.31 ms at 100,000 nodes).
    clauses = summary.clauses(summary.FREE, node) + [
        clause for _name, clause in _request_clauses(template, bound)]
    order = [getattr(node, column) for column in FIT_ORDER]
    columns = [getattr(node, column) for column in _CANDIDATE_COLUMNS]
    first = sa.select(*columns).where(*clauses).order_by(*order).limit(
        sa.bindparam('batch_size', type_=sa.Integer()))
    after = first.where(sa.tuple_(*order) > sa.tuple_(
        *[sa.bindparam('after_' + column, type_=getattr(node, column).type)
          for column in FIT_ORDER]))
    return first, after, tuple(encoders)


def candidate_batches(node_filter, batch_size, first_batch=None):
    """Yield lists of NodeRecords passing ``node_filter``, best fit first.

    Keyset pagination over FIT_ORDER keeps every batch one short
    indexed query, however many nodes there are. Batches start at
    ``first_batch`` and double up to ``batch_size``: usually the first few
    rows already match, and loading more would only cost time. Rows are
    read with Core, not the ORM: this is the hot path; their traits and
    capabilities come in the row (see node_texts).

    :raises: DBError
    """
    template, params = _parameterized(node_filter)
    first, after, _encoders = _candidate_queries(template)
    query = first
    size = min(first_batch or batch_size, batch_size)
    while True:
        params['batch_size'] = size
        with base.reader() as session:
            # Core rows straight from the connection: the ORM's result
            # handling is no use for plain columns.
            with base.one_statement(session) as connection:
                rows = connection.execute(query, params).all()
        if not rows:
            return
        yield [_candidate(row) for row in rows]
        if len(rows) < size:
            return
        params.update(('after_' + column, getattr(rows[-1], column))
                      for column in FIT_ORDER)
        query = after
        size = min(size * 2, batch_size)


def _candidate(row):
    columns = row._asdict()
    return records.NodeRecord(
        traits=node_texts.parse_traits(columns.pop('traits_text')),
        capabilities=node_texts.parse_capabilities(
            columns.pop('capabilities_text')),
        **columns)


UNSET = '<unset>'
"""The value shown for a capability a node does not have."""
TALLY_BATCH = 1000
"""Rows of a tally read at a time."""


@dataclasses.dataclass(frozen=True)
class Passing:
    """Nodes that pass every clause and share what was asked of them:
    their partition, and their cpu_arch and capabilities (for Python to
    check what SQL cannot), each None unless asked for."""

    count: int
    shard: str | None = None
    conductor_group: str | None = None
    cpu_arch: str | None = None
    capabilities: dict | None = None


@dataclasses.dataclass
class Tally:
    """Every node not vanished, counted once: ``total``; per clause of
    filter_clauses, the nodes it is the first to reject
    (``eliminated``), and for a rejecting capability the values those
    nodes have (``capability_values``: key -> Counter, ``<unset>`` when
    unset); the nodes passing every clause (``passing``, Passing groups).
    """

    total: int = 0
    eliminated: dict = dataclasses.field(default_factory=dict)
    capability_values: dict = dataclasses.field(default_factory=dict)
    passing: list = dataclasses.field(default_factory=list)


def tally(node_filter, usable_by=None, partitions=False,
          capabilities=False, explain=True, explain_class=False):
    """Count every node once under the first clause of filter_clauses it
    fails (a clause that is NULL fails, as in a WHERE): what each
    criterion eliminated, in the order the matcher applies them, for a
    409's explanation and for candidates.

    ``usable_by`` (a project) counts only the nodes that project may
    use: no owner or lessee, or itself as one. ``partitions`` and
    ``capabilities`` group the passing nodes by shard and conductor
    group, and by cpu_arch and capabilities. Without ``explain``, only
    the passing nodes are counted (``total`` and ``eliminated`` stay
    empty): the nodes that fail a clause before the capabilities' are
    then never read, which is most of them. ``explain_class`` counts
    the nodes of another resource class first and ``reserved`` after the
    other clauses SQL decides: what kept the class's own nodes from a
    request (see _class_first).

    One statement, so one snapshot: its counts add up. It counts every
    node, the first miss computed once per node, and details only the
    nodes that pass the clauses before the capabilities', which the
    best-fit index finds when a resource class is asked for. Rows come a
    bounded batch at a time; there are as many as distinct values, not
    nodes.

    :raises: DBError
    """
    # A live reservation as the candidate query sees it, by the derived
    # flag every reservation change keeps in its own transaction: the
    # anti-join would cost a probe per node, most of the statement's time.
    # The universe's criteria are no clause of the count: it counts only
    # the nodes passing them.
    clauses = [(name, models.Node.reserved.is_(False) if name == 'reserved'
                else clause) for name, clause in filter_clauses(node_filter)
               if name not in _UNIVERSE]
    if explain_class:
        clauses = _class_first(clauses, node_filter)
    detailed = _first_narrowing(clauses, node_filter)
    query, detailing = _tally_query(clauses, detailed, usable_by,
                                    partitions, capabilities, explain)
    result = Tally()
    passed = 0
    with base.reader() as session:
        rows = session.execute(query,
                               execution_options={'stream_results': True})
        for batch in rows.partitions(TALLY_BATCH):
            for row in batch:
                passed += _add(result, clauses, *row)
    if not detailing and passed:
        result.passing.append(Passing(passed))
    return result


def _class_first(clauses, node_filter):
    """``clauses`` reordered: the resource class first, ``reserved``
    just before the capabilities' (which Python decides in the end), the
    rest in order. A node of the class counts under ``reserved`` only if
    it passes everything else SQL checks."""
    first = [clause for clause in clauses if clause[0] == 'resource_class']
    held = [clause for clause in clauses if clause[0] == 'reserved']
    rest = [clause for clause in clauses
            if clause[0] not in ('resource_class', 'reserved')]
    at = _first_narrowing(rest, node_filter)
    return first + rest[:at] + held + rest[at:]


def _first_narrowing(clauses, node_filter):
    """The index of the first of ``clauses`` (of ``node_filter``) that
    only narrows its criterion (Python decides it in the end), or
    len(clauses)."""
    return next((index for index, (name, _clause) in enumerate(clauses)
                 if not node_filter.decides(name)), len(clauses))


def _first_miss(clauses, start=0):
    """The index of the first of ``clauses[start:]`` a node fails, or
    len(clauses) when it fails none."""
    whens = [(sa.not_(sa.func.coalesce(clause, sa.false())), index)
             for index, (_name, clause) in enumerate(clauses)
             if index >= start]
    if not whens:
        return sa.literal(len(clauses))
    return sa.case(*whens, else_=len(clauses))


def _tally_query(clauses, detailed, usable_by, partitions, capabilities,
                 explain):
    """Rows ``(first miss, nodes, detail, shard, conductor_group,
    cpu_arch, capabilities_text)``: with ``explain``, the count of every
    node by its first miss (``detail`` false); then, for the nodes past
    ``clauses[:detailed]``, what a passing node or a rejecting capability
    needs (``detail`` true)."""
    node = models.Node
    universe = models.in_universe()
    if usable_by is not None:
        universe += [clause for _item, clause in _usable_by(
            eligibility.USABLE_BY, usable_by, _literal)]
    first_miss = _first_miss(clauses).label('first_miss')
    counts = sa.select(first_miss, sa.func.count(), sa.false(),
                       *[sa.null()] * 4).where(*universe).group_by(
        first_miss)
    # Without explain, the passing nodes are counted by the details.
    wanted = {node.shard: partitions, node.conductor_group: partitions,
              node.cpu_arch: capabilities,
              node.capabilities_text: detailed < len(clauses)
              or capabilities}
    if not any(wanted.values()) and explain:
        return counts, False
    first_miss = _first_miss(clauses, detailed).label('first_miss')
    columns = [column if needed else sa.null()
               for column, needed in wanted.items()]
    details = sa.select(first_miss, sa.func.count(), sa.true(),
                        *columns).where(
        *universe, *[clause for _name, clause in clauses[:detailed]]
    ).group_by(*([first_miss] if detailed < len(clauses) else []), *[
        column for column, needed in wanted.items() if needed])
    return (sa.union_all(counts, details) if explain else details), True


def _add(result, clauses, first_miss, count, detail, shard, group, arch,
         text):
    """Add one row of _tally_query to ``result``; the nodes it counts as
    passing every clause, if it is a count."""
    count = int(count)
    passed = first_miss == len(clauses)
    name = None if passed else clauses[first_miss][0]
    if detail:
        capabilities = (node_texts.parse_capabilities(text)
                        if text is not None else None)
        if passed:
            result.passing.append(Passing(count, shard, group, arch,
                                          capabilities))
        else:
            key = name.partition(':')[2]
            result.capability_values.setdefault(
                key, collections.Counter())[capabilities.get(key, UNSET)] += (
                count)
        return 0
    result.total += count
    if passed:
        return count
    result.eliminated[name] = result.eliminated.get(name, 0) + count
    return 0
