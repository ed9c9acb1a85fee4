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

"""Migrations build the schema the models describe, on every backend."""

from oslo_db.sqlalchemy import enginefacade
from oslo_db.sqlalchemy import test_fixtures
from oslo_db.sqlalchemy import test_migrations
import sqlalchemy as sa

from reserveapi.db import migration
from reserveapi.db import models
from reserveapi.db import node_texts
from tests import base
from tests.functional import base as functional_base

# Fresh, empty databases: the migrations, not the test, build them.
SQLITE = ('SQLite', {'FIXTURE': test_fixtures.OpportunisticDbFixture})
POSTGRESQL = ('PostgreSQL', {
    'FIXTURE': functional_base.PostgresqlOpportunisticFixture})
MYSQL = ('MySQL', {'FIXTURE': functional_base.MySQLOpportunisticFixture})
BACKENDS = [SQLITE, POSTGRESQL, MYSQL]


def _insert_node(connection, node_id):
    """A bare node row, by SQL: the models describe the head's schema."""
    connection.execute(sa.text(
        "INSERT INTO nodes (id, uuid, memory_mb, cpus, local_gb, "
        "maintenance, retired, vanished, schedulable, reserved, "
        "created_at) VALUES (:id, :uuid, 0, 0, 0, false, false, "
        "false, false, false, '2026-01-01 00:00:00')"),
        {'id': node_id, 'uuid': '%08d-0000-0000-0000-%012d' % (
            node_id, node_id)})


class _EmptyDatabaseTestCase(test_fixtures.OpportunisticDBTestMixin,
                             base.TestCase):
    """A fresh, empty database: the migrations, not the test, build it."""

    FIXTURE = test_fixtures.OpportunisticDbFixture
    SKIP_ON_UNAVAILABLE_DB = functional_base.DBTestCase.SKIP_ON_UNAVAILABLE_DB

    @property
    def engine(self):
        return enginefacade.writer.get_engine()


class TestMigrations(_EmptyDatabaseTestCase):
    scenarios = BACKENDS

    def test_walk_up_from_empty(self):
        self.assertIsNone(migration.current(engine=self.engine))
        migration.upgrade(engine=self.engine)
        head = migration.current(engine=self.engine)
        self.assertIsNotNone(head)
        tables = set(sa.inspect(self.engine).get_table_names())
        self.assertTrue(set(models.Base.metadata.tables).issubset(tables))
        migration.upgrade(engine=self.engine)
        self.assertEqual(head, migration.current(engine=self.engine))


class TestNodeTextsBackfill(_EmptyDatabaseTestCase):
    """0008 gives every node the texts the sync would have written."""

    scenarios = BACKENDS

    TRAITS = {1: ['CUSTOM_RAID', 'HW_CPU_X86_AVX2', 'CUSTOM_É_1'],
              2: ['CUSTOM_ONLY'], 3: []}
    CAPABILITIES = {1: {'boot_mode': 'uefi', 'k:ey': 'a, b:c é'},
                    2: {}, 3: {'boot_mode': 'bios'}}

    def test_existing_nodes_get_their_texts(self):
        migration.upgrade('0007_node_summary_counters', engine=self.engine)
        with self.engine.begin() as connection:
            for node_id in self.TRAITS:
                _insert_node(connection, node_id)
                for trait in self.TRAITS[node_id]:
                    connection.execute(sa.text(
                        'INSERT INTO node_traits (node_id, trait) '
                        'VALUES (:id, :trait)'),
                        {'id': node_id, 'trait': trait})
                for key, value in self.CAPABILITIES[node_id].items():
                    connection.execute(
                        models.NodeCapability.__table__.insert(),
                        {'node_id': node_id, 'key': key, 'value': value})
        migration.upgrade(engine=self.engine)
        with self.engine.connect() as connection:
            rows = connection.execute(sa.text(
                'SELECT id, traits_text, capabilities_text FROM nodes')).all()
        self.assertEqual(
            {node_id: (frozenset(self.TRAITS[node_id]),
                       self.CAPABILITIES[node_id])
             for node_id in self.TRAITS},
            {node_id: (node_texts.parse_traits(traits),
                       node_texts.parse_capabilities(capabilities))
             for node_id, traits, capabilities in rows})
        # Byte for byte what the sync writes, but for the order of items.
        for node_id, traits, capabilities in rows:
            self.assertEqual(
                sorted(node_texts.traits_text(
                    self.TRAITS[node_id]).split(',')),
                sorted(traits.split(',')))
            self.assertEqual(
                sorted(node_texts.capabilities_text(
                    self.CAPABILITIES[node_id]).split(',')),
                sorted(capabilities.split(',')))


