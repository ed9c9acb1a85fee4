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
transaction). Row triggers on ``nodes`` and ``node_traits`` add the
change of a row's contribution in the statement that changes the row,
under that row's lock, on SQLite, PostgreSQL and MariaDB/MySQL alike:
whatever code path changes a node, the counters follow. A deleted node
takes its traits' contribution with it before the delete (MySQL runs no
trigger for rows a foreign key cascade deletes; where one runs, it
finds the node gone and adds nothing).

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


def _one_row(dialect):
    return ' FROM DUAL' if dialect == 'mysql' else ''


def _node_delta(dialect, counter, rows):
    """The statement adding the change of a node row's contribution to
    ``counter``: ``rows`` are (row name, sign) pairs, the old row
    subtracted and the new one added. A key whose sum is zero is left
    alone."""
    table, extra, values, when = counter
    parts = []
    for row, sign in rows:
        keys = dict(_partition(row), **{
            name: expr.format(r=row) for name, expr in extra.items()},
            slot='%s.id %% %d' % (row, SLOTS))
        parts.append('SELECT %s%s WHERE %s' % (', '.join(
            ['%s AS %s' % (expr, name) for name, expr in keys.items()]
            + ['%d * (%s) AS %s' % (sign, expr.format(r=row), name)
               for name, expr in values.items()]),
            _one_row(dialect), when.format(r=row)))
    keys = list(keys)
    # Our own SQL of constant names: nothing comes from outside.
    select = ('SELECT %s FROM (%s) delta '  # noqa: S608
              'WHERE 1 = 1 GROUP BY %s HAVING %s'
              % (', '.join(keys + ['SUM(%s)' % v for v in values]),
                 ' UNION ALL '.join(parts), ', '.join(keys),
                 ' OR '.join('SUM(%s) <> 0' % v for v in values)))
    return _upsert(dialect, table, keys, list(values), select)


def _node_trait_delta(dialect, rows):
    """The change of a node row's free traits (its traits as they are)."""
    node_id = rows[0][0] + '.id'
    parts = ['SELECT %s, %s.id %% %d AS slot, %d AS node_count%s WHERE %s' % (
        ', '.join('%s AS %s' % (expr, name)
                  for name, expr in _partition(row).items()),
        row, SLOTS, sign, _one_row(dialect), _FREE.format(r=row))
        for row, sign in rows]
    select = ('SELECT delta.shard, delta.conductor_group, '  # noqa: S608
              't.trait, '
              'delta.slot, SUM(delta.node_count) FROM node_traits t, (%s) '
              'delta WHERE t.node_id = %s GROUP BY delta.shard, '
              'delta.conductor_group, t.trait, delta.slot HAVING '
              'SUM(delta.node_count) <> 0'
              % (' UNION ALL '.join(parts), node_id))
    return _upsert(dialect, 'free_trait_counters',
                   ['shard', 'conductor_group', 'trait', 'slot'],
                   ['node_count'], select)


def _trait_row_delta(dialect, row, sign):
    """A node_traits row added (``sign`` 1) or removed (-1): its trait
    counts if its node, as it now is, is free."""
    select = ("SELECT COALESCE(n.shard, ''), "  # noqa: S608
              "COALESCE(n.conductor_group, "
              "''), %s.trait, n.id %% %d, %d FROM nodes n WHERE n.id = "
              "%s.node_id AND %s" % (row, SLOTS, sign, row,
                                     _FREE.format(r='n')))
    return _upsert(dialect, 'free_trait_counters',
                   ['shard', 'conductor_group', 'trait', 'slot'],
                   ['node_count'], select)


def _triggers(dialect):
    """(name, table, timing, event, statements, watched): ``watched`` are
    the columns an UPDATE must change for the trigger to matter."""
    old, new = [('OLD', -1)], [('NEW', 1)]
    both = old + new
    counters = (_CAPACITY, _ARCH)
    return [
        ('node_summary_insert', 'nodes', 'AFTER', 'INSERT',
         [_node_delta(dialect, c, new) for c in counters], None),
        ('node_summary_update', 'nodes', 'AFTER', 'UPDATE',
         [_node_delta(dialect, c, both) for c in counters]
         + [_node_trait_delta(dialect, both)], _WATCHED),
        # BEFORE: the node's traits are still there to subtract.
        ('node_summary_delete', 'nodes', 'BEFORE', 'DELETE',
         [_node_delta(dialect, c, old) for c in counters]
         + [_node_trait_delta(dialect, old)], None),
        ('node_trait_summary_insert', 'node_traits', 'AFTER', 'INSERT',
         [_trait_row_delta(dialect, 'NEW', 1)], None),
        ('node_trait_summary_update', 'node_traits', 'AFTER', 'UPDATE',
         [_trait_row_delta(dialect, 'OLD', -1),
          _trait_row_delta(dialect, 'NEW', 1)], ('node_id', 'trait')),
        ('node_trait_summary_delete', 'node_traits', 'AFTER', 'DELETE',
         [_trait_row_delta(dialect, 'OLD', -1)], None),
    ]


def _create_trigger(dialect, name, table, timing, event, statements,
                    watched):
    if dialect == 'postgresql':
        op.execute(
            'CREATE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql AS $$ '
            'BEGIN %s; RETURN %s; END $$'
            % (name, '; '.join(statements),
               'OLD' if timing == 'BEFORE' else 'NULL'))
        when = ''
        if watched:
            when = ' WHEN (%s)' % ' OR '.join(
                'OLD.%s IS DISTINCT FROM NEW.%s' % (c, c) for c in watched)
        op.execute('CREATE TRIGGER %s %s %s ON %s FOR EACH ROW%s EXECUTE '
                   'FUNCTION %s()' % (name, timing, event, table, when,
                                      name))
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
