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

"""What the summary counters count, declared once.

Every node row counts in the counter tables under its partition (shard
and conductor group, '' for NULL) and slot (``id % SUMMARY_SLOTS``):
COUNTERS says which nodes each table counts and what it adds up. From
this declaration come the triggers that keep the counters on each
dialect (``triggers``), the recount that checks them
(``counters.contributions``) and the "free" clause of the candidate
query (``clauses(FREE, node)``), so that none of them can count
differently.

The triggers a database has are what its migrations installed, each
migration carrying its own text (generated from here when it was
written), since a migration must install the same thing whenever it
runs. tests/functional/db/test_summary_triggers.py checks that the
installed triggers are what this module generates today: changing what
the counters count is a change here and a migration that installs the
new triggers.
"""

import typing

import sqlalchemy as sa

from reserveapi.common import eligibility
from reserveapi.db import models


class Flag(typing.NamedTuple):
    """A node's boolean column is ``value``."""

    column: str
    value: bool


class Known(typing.NamedTuple):
    """A node's column is not NULL."""

    column: str


class Count(typing.NamedTuple):
    """How many of the counted nodes meet ``terms`` (all: none)."""

    terms: tuple = ()


class Sum(typing.NamedTuple):
    """The sum of a node column over the counted nodes."""

    column: str


class Counter(typing.NamedTuple):
    """A counter table: per partition, slot and ``key`` (a node column,
    or TRAIT: each of the node's traits), its ``values`` over the nodes
    that meet ``terms`` and, if ``live``, LIVE."""

    table: str
    key: str
    values: dict
    terms: tuple
    live: bool = False


PARTITION = ('shard', 'conductor_group')
"""The node columns a counter row is kept under beside its key, NULL
counted as ''."""

TRAIT = 'trait'
"""The key of a counter of traits: ``node_traits.trait``."""

def _live():
    rules = [criterion.rule for criterion in eligibility.UNIVERSE]
    if any(rule.test != eligibility.FALSE for rule in rules):
        raise TypeError('The summary triggers count nodes of the '
                        'inventory by boolean columns only.')
    return tuple(Flag(rule.field, False) for rule in rules)


LIVE = _live()
"""A node still in the inventory (common/eligibility.py's UNIVERSE): what
a ``live`` counter asks of every node it counts."""

FREE = (Flag('schedulable', True), Flag('reserved', False))
"""A free node: eligible and held by no live reservation, by the derived
flags every change of a node keeps in its own transaction."""

CAPACITY = Counter(
    'capacity_counters', 'resource_class',
    {'total': Count(), 'available': Count(FREE),
     'reserved': Count((Flag('reserved', True),)),
     'memory_mb': Sum('memory_mb'), 'vcpus': Sum('cpus'),
     'local_gb': Sum('local_gb')},
    (Known('resource_class'),), live=True)
CPU_ARCH = Counter('cpu_arch_counters', 'cpu_arch', {'node_count': Count()},
                   (Known('cpu_arch'),), live=True)
FREE_TRAITS = Counter('free_trait_counters', TRAIT, {'node_count': Count()},
                      FREE)
COUNTERS = (CAPACITY, CPU_ARCH, FREE_TRAITS)
"""Every counter table, in the order the triggers write them."""

BULK_VARIABLE = '@reserveapi_counted_by_statement'
"""Set (to 1) on a MariaDB/MySQL connection while its bulk write counts
its nodes itself: the triggers then add nothing (db/counters.py)."""

BULK_SETTING = 'reserveapi.counted_by_statement'
"""Set (to 1, for the transaction) on a PostgreSQL connection while its
bulk write counts its nodes itself: the triggers then add nothing."""

PLANNER_SETTINGS = ('enable_hashjoin', 'enable_mergejoin', 'enable_seqscan')
"""Off in PostgreSQL's node_traits trigger functions: plpgsql plans
their join with ``nodes`` once per session, maybe while the table is
small, and only a join by the key stays cheap as it grows."""


def _columns(term):
    if isinstance(term, Count):
        return [column for inner in term.terms for column in _columns(inner)]
    return [term.column]