class TestChildrenWithoutForeignKeys(_EmptyDatabaseTestCase):
    """0009 drops the children's keys and keeps every trigger and row."""

    scenarios = BACKENDS

    def triggers(self):
        if self.engine.dialect.name == 'sqlite':
            query = "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        else:
            # This test's database only: others run beside it.
            schema = {'mysql': 'DATABASE()'}.get(self.engine.dialect.name,
                                                 'current_schema()')
            query = ('SELECT trigger_name FROM '  # noqa: S608
                     'information_schema.triggers WHERE trigger_schema = '
                     + schema)
        with self.engine.connect() as connection:
            return sorted(connection.execute(sa.text(query)).scalars())

    def test_keys_go_triggers_and_rows_stay(self):
        migration.upgrade('0008_node_texts', engine=self.engine)
        with self.engine.begin() as connection:
            _insert_node(connection, 1)
            connection.execute(sa.text(
                "INSERT INTO node_traits VALUES (1, 'CUSTOM_RAID')"))
            connection.execute(sa.text(
                "INSERT INTO node_capabilities VALUES (1, 'boot_mode', "
                "'uefi')"))
        triggers = self.triggers()
        self.assertIn('node_trait_summary_insert', triggers)
        inspector = sa.inspect(self.engine)
        self.assertTrue(inspector.get_foreign_keys('node_traits'))
        migration.upgrade(engine=self.engine)
        inspector = sa.inspect(self.engine)
        for table in ('node_traits', 'node_capabilities'):
            self.assertEqual([], inspector.get_foreign_keys(table))
        self.assertEqual(triggers, self.triggers())
        with self.engine.connect() as connection:
            self.assertEqual(
                [(1, 'CUSTOM_RAID', 'boot_mode', 'uefi')],
                connection.execute(sa.text(
                    'SELECT t.node_id, t.trait, c.key, c.value '
                    'FROM node_traits t JOIN node_capabilities c '
                    'ON c.node_id = t.node_id')).all())


class TestTraitTriggersByIndex(_EmptyDatabaseTestCase):
    """0010 has PostgreSQL join a statement's traits with their nodes by
    the key, and the counters stay what the traits make them."""

    scenarios = [POSTGRESQL]

    def test_trait_triggers_join_by_the_key(self):
        migration.upgrade(engine=self.engine)
        with self.engine.begin() as connection:
            settings = dict(connection.execute(sa.text(
                "SELECT proname, proconfig FROM pg_proc "
                "WHERE proname LIKE 'node_trait_summary_%'")).all())
            for node_id in (1, 2):
                _insert_node(connection, node_id)
            connection.execute(sa.text(
                'UPDATE nodes SET schedulable = true WHERE id = 1'))
            connection.execute(sa.text(
                "INSERT INTO node_traits VALUES (1, 'CUSTOM_RAID'), "
                "(2, 'CUSTOM_RAID'), (1, 'CUSTOM_NVME')"))
            counts = connection.execute(sa.text(
                'SELECT trait, SUM(node_count) FROM free_trait_counters '
                'GROUP BY trait ORDER BY trait')).all()
        expected = ['enable_hashjoin=off', 'enable_mergejoin=off',
                    'enable_seqscan=off']
        self.assertEqual({'node_trait_summary_%s' % event: expected
                          for event in ('insert', 'update', 'delete')},
                         {name: sorted(config)
                          for name, config in settings.items()})
        self.assertEqual([('CUSTOM_NVME', 1), ('CUSTOM_RAID', 1)], counts)


class TestModelsSync(test_migrations.ModelsMigrationsSync,
                     _EmptyDatabaseTestCase):
    scenarios = BACKENDS

    def get_engine(self):
        return self.engine

    def get_metadata(self):
        return models.Base.metadata

    def db_sync(self, engine):
        migration.upgrade(engine=engine)

    def include_object(self, object_, name, type_, reflected, compare_to):
        return not (type_ == 'table' and name == 'alembic_version')


class TestMySQLTables(_EmptyDatabaseTestCase):
    scenarios = [MYSQL]

    def test_tables_are_utf8mb4(self):
        migration.upgrade(engine=self.engine)
        with self.engine.connect() as connection:
            rows = connection.execute(sa.text(
                'SELECT table_name, table_collation FROM '
                'information_schema.tables WHERE table_schema = DATABASE() '
                "AND table_name != 'alembic_version'")).all()
        self.assertEqual(set(models.Base.metadata.tables),
                         {row[0] for row in rows})
        for table, collation in rows:
            self.assertTrue(collation.startswith('utf8mb4'), table)


