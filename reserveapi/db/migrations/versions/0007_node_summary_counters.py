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

"""The node summary: counters kept by triggers, so that a compute host's
periodic capacity read costs the same at any number of nodes.

Every node row contributes to three counter tables, under its partition
(shard and conductor group, '' for NULL), in slot ``id % 16``:
``capacity_counters`` per resource class (total, available, reserved and
sizes, for a node not vanished and with a class), ``cpu_arch_counters``
(a node not vanished with an architecture) and ``free_trait_counters``
(each trait of a free node: ``schedulable`` and not ``reserved``, the
derived flags every change of a node keeps right in its own
transaction). Triggers on ``nodes`` and ``node_traits`` add the change
of the rows' contribution in the statement that changes them: whatever
code path changes a node, the counters follow. On SQLite and
MariaDB/MySQL, row triggers, under the row's lock; on PostgreSQL,
statement triggers that add up the statement's transition tables in one
upsert per counter table, so that a bulk change (a sync of 100,000
nodes) costs linear time there. A deleted node takes its traits'
contribution with it per row, before the delete (a foreign key cascade
removes them before any AFTER trigger of the delete runs, and MySQL
runs no trigger for the rows it cascades; where one runs, it finds the
node gone and adds nothing).

The reservations index by host becomes (host, active_node_id): a
host's live reservations without its ended ones.

Revision ID: 0007_node_summary_counters
Revises: 0006_ironic_release_leases
Create Date: 2027-01-08
"""

from alembic import op
import sqlalchemy as sa

revision = '0007_node_summary_counters'
down_revision = '0006_ironic_release_leases'
branch_labels = None
depends_on = None
privileges = ('TRIGGER',)

SLOTS = 16
TABLE_ARGS = {'mysql_charset': 'utf8mb4', 'mysql_engine': 'InnoDB'}

# (table, key columns beyond the partition and slot, values): each value
# is SQL over a node row ``{r}`` that is its contribution when ``when``
# holds, and nothing otherwise.
_LIVE = 'NOT {r}.vanished AND {r}.resource_class IS NOT NULL'
_FREE = '{r}.schedulable AND NOT {r}.reserved'
_CAPACITY = ('capacity_counters', {'resource_class': '{r}.resource_class'},
             {'total': '1',
              'available': 'CASE WHEN %s THEN 1 ELSE 0 END' % _FREE,
              'reserved': 'CASE WHEN {r}.reserved THEN 1 ELSE 0 END',
              'memory_mb': '{r}.memory_mb', 'vcpus': '{r}.cpus',
              'local_gb': '{r}.local_gb'}, _LIVE)
_ARCH = ('cpu_arch_counters', {'cpu_arch': '{r}.cpu_arch'},
         {'node_count': '1'},
         'NOT {r}.vanished AND {r}.cpu_arch IS NOT NULL')
# What a node's own change of row can change of the counters.
_WATCHED = ('resource_class', 'shard', 'conductor_group', 'cpu_arch',
            'vanished', 'schedulable', 'reserved', 'memory_mb', 'cpus',
            'local_gb')


def _partition(row):
    return {'shard': "COALESCE(%s.shard, '')" % row,
            'conductor_group': "COALESCE(%s.conductor_group, '')" % row}


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


def _one_row(dialect):
    return ' FROM DUAL' if dialect == 'mysql' else ''


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
            sources.append((side.upper(), sign, _one_row(dialect), []))
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
    table, extra, values, when = counter
    keys = dict(_partition('{r}'), slot='{r}.id %% %d' % SLOTS, **extra)
    columns = dict(keys, **{name: '{sign} * (%s)' % expr
                            for name, expr in values.items()})
    return _add(dialect, table, {name: 'delta.' + name for name in keys},
                {name: 'delta.' + name for name in values},
                'FROM (%s) delta WHERE 1 = 1' % _union(sources, columns,
                                                         when))


def _node_trait_delta(dialect, sources):
    """The change of the node rows' free traits (their traits as they
    are)."""
    columns = dict(_partition('{r}'), slot='{r}.id %% %d' % SLOTS,
                   node_id='{r}.id', node_count='{sign}')
    return _add(dialect, 'free_trait_counters', {
        'shard': 'delta.shard', 'conductor_group': 'delta.conductor_group',
        'trait': 't.trait', 'slot': 'delta.slot'},
        {'node_count': 'delta.node_count'},
        'FROM node_traits t, (%s) delta WHERE t.node_id = delta.node_id'
        % _union(sources, columns, _FREE))


def _trait_delta(dialect, sources):
    """The change of node_traits rows: a trait counts if its node, as it
    now is, is free."""
    columns = {'node_id': '{r}.node_id', 'trait': '{r}.trait',
               'node_count': '{sign}'}
    return _add(dialect, 'free_trait_counters', dict(
        _partition('n'), trait='delta.trait', slot='n.id %% %d' % SLOTS),
        {'node_count': 'delta.node_count'},
        'FROM nodes n, (%s) delta WHERE n.id = delta.node_id AND %s'
        % (_union(sources, columns), _FREE.format(r='n')))