def _watched():
    """The node columns the counts read, keys first, then conditions,
    then values: what an UPDATE must change for a node's counts to."""
    node_counters = [c for c in COUNTERS if c.key != TRAIT]
    columns = [column for counter in node_counters
               for column in (counter.key,) + PARTITION]
    columns += [term.column for term in LIVE
                if any(c.live for c in COUNTERS)]
    columns += [column for counter in COUNTERS for term in counter.terms
                for column in _columns(term)]
    columns += [column for counter in COUNTERS
                for value in counter.values.values()
                for column in _columns(value)]
    return tuple(dict.fromkeys(columns))


WATCHED = _watched()
"""The node columns the counts read: an UPDATE that changes none of
them changes no count."""


# SQLAlchemy, for the recount and the candidate query.

def clauses(terms, node):
    """``terms`` as SQLAlchemy clauses over ``node`` (a mapped class or
    an alias): flags compared by equality, which an index can use."""
    found = []
    for term in terms:
        column = getattr(node, term.column)
        if isinstance(term, Known):
            found.append(column.is_not(None))
        else:
            found.append(column == (sa.true() if term.value else sa.false()))
    return found


def value(declared, node):
    """A declared value (Count or Sum) as an aggregate over ``node``."""
    if isinstance(declared, Sum):
        return sa.func.sum(getattr(node, declared.column))
    if not declared.terms:
        return sa.func.count()
    return sa.func.sum(sa.case((sa.and_(*clauses(declared.terms, node)), 1),
                               else_=0))


# SQL text, for the triggers: over a row ``{r}`` (OLD, NEW, a transition
# table or an alias).

def _condition_sql(terms, live=False):
    parts = []
    for term in (LIVE if live else ()) + tuple(terms):
        if isinstance(term, Known):
            parts.append('{r}.%s IS NOT NULL' % term.column)
        else:
            parts.append('%s{r}.%s' % ('' if term.value else 'NOT ',
                                       term.column))
    return ' AND '.join(parts)


def _value_sql(declared):
    if isinstance(declared, Sum):
        return '{r}.%s' % declared.column
    if not declared.terms:
        return '1'
    return 'CASE WHEN %s THEN 1 ELSE 0 END' % _condition_sql(declared.terms)


def _partition_sql(row):
    return {column: "COALESCE(%s.%s, '')" % (row, column)
            for column in PARTITION}


def _slot_sql(row):
    return '%s.id %% %d' % (row, models.SUMMARY_SLOTS)


def _upsert(dialect, table, keys, values, select):
    """INSERT ``select`` (rows of ``keys`` then ``values``) into
    ``table``, adding the values to an existing row of the same key."""
    columns = ', '.join(keys + values)
    if dialect == 'mysql':
        return ('INSERT INTO %s (%s) %s ON DUPLICATE KEY UPDATE %s'
                % (table, columns, select, ', '.join(
                    '%s = %s + VALUES(%s)' % (v, v, v) for v in values)))
    return ('INSERT INTO %s (%s) %s ON CONFLICT (%s) DO UPDATE SET %s'
            % (table, columns, select, ', '.join(keys), ', '.join(
                '%s = %s.%s + excluded.%s' % (v, table, v, v)
                for v in values)))


def _add(dialect, table, keys, values, source):
    """Add to ``table`` the sums of ``values`` (name: SQL) over the rows
    of ``source`` (FROM ... WHERE ...), per key (``keys``, name: SQL).
    One row per key, so an upsert never meets its own row twice; a key
    whose sums are zero is left alone; the rows in key order, so that
    writers lock shared counters in one order."""
    select = ('SELECT %s %s GROUP BY %s HAVING %s ORDER BY %s' % (
        ', '.join(list(keys.values())
                  + ['SUM(%s)' % v for v in values.values()]),
        source, ', '.join(keys.values()),
        ' OR '.join('SUM(%s) <> 0' % v for v in values.values()),
        ', '.join(keys.values())))
    return _upsert(dialect, table, list(keys), list(values), select)


_SIDES = {'INSERT': [('new', 1)], 'DELETE': [('old', -1)],
          'UPDATE': [('old', -1), ('new', 1)]}


def _transition(table, side):
    """A statement trigger's table of the old or new rows of ``table``
    (not named OLD or NEW: plpgsql's row variables)."""
    return '%s_%s' % (side, table)