class TestLeaseColumns(_EmptyDatabaseTestCase):
    """0014 gives the leases their own columns, kept equal to the old ones
    whichever version writes; 0015 drops the old ones."""

    scenarios = BACKENDS

    T1, T2 = '2026-01-01 00:00:00', '2026-01-02 00:00:00'
    # Each leased table's row as version 1.0.0 inserts it (1) and as this
    # version does (2), by SQL: the models describe the head's schema.
    ROWS = {
        'inventory_syncs': "(id, source, nodes, %s) VALUES (%d, 's%d', 0, %s)",
        'ironic_releases': (
            "(id, node_uuid, instance_uuid, attempts, next_attempt_at, "
            "created_at, %s) VALUES (%d, 'n%d', 'i', 0, '2026-01-01', "
            "'2026-01-01', %s)"),
        'mirror_hosts': (
            "(id, aggregate_id, host, member, version, state, attempts, "
            "created_at, %s) VALUES (%d, 1, 'h%d', true, 1, 'pending', 0, "
            "'2026-01-01', %s)"),
    }

    def insert(self, connection, table, row_id, prefix, holder, until):
        columns = '%s_by, %s_until' % (prefix, prefix)
        connection.execute(sa.text('INSERT INTO %s %s' % (  # noqa: S608
            table, self.ROWS[table] % (columns, row_id, row_id,
                                       ':holder, :until'))),
            {'holder': holder, 'until': until})

    def update(self, connection, table, row_id, **values):
        connection.execute(sa.text('UPDATE %s SET %s WHERE id = %d' % (  # noqa: S608
            table, ', '.join('%s = :%s' % (k, k) for k in values),
            row_id)), values)

    def pairs(self, connection, table):
        """{id: ((leased_by, claimed_by), (leased_until, claimed_until))}"""
        return {row[0]: ((row[1], row[2]), (row[3], row[4]))
                for row in connection.execute(sa.text(
                    'SELECT id, leased_by, claimed_by, '  # noqa: S608
                    'leased_until, claimed_until FROM %s' % table))}

    def assertEqualPairs(self, connection, table, expected):
        """Each row's pairs are equal, and hold ``expected``
        ``{id: holder}``."""
        pairs = self.pairs(connection, table)
        for row_id, (holders, untils) in pairs.items():
            self.assertEqual(holders[0], holders[1], (table, row_id))
            self.assertEqual(untils[0], untils[1], (table, row_id))
            self.assertEqual(holders[0] is None, untils[0] is None,
                             (table, row_id))
        self.assertEqual(expected, {row_id: holders[0] for row_id,
                                    (holders, _untils) in pairs.items()})

    def test_both_releases_write_one_lease(self):
        migration.upgrade('0013_pg_counted_by_statement', engine=self.engine)
        with self.engine.begin() as connection:
            connection.execute(sa.text(
                "INSERT INTO mirror_aggregates (id, uuid, deleted, "
                "created_at) VALUES (1, 'a', false, '2026-01-01')"))
            for table in self.ROWS:
                # Leased before the expand, by version 1.0.0.
                self.insert(connection, table, 1, 'claimed', 'old', self.T1)
        migration.upgrade('0014_lease_columns', engine=self.engine)
        for table in self.ROWS:
            with self.engine.begin() as connection:
                self.assertEqualPairs(connection, table, {1: 'old'})
                # Version 1.0.0 inserts, and this version.
                self.insert(connection, table, 2, 'claimed', 'old', self.T1)
                self.insert(connection, table, 3, 'leased', 'new', self.T1)
                self.insert(connection, table, 4, 'leased', None, None)
                self.assertEqualPairs(connection, table, {
                    1: 'old', 2: 'old', 3: 'new', 4: None})
                # Each takes over the other's lease, renews and drops it.
                self.update(connection, table, 1, leased_by='new',
                            leased_until=self.T2)
                self.update(connection, table, 3, claimed_by='old',
                            claimed_until=self.T2)
                self.update(connection, table, 2, leased_until=self.T2)
                self.update(connection, table, 4, claimed_by='old',
                            claimed_until=self.T1)
                self.assertEqualPairs(connection, table, {
                    1: 'new', 2: 'old', 3: 'old', 4: 'old'})
                self.update(connection, table, 1, leased_by=None,
                            leased_until=None)
                self.update(connection, table, 4, claimed_by=None,
                            claimed_until=None)
                self.assertEqualPairs(connection, table, {
                    1: None, 2: 'old', 3: 'old', 4: None})
                untils = {row_id: untils[0] for row_id, (_holders, untils)
                          in self.pairs(connection, table).items()}
                self.assertEqual(untils[2], untils[3], table)
        migration.upgrade(engine=self.engine)
        inspector = sa.inspect(self.engine)
        with self.engine.connect() as connection:
            for table in self.ROWS:
                columns = {c['name'] for c in inspector.get_columns(table)}
                self.assertLessEqual({'leased_by', 'leased_until'}, columns)
                self.assertEqual(set(), {'claimed_by', 'claimed_until'}
                                 & columns)
                self.assertEqual(
                    {2: 'old', 3: 'old'},
                    dict(connection.execute(sa.text(
                        'SELECT id, leased_by FROM %s '  # noqa: S608
                        'WHERE leased_by IS NOT NULL' % table)).all()))