def _triggers(dialect):
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

    counters = (_CAPACITY, _ARCH)
    updated = rows('nodes', 'UPDATE', _WATCHED)
    return [
        ('node_summary_insert', 'nodes', 'AFTER', 'INSERT', level,
         [_node_delta(dialect, c, rows('nodes', 'INSERT'))
          for c in counters], None),
        ('node_summary_update', 'nodes', 'AFTER', 'UPDATE', level,
         [_node_delta(dialect, c, updated) for c in counters]
         + [_node_trait_delta(dialect, updated)], _WATCHED),
        ('node_summary_delete', 'nodes', 'AFTER', 'DELETE', level,
         [_node_delta(dialect, c, rows('nodes', 'DELETE'))
          for c in counters], None),
        ('node_summary_delete_traits', 'nodes', 'BEFORE', 'DELETE', 'ROW',
         [_node_trait_delta(dialect, _sources(dialect, 'nodes', 'DELETE',
                                              'ROW'))], None),
        ('node_trait_summary_insert', 'node_traits', 'AFTER', 'INSERT',
         level, [_trait_delta(dialect, rows('node_traits', 'INSERT'))],
         None),
        ('node_trait_summary_update', 'node_traits', 'AFTER', 'UPDATE',
         level, [_trait_delta(dialect, rows('node_traits', 'UPDATE'))],
         ('node_id', 'trait')),
        ('node_trait_summary_delete', 'node_traits', 'AFTER', 'DELETE',
         level, [_trait_delta(dialect, rows('node_traits', 'DELETE'))],
         None),
    ]


def _create_trigger(dialect, name, table, timing, event, level, statements,
                    watched):
    if dialect == 'postgresql':
        # OR REPLACE: dropping the tables leaves the functions.
        op.execute(
            'CREATE OR REPLACE FUNCTION %s() RETURNS trigger LANGUAGE '
            'plpgsql AS $$ BEGIN %s; RETURN %s; END $$'
            % (name, '; '.join(statements),
               'OLD' if timing == 'BEFORE' else 'NULL'))
        referencing = when = ''
        if level == 'STATEMENT':
            referencing = ' REFERENCING %s' % ' '.join(
                '%s TABLE AS %s' % (side.upper(), _transition(table, side))
                for side, _sign in _SIDES[event])
        elif watched:
            when = ' WHEN (%s)' % ' OR '.join(
                'OLD.%s IS DISTINCT FROM NEW.%s' % (c, c) for c in watched)
        op.execute('CREATE TRIGGER %s %s %s ON %s%s FOR EACH %s%s EXECUTE '
                   'FUNCTION %s()' % (name, timing, event, table,
                                      referencing, level, when, name))
    elif dialect == 'mysql':
        body = '; '.join(statements) + ';'
        if watched:
            body = 'IF %s THEN %s END IF;' % (' OR '.join(
                'NOT (OLD.%s <=> NEW.%s)' % (c, c) for c in watched), body)
        op.execute('CREATE TRIGGER %s %s %s ON %s FOR EACH ROW BEGIN %s END'
                   % (name, timing, event, table, body))
    else:
        when = ''
        if watched:
            when = ' WHEN %s' % ' OR '.join(
                'OLD.%s IS NOT NEW.%s' % (c, c) for c in watched)
        op.execute('CREATE TRIGGER %s %s %s ON %s FOR EACH ROW%s BEGIN %s; '
                   'END' % (name, timing, event, table, when,
                            '; '.join(statements)))


def _backfill():
    """Every node's contribution, as the triggers would have added it."""
    for table, extra, values, when in (_CAPACITY, _ARCH):
        keys = dict(_partition('nodes'), **{
            name: expr.format(r='nodes') for name, expr in extra.items()},
            slot='nodes.id %% %d' % SLOTS)
        op.execute('INSERT INTO %s (%s) '  # noqa: S608
                   'SELECT %s FROM nodes WHERE %s '
                   'GROUP BY %s' % (
                       table, ', '.join(list(keys) + list(values)),
                       ', '.join(list(keys.values()) + [
                           'SUM(%s)' % expr.format(r='nodes')
                           for expr in values.values()]),
                       when.format(r='nodes'), ', '.join(keys.values())))
    op.execute(
        "INSERT INTO free_trait_counters "  # noqa: S608
        "(shard, conductor_group, trait, "
        "slot, node_count) SELECT COALESCE(n.shard, ''), "
        "COALESCE(n.conductor_group, ''), t.trait, n.id %% %d, COUNT(*) "
        "FROM nodes n JOIN node_traits t ON t.node_id = n.id WHERE %s "
        "GROUP BY COALESCE(n.shard, ''), COALESCE(n.conductor_group, ''), "
        "t.trait, n.id %% %d" % (SLOTS, _FREE.format(r='n'), SLOTS))


def _key(name, length=255):
    return sa.Column(name, sa.String(length), primary_key=True)


def _count(name):
    return sa.Column(name, sa.BigInteger, nullable=False)


def upgrade():
    op.create_table(
        'capacity_counters',
        _key('shard'), _key('conductor_group'), _key('resource_class'),
        sa.Column('slot', sa.Integer, primary_key=True, autoincrement=False),
        *[_count(name) for name in _CAPACITY[2]], **TABLE_ARGS)
    op.create_table(
        'free_trait_counters',
        _key('shard'), _key('conductor_group'), _key('trait'),
        sa.Column('slot', sa.Integer, primary_key=True, autoincrement=False),
        _count('node_count'), **TABLE_ARGS)
    op.create_table(
        'cpu_arch_counters',
        _key('shard'), _key('conductor_group'), _key('cpu_arch', 64),
        sa.Column('slot', sa.Integer, primary_key=True, autoincrement=False),
        _count('node_count'), **TABLE_ARGS)
    op.create_index('reservations_host_live_idx', 'reservations',
                    ['host', 'active_node_id'])
    op.drop_index('reservations_host_idx', table_name='reservations')
    dialect = op.get_bind().dialect.name
    _backfill()
    for trigger in _triggers(dialect):
        _create_trigger(dialect, *trigger)