def _sources(dialect, table, event, level, unchanged=()):
    """The rows a trigger on ``event`` adds up, each (name, sign, FROM
    clause, conditions): the old row subtracted, the new one added. A
    row trigger reads its OLD and NEW row; a statement trigger reads
    the statement's transition tables, but for the nodes of an UPDATE
    whose id and ``unchanged`` columns are the same after (they add
    nothing)."""
    sources = []
    for side, sign in _SIDES[event]:
        if level == 'ROW':
            sources.append((side.upper(), sign,
                            ' FROM DUAL' if dialect == 'mysql' else '', []))
            continue
        name = _transition(table, side)
        conditions = []
        if unchanged:
            other = _transition(table, 'old' if sign > 0 else 'new')
            conditions.append(
                'NOT EXISTS (SELECT 1 FROM %s other '  # noqa: S608
                'WHERE other.id = %s.id AND %s)' % (other, name, ' AND '.join(
                    'other.%s IS NOT DISTINCT FROM %s.%s' % (c, name, c)
                    for c in unchanged)))
        sources.append((name, sign, ' FROM ' + name, conditions))
    return sources


def _union(sources, columns, when=None):
    """UNION ALL of ``columns`` (name: SQL over the row ``{r}`` and its
    ``{sign}``) of the rows of ``sources`` where ``when`` holds."""
    parts = []
    for row, sign, source, conditions in sources:
        where = ([when.format(r=row)] if when else []) + conditions
        parts.append('SELECT %s%s%s' % (', '.join(
            '%s AS %s' % (expr.format(r=row, sign=sign), name)
            for name, expr in columns.items()), source,
            ' WHERE ' + ' AND '.join(where) if where else ''))
    return ' UNION ALL '.join(parts)


def _node_delta(dialect, counter, sources):
    """The change of the node rows' contribution to ``counter``."""
    keys = dict(_partition_sql('{r}'), slot=_slot_sql('{r}'),
                **{counter.key: '{r}.%s' % counter.key})
    columns = dict(keys, **{name: '{sign} * (%s)' % _value_sql(declared)
                            for name, declared in counter.values.items()})
    return _add(dialect, counter.table,
                {name: 'delta.' + name for name in keys},
                {name: 'delta.' + name for name in counter.values},
                'FROM (%s) delta WHERE 1 = 1' % _union(
                    sources, columns,
                    _condition_sql(counter.terms, counter.live)))


def _node_trait_delta(dialect, counter, sources):
    """The change of the node rows' counts of their traits (their
    traits as they are)."""
    columns = dict(_partition_sql('{r}'), slot=_slot_sql('{r}'),
                   node_id='{r}.id', **{
                       name: '{sign}' for name in counter.values})
    keys = dict({name: 'delta.' + name for name in PARTITION},
                trait='t.trait', slot='delta.slot')
    return _add(dialect, counter.table, keys,
                {name: 'delta.' + name for name in counter.values},
                'FROM node_traits t, (%s) delta WHERE t.node_id = '
                'delta.node_id' % _union(sources, columns, _condition_sql(
                    counter.terms, counter.live)))


def _trait_delta(dialect, counter, sources):
    """The change of node_traits rows: a trait counts if its node, as it
    now is, is counted."""
    columns = dict(node_id='{r}.node_id', trait='{r}.trait',
                   **{name: '{sign}' for name in counter.values})
    return _add(dialect, counter.table, dict(
        _partition_sql('n'), trait='delta.trait', slot=_slot_sql('n')),
        {name: 'delta.' + name for name in counter.values},
        'FROM nodes n, (%s) delta WHERE n.id = delta.node_id AND %s'
        % (_union(sources, columns), _condition_sql(
            counter.terms, counter.live).format(r='n')))


class Trigger(typing.NamedTuple):
    """One summary trigger as it is installed: ``create`` makes it;
    ``function``, on PostgreSQL, makes the function it runs (of the same
    name)."""

    name: str
    table: str
    create: str
    function: str | None = None


