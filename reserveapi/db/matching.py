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
node is.
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


@dataclasses.dataclass(frozen=True)
class NodeFilter:
    """What SQL can decide about a node before Python looks at it.

    Every field narrows; None or empty means "no constraint". Matching
    re-checks every rule in Python, so this must only ever drop nodes
    that Python would drop too.
    """

    resource_class: str | None = None
    cpu_arch: str | None = None
    min_memory_mb: int | None = None
    min_cpus: int | None = None
    min_local_gb: int | None = None
    exact_memory_mb: int | None = None
    exact_cpus: int | None = None
    required_traits: frozenset = frozenset()
    forbidden_traits: frozenset = frozenset()
    capability_in: tuple = ()        # ((key, (value, ...)), ...)
    capability_true: tuple = ()      # (key, ...): value is true, any case
    project_id: str | None = None
    candidates: frozenset | None = None
    conductor_group: str | None = None   # '' is Ironic's default group
    shard: str | None = None


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


_NODE_TESTS = {
    eligibility.EQUALS: lambda column, rule: column == rule.value,
    eligibility.IS_SET: lambda column, rule: column.is_not(None),
    eligibility.IS_UNSET: lambda column, rule: column.is_(None),
    eligibility.FALSE: lambda column, rule: sa.not_(column),
}
"""Each test of a node-state rule as SQL over the column of its field
(the inventory stores an empty text as NULL)."""


def eligible_clauses():
    """The criteria common/eligibility.py has SQL decide from the node
    alone (its row, its live reservation), each a (criterion name,
    clause) pair, in the matcher's order."""
    clauses = []
    for criterion in eligibility.CRITERIA:
        if criterion.sql == eligibility.NODE:
            rule = criterion.rule
            clauses.append((criterion.name, _NODE_TESTS[rule.test](
                getattr(models.Node, rule.field), rule)))
        elif criterion.sql == eligibility.RESERVATION:
            clauses.append((criterion.name,
                            sa.not_(has_live_reservation())))
    return clauses


def free_clauses():
    """Eligibility but for the live reservation, which callers judge
    their own way (a join, the derived flag, a unique constraint).
    """
    return [clause for name, clause in eligible_clauses()
            if eligibility.BY_NAME[name].sql != eligibility.RESERVATION]


def _literal(value, encode=None):
    return encode(value) if encode is not None else value


def filter_clauses(node_filter, value=_literal):
    """(criterion name, clause) pairs, in the matcher's criteria order:
    the eligibility rules, then what ``node_filter`` asks.

    ``value(item, encode=None)`` turns each value of the filter into what
    the clause compares with: the value itself (``encode``'d, where the
    clause compares with an encoding of it), or, for a template (see
    _parameterized), a bound parameter of that name, whose value
    _parameterized encoded the same way.
    """
    return eligible_clauses() + _request_clauses(node_filter, value)


def _request_clauses(node_filter, value):
    """What ``node_filter`` asks beyond eligibility (see filter_clauses),
    each clause named after the REQUEST criterion of common/eligibility.py
    it narrows (``criterion:item`` for one trait or capability)."""
    node = models.Node
    f = node_filter
    clauses = []
    if f.candidates is not None:
        names = value(f.candidates)
        clauses.append(('candidate_nodes',
                        sa.or_(node.uuid.in_(names), node.name.in_(names))))
    if f.conductor_group is not None or f.shard is not None:
        clauses.append(('partition',
                        sa.and_(*_partition_clauses(f, value))))
    if f.project_id is not None:
        project_id = value(f.project_id)
        clauses.append(('owner', sa.or_(
            sa.and_(node.owner.is_(None), node.lessee.is_(None)),
            node.owner == project_id, node.lessee == project_id)))
    if f.resource_class is not None:
        clauses.append(('resource_class',
                        node.resource_class == value(f.resource_class)))
    if f.cpu_arch is not None:
        clauses.append(('cpu_arch', node.cpu_arch == value(f.cpu_arch)))
    clauses.extend(_size_clauses(f, value))
    clauses.extend(_trait_clauses(f, value))
    clauses.extend(_capability_clauses(f, value))
    return clauses


def _partition_clauses(f, value):
    """Ironic's partitions: the default conductor group ('') is stored
    as NULL, as the inventory normalizes empty strings."""
    node = models.Node
    if f.conductor_group == '':
        yield node.conductor_group.is_(None)
    elif f.conductor_group is not None:
        yield node.conductor_group == value(f.conductor_group)
    if f.shard is not None:
        yield node.shard == value(f.shard)


def partition_clauses(conductor_group=None, shard=None):
    """The matcher's partition clauses for a query of nodes of its own."""
    return list(_partition_clauses(
        NodeFilter(conductor_group=conductor_group, shard=shard), _literal))


def _size_clauses(f, value):
    node = models.Node
    for name, column, minimum, exact in (
            ('memory_mb', node.memory_mb, f.min_memory_mb, f.exact_memory_mb),
            ('cpus', node.cpus, f.min_cpus, f.exact_cpus),
            ('local_gb', node.local_gb, f.min_local_gb, None)):
        if exact is not None:
            yield name, column == value(exact)
        elif minimum:
            yield name, column >= value(minimum)


def _trait_clauses(f, value):
    """Traits, tested in the row's text (see node_texts)."""
    text = models.Node.traits_text
    for name in sorted(f.required_traits):
        yield ('required_traits:' + name,
               text.like(value(name, node_texts.trait_pattern)))
    for name in sorted(f.forbidden_traits):
        yield ('forbidden_traits:' + name,
               text.not_like(value(name, node_texts.trait_pattern)))