def _statements(dialect):
    """(name, table, timing, event, level, statements, watched):
    ``watched`` are the columns an UPDATE must change for a row trigger
    to matter. On PostgreSQL, statement triggers: a row trigger there
    writes a version of the same few counter rows per row, none
    prunable before the transaction ends, and each next write walks
    them all (n changed nodes cost n squared). A deleted node's traits
    go per row, BEFORE the delete, while they are there."""
    level = 'STATEMENT' if dialect == 'postgresql' else 'ROW'

    def rows(table, event, unchanged=()):
        return _sources(dialect, table, event, level, unchanged)

    nodes = [c for c in COUNTERS if c.key != TRAIT]
    traits = [c for c in COUNTERS if c.key == TRAIT]
    updated = rows('nodes', 'UPDATE', WATCHED)
    deleted_row = _sources(dialect, 'nodes', 'DELETE', 'ROW')
    trait_columns = ('node_id', 'trait')
    return [
        ('node_summary_insert', 'nodes', 'AFTER', 'INSERT', level,
         [_node_delta(dialect, c, rows('nodes', 'INSERT')) for c in nodes],
         None),
        ('node_summary_update', 'nodes', 'AFTER', 'UPDATE', level,
         [_node_delta(dialect, c, updated) for c in nodes]
         + [_node_trait_delta(dialect, c, updated) for c in traits],
         WATCHED),
        ('node_summary_delete', 'nodes', 'AFTER', 'DELETE', level,
         [_node_delta(dialect, c, rows('nodes', 'DELETE')) for c in nodes],
         None),
        ('node_summary_delete_traits', 'nodes', 'BEFORE', 'DELETE', 'ROW',
         [_node_trait_delta(dialect, c, deleted_row) for c in traits],
         None),
    ] + [
        ('node_trait_summary_%s' % event.lower(), 'node_traits', 'AFTER',
         event, level, [_trait_delta(dialect, c, rows('node_traits', event))
                        for c in traits],
         trait_columns if event == 'UPDATE' else None)
        for event in ('INSERT', 'UPDATE', 'DELETE')]


def _postgresql(name, table, timing, event, level, statements):
    """A statement trigger (but for the traits of a deleted node), whose
    function stands aside while BULK_SETTING is set."""
    settings = ''
    if table == 'node_traits':
        settings = ''.join(' SET %s = off' % setting
                           for setting in PLANNER_SETTINGS)
    function = (
        "CREATE OR REPLACE FUNCTION %s() RETURNS trigger LANGUAGE "
        "plpgsql%s AS $$ BEGIN IF coalesce(current_setting('%s', true), "
        "'') = '' THEN %s; END IF; RETURN %s; END $$"
        % (name, settings, BULK_SETTING, '; '.join(statements),
           'OLD' if timing == 'BEFORE' else 'NULL'))
    referencing = ''
    if level == 'STATEMENT':
        referencing = ' REFERENCING %s' % ' '.join(
            '%s TABLE AS %s' % (side.upper(), _transition(table, side))
            for side, _sign in _SIDES[event])
    create = ('CREATE TRIGGER %s %s %s ON %s%s FOR EACH %s EXECUTE '
              'FUNCTION %s()' % (name, timing, event, table, referencing,
                                 level, name))
    return Trigger(name, table, create, function)


def _mysql(name, table, timing, event, statements, watched):
    """A row trigger that stands aside while BULK_VARIABLE is set."""
    body = '; '.join(statements) + ';'
    if watched:
        body = 'IF %s THEN %s END IF;' % (' OR '.join(
            'NOT (OLD.%s <=> NEW.%s)' % (c, c) for c in watched), body)
    body = 'IF %s IS NULL THEN %s END IF;' % (BULK_VARIABLE, body)
    return Trigger(name, table, 'CREATE TRIGGER %s %s %s ON %s FOR EACH ROW '
                   'BEGIN %s END' % (name, timing, event, table, body))


def _sqlite(name, table, timing, event, statements, watched):
    when = ''
    if watched:
        when = ' WHEN %s' % ' OR '.join(
            'OLD.%s IS NOT NEW.%s' % (c, c) for c in watched)
    return Trigger(name, table, 'CREATE TRIGGER %s %s %s ON %s FOR EACH '
                   'ROW%s BEGIN %s; END' % (name, timing, event, table, when,
                                            '; '.join(statements)))


def triggers(dialect):
    """The summary triggers this declaration makes on ``dialect``
    (``sqlite``, ``postgresql`` or ``mysql``): Triggers."""
    made = []
    for (name, table, timing, event, level, statements,
         watched) in _statements(dialect):
        if dialect == 'postgresql':
            made.append(_postgresql(name, table, timing, event, level,
                                    statements))
        elif dialect == 'mysql':
            made.append(_mysql(name, table, timing, event, statements,
                               watched))
        else:
            made.append(_sqlite(name, table, timing, event, statements,
                                watched))
    return made