def _capability_clauses(f, value):
    """Exact values, tested in the row's text (see node_texts); the
    any-case ``true`` of a key by a sub-query, which a pattern cannot
    express."""
    text = models.Node.capabilities_text
    for key, values in f.capability_in:
        encode = functools.partial(node_texts.capability_pattern, key)
        yield ('capabilities:' + key,
               sa.or_(*[text.like(value(item, encode)) for item in values]))
    capability = models.NodeCapability
    for key in f.capability_true:
        yield ('capabilities:' + key, sa.exists().where(
            capability.node_id == models.Node.id,
            capability.key == value(key),
            sa.func.lower(capability.value) == 'true'))


def _parameterized(node_filter):
    """``(template, params)``: ``node_filter`` with each value replaced by
    the name of a bound parameter, and the values by name.

    Filters that differ only in their values share a template, so the
    statement built from it serves them all (see _candidate_queries).
    """
    f = node_filter
    params = {}

    def slot(name, value, encode=None):
        if value is None:
            return None
        params[name] = _literal(value, encode)
        return name

    def slots(prefix, values, encode=None):
        return [slot('%s_%d' % (prefix, index), item, encode)
                for index, item in enumerate(values)]

    return NodeFilter(
        resource_class=slot('resource_class', f.resource_class),
        cpu_arch=slot('cpu_arch', f.cpu_arch),
        # A minimum of 0 constrains nothing: no clause, as in filter_clauses.
        min_memory_mb=slot('min_memory_mb', f.min_memory_mb or None),
        min_cpus=slot('min_cpus', f.min_cpus or None),
        min_local_gb=slot('min_local_gb', f.min_local_gb or None),
        exact_memory_mb=slot('exact_memory_mb', f.exact_memory_mb),
        exact_cpus=slot('exact_cpus', f.exact_cpus),
        required_traits=frozenset(slots('required_trait',
                                        sorted(f.required_traits),
                                        node_texts.trait_pattern)),
        forbidden_traits=frozenset(slots('forbidden_trait',
                                         sorted(f.forbidden_traits),
                                         node_texts.trait_pattern)),
        # Each value's pattern holds its key: the key is no parameter.
        capability_in=tuple(
            ('capability_in_%d' % index,
             tuple(slots('capability_in_%d_value' % index, values,
                         functools.partial(node_texts.capability_pattern,
                                           key))))
            for index, (key, values) in enumerate(f.capability_in)),
        capability_true=tuple(slots('capability_true', f.capability_true)),
        project_id=slot('project_id', f.project_id),
        candidates=slot('candidates', (sorted(f.candidates)
                                       if f.candidates is not None
                                       else None)),
        # The default group is a shape of its own (IS NULL), not a value.
        conductor_group=('' if f.conductor_group == ''
                         else slot('conductor_group', f.conductor_group)),
        shard=slot('shard', f.shard),
    ), params


def _bound(name, encode=None):
    """The bound parameter a template's slot stands for (its value
    already encoded by _parameterized)."""
    return sa.bindparam(name, expanding=name == 'candidates')


@functools.lru_cache(maxsize=256)
def _candidate_queries(template):
    """The first-batch and next-batch queries for a template, built once:
    SQLAlchemy then finds their compiled form by a cache key computed
    once per statement, instead of rebuilding and re-keying the whole
    expression for every request.
    """
    node = models.Node
    # Eligibility is the derived flags' alone: the matcher checks every
    # rule again in Python and the reservation's INSERT re-checks them in
    # SQL, while each
    # clause here, the live-reservation anti-join above all, costs the
    # planner time on every request (0.55 -> 0.31 ms at 100,000 nodes).
    clauses = [node.schedulable == sa.true(), node.reserved == sa.false()] + [
        clause for _name, clause in _request_clauses(template, _bound)]
    order = [getattr(node, column) for column in FIT_ORDER]
    columns = [getattr(node, column) for column in _CANDIDATE_COLUMNS]
    first = sa.select(*columns).where(*clauses).order_by(*order).limit(
        sa.bindparam('batch_size', type_=sa.Integer()))
    after = first.where(sa.tuple_(*order) > sa.tuple_(
        *[sa.bindparam('after_' + column, type_=getattr(node, column).type)
          for column in FIT_ORDER]))
    return first, after


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
    first, after = _candidate_queries(template)
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
    clauses = [(name, models.Node.reserved.is_(False) if name == 'reserved'
                else clause) for name, clause in filter_clauses(node_filter)]
    if explain_class:
        clauses = _class_first(clauses)
    detailed = next((index for index, (name, _clause) in enumerate(clauses)
                     if name.startswith('capabilities:')), len(clauses))
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


def _class_first(clauses):
    """``clauses`` reordered: the resource class first, ``reserved``
    just before the capabilities' (which Python decides in the end), the
    rest in order. A node of the class counts under ``reserved`` only if
    it passes everything else SQL checks."""
    first = [clause for clause in clauses if clause[0] == 'resource_class']
    held = [clause for clause in clauses if clause[0] == 'reserved']
    rest = [clause for clause in clauses
            if clause[0] not in ('resource_class', 'reserved')]
    at = next((index for index, (name, _clause) in enumerate(rest)
               if name.startswith('capabilities:')), len(rest))
    return first + rest[:at] + held + rest[at:]


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
    universe = [node.vanished.is_(False)]
    if usable_by is not None:
        universe += [clause for _name, clause in _request_clauses(
            NodeFilter(project_id=usable_by), _literal)]
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
