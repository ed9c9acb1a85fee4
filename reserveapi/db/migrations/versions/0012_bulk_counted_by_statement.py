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

"""MariaDB/MySQL: the summary's row triggers stand aside for a bulk
write that counts its nodes by statement.

Migration 0007's row triggers cost a bulk change five to twenty times
its own time. Each is replaced by the same trigger guarded by a session
variable (``@reserveapi_counted_by_statement``): unset, as on every
connection of an older release, it counts row by row as before; set, by
a bulk write of this release that counts its nodes itself in the same
transaction, it adds nothing. MariaDB replaces each trigger in one
statement (``CREATE OR REPLACE``), so no write meanwhile goes uncounted;
MySQL has no such statement, and drops then creates it: a write between
the two is found and repaired by ``reserveapi-dbsync migrate``.

The triggers are written out below, generated once from
reserveapi/db/summary.py as it was then: what this migration installs
never changes with later code.

PostgreSQL's statement triggers and SQLite's are left as they are.

Revision ID: 0012_bulk_counted_by_statement
Revises: 0011_services
Create Date: 2026-12-04
"""

from alembic import op

revision = '0012_bulk_counted_by_statement'
down_revision = '0011_services'
branch_labels = None
depends_on = None
phase = 'expand'
privileges = ('TRIGGER',)

# (name, the rest of its CREATE TRIGGER statement), in order.
TRIGGERS = (
    ('node_summary_insert',
     "AFTER INSERT ON nodes FOR EACH ROW BEGIN IF "
     "@reserveapi_counted_by_statement IS NULL THEN INSERT INTO "
     "capacity_counters (shard, conductor_group, slot, resource_class, total, "
     "available, reserved, memory_mb, vcpus, local_gb) SELECT delta.shard, "
     "delta.conductor_group, delta.slot, delta.resource_class, "
     "SUM(delta.total), SUM(delta.available), SUM(delta.reserved), "
     "SUM(delta.memory_mb), SUM(delta.vcpus), SUM(delta.local_gb) FROM "
     "(SELECT COALESCE(NEW.shard, '') AS shard, COALESCE(NEW.conductor_group, "
     "'') AS conductor_group, NEW.id % 16 AS slot, NEW.resource_class AS "
     "resource_class, 1 * (1) AS total, 1 * (CASE WHEN NEW.schedulable AND "
     "NOT NEW.reserved THEN 1 ELSE 0 END) AS available, 1 * (CASE WHEN "
     "NEW.reserved THEN 1 ELSE 0 END) AS reserved, 1 * (NEW.memory_mb) AS "
     "memory_mb, 1 * (NEW.cpus) AS vcpus, 1 * (NEW.local_gb) AS local_gb FROM "
     "DUAL WHERE NOT NEW.vanished AND NEW.resource_class IS NOT NULL) delta "
     "WHERE 1 = 1 GROUP BY delta.shard, delta.conductor_group, delta.slot, "
     "delta.resource_class HAVING SUM(delta.total) <> 0 OR "
     "SUM(delta.available) <> 0 OR SUM(delta.reserved) <> 0 OR "
     "SUM(delta.memory_mb) <> 0 OR SUM(delta.vcpus) <> 0 OR "
     "SUM(delta.local_gb) <> 0 ORDER BY delta.shard, delta.conductor_group, "
     "delta.slot, delta.resource_class ON DUPLICATE KEY UPDATE total = total "
     "+ VALUES(total), available = available + VALUES(available), reserved = "
     "reserved + VALUES(reserved), memory_mb = memory_mb + VALUES(memory_mb), "
     "vcpus = vcpus + VALUES(vcpus), local_gb = local_gb + VALUES(local_gb); "
     "INSERT INTO cpu_arch_counters (shard, conductor_group, slot, cpu_arch, "
     "node_count) SELECT delta.shard, delta.conductor_group, delta.slot, "
     "delta.cpu_arch, SUM(delta.node_count) FROM (SELECT COALESCE(NEW.shard, "
     "'') AS shard, COALESCE(NEW.conductor_group, '') AS conductor_group, "
     "NEW.id % 16 AS slot, NEW.cpu_arch AS cpu_arch, 1 * (1) AS node_count "
     "FROM DUAL WHERE NOT NEW.vanished AND NEW.cpu_arch IS NOT NULL) delta "
     "WHERE 1 = 1 GROUP BY delta.shard, delta.conductor_group, delta.slot, "
     "delta.cpu_arch HAVING SUM(delta.node_count) <> 0 ORDER BY delta.shard, "
     "delta.conductor_group, delta.slot, delta.cpu_arch ON DUPLICATE KEY "
     "UPDATE node_count = node_count + VALUES(node_count); END IF; END"),
    ('node_summary_update',
     "AFTER UPDATE ON nodes FOR EACH ROW BEGIN IF "
     "@reserveapi_counted_by_statement IS NULL THEN IF NOT "
     "(OLD.resource_class <=> NEW.resource_class) OR NOT (OLD.shard <=> "
     "NEW.shard) OR NOT (OLD.conductor_group <=> NEW.conductor_group) OR NOT "
     "(OLD.cpu_arch <=> NEW.cpu_arch) OR NOT (OLD.vanished <=> NEW.vanished) "
     "OR NOT (OLD.schedulable <=> NEW.schedulable) OR NOT (OLD.reserved <=> "
     "NEW.reserved) OR NOT (OLD.memory_mb <=> NEW.memory_mb) OR NOT (OLD.cpus "
     "<=> NEW.cpus) OR NOT (OLD.local_gb <=> NEW.local_gb) THEN INSERT INTO "
     "capacity_counters (shard, conductor_group, slot, resource_class, total, "
     "available, reserved, memory_mb, vcpus, local_gb) SELECT delta.shard, "
     "delta.conductor_group, delta.slot, delta.resource_class, "
     "SUM(delta.total), SUM(delta.available), SUM(delta.reserved), "
     "SUM(delta.memory_mb), SUM(delta.vcpus), SUM(delta.local_gb) FROM "
     "(SELECT COALESCE(OLD.shard, '') AS shard, COALESCE(OLD.conductor_group, "
     "'') AS conductor_group, OLD.id % 16 AS slot, OLD.resource_class AS "
     "resource_class, -1 * (1) AS total, -1 * (CASE WHEN OLD.schedulable AND "
     "NOT OLD.reserved THEN 1 ELSE 0 END) AS available, -1 * (CASE WHEN "
     "OLD.reserved THEN 1 ELSE 0 END) AS reserved, -1 * (OLD.memory_mb) AS "
     "memory_mb, -1 * (OLD.cpus) AS vcpus, -1 * (OLD.local_gb) AS local_gb "
     "FROM DUAL WHERE NOT OLD.vanished AND OLD.resource_class IS NOT NULL "
     "UNION ALL SELECT COALESCE(NEW.shard, '') AS shard, "
     "COALESCE(NEW.conductor_group, '') AS conductor_group, NEW.id % 16 AS "
     "slot, NEW.resource_class AS resource_class, 1 * (1) AS total, 1 * (CASE "
     "WHEN NEW.schedulable AND NOT NEW.reserved THEN 1 ELSE 0 END) AS "
     "available, 1 * (CASE WHEN NEW.reserved THEN 1 ELSE 0 END) AS reserved, "
     "1 * (NEW.memory_mb) AS memory_mb, 1 * (NEW.cpus) AS vcpus, 1 * "
     "(NEW.local_gb) AS local_gb FROM DUAL WHERE NOT NEW.vanished AND "
     "NEW.resource_class IS NOT NULL) delta WHERE 1 = 1 GROUP BY delta.shard, "
     "delta.conductor_group, delta.slot, delta.resource_class HAVING "
     "SUM(delta.total) <> 0 OR SUM(delta.available) <> 0 OR "
     "SUM(delta.reserved) <> 0 OR SUM(delta.memory_mb) <> 0 OR "
     "SUM(delta.vcpus) <> 0 OR SUM(delta.local_gb) <> 0 ORDER BY delta.shard, "
     "delta.conductor_group, delta.slot, delta.resource_class ON DUPLICATE "
     "KEY UPDATE total = total + VALUES(total), available = available + "
     "VALUES(available), reserved = reserved + VALUES(reserved), memory_mb = "
     "memory_mb + VALUES(memory_mb), vcpus = vcpus + VALUES(vcpus), local_gb "
     "= local_gb + VALUES(local_gb); INSERT INTO cpu_arch_counters (shard, "
     "conductor_group, slot, cpu_arch, node_count) SELECT delta.shard, "
     "delta.conductor_group, delta.slot, delta.cpu_arch, "
     "SUM(delta.node_count) FROM (SELECT COALESCE(OLD.shard, '') AS shard, "
     "COALESCE(OLD.conductor_group, '') AS conductor_group, OLD.id % 16 AS "
     "slot, OLD.cpu_arch AS cpu_arch, -1 * (1) AS node_count FROM DUAL WHERE "
     "NOT OLD.vanished AND OLD.cpu_arch IS NOT NULL UNION ALL SELECT "
     "COALESCE(NEW.shard, '') AS shard, COALESCE(NEW.conductor_group, '') AS "
     "conductor_group, NEW.id % 16 AS slot, NEW.cpu_arch AS cpu_arch, 1 * (1) "
     "AS node_count FROM DUAL WHERE NOT NEW.vanished AND NEW.cpu_arch IS NOT "
     "NULL) delta WHERE 1 = 1 GROUP BY delta.shard, delta.conductor_group, "
     "delta.slot, delta.cpu_arch HAVING SUM(delta.node_count) <> 0 ORDER BY "
     "delta.shard, delta.conductor_group, delta.slot, delta.cpu_arch ON "
     "DUPLICATE KEY UPDATE node_count = node_count + VALUES(node_count); "
     "INSERT INTO free_trait_counters (shard, conductor_group, trait, slot, "
     "node_count) SELECT delta.shard, delta.conductor_group, t.trait, "
     "delta.slot, SUM(delta.node_count) FROM node_traits t, (SELECT "
     "COALESCE(OLD.shard, '') AS shard, COALESCE(OLD.conductor_group, '') AS "
     "conductor_group, OLD.id % 16 AS slot, OLD.id AS node_id, -1 AS "
     "node_count FROM DUAL WHERE OLD.schedulable AND NOT OLD.reserved UNION "
     "ALL SELECT COALESCE(NEW.shard, '') AS shard, "
     "COALESCE(NEW.conductor_group, '') AS conductor_group, NEW.id % 16 AS "
     "slot, NEW.id AS node_id, 1 AS node_count FROM DUAL WHERE "
     "NEW.schedulable AND NOT NEW.reserved) delta WHERE t.node_id = "
     "delta.node_id GROUP BY delta.shard, delta.conductor_group, t.trait, "
     "delta.slot HAVING SUM(delta.node_count) <> 0 ORDER BY delta.shard, "
     "delta.conductor_group, t.trait, delta.slot ON DUPLICATE KEY UPDATE "
     "node_count = node_count + VALUES(node_count); END IF; END IF; END"),
    ('node_summary_delete',
     "AFTER DELETE ON nodes FOR EACH ROW BEGIN IF "
     "@reserveapi_counted_by_statement IS NULL THEN INSERT INTO "
     "capacity_counters (shard, conductor_group, slot, resource_class, total, "
     "available, reserved, memory_mb, vcpus, local_gb) SELECT delta.shard, "
     "delta.conductor_group, delta.slot, delta.resource_class, "
     "SUM(delta.total), SUM(delta.available), SUM(delta.reserved), "
     "SUM(delta.memory_mb), SUM(delta.vcpus), SUM(delta.local_gb) FROM "
     "(SELECT COALESCE(OLD.shard, '') AS shard, COALESCE(OLD.conductor_group, "
     "'') AS conductor_group, OLD.id % 16 AS slot, OLD.resource_class AS "
     "resource_class, -1 * (1) AS total, -1 * (CASE WHEN OLD.schedulable AND "
     "NOT OLD.reserved THEN 1 ELSE 0 END) AS available, -1 * (CASE WHEN "
     "OLD.reserved THEN 1 ELSE 0 END) AS reserved, -1 * (OLD.memory_mb) AS "
     "memory_mb, -1 * (OLD.cpus) AS vcpus, -1 * (OLD.local_gb) AS local_gb "
     "FROM DUAL WHERE NOT OLD.vanished AND OLD.resource_class IS NOT NULL) "
     "delta WHERE 1 = 1 GROUP BY delta.shard, delta.conductor_group, "
     "delta.slot, delta.resource_class HAVING SUM(delta.total) <> 0 OR "
     "SUM(delta.available) <> 0 OR SUM(delta.reserved) <> 0 OR "
     "SUM(delta.memory_mb) <> 0 OR SUM(delta.vcpus) <> 0 OR "
     "SUM(delta.local_gb) <> 0 ORDER BY delta.shard, delta.conductor_group, "
     "delta.slot, delta.resource_class ON DUPLICATE KEY UPDATE total = total "
     "+ VALUES(total), available = available + VALUES(available), reserved = "
     "reserved + VALUES(reserved), memory_mb = memory_mb + VALUES(memory_mb), "
     "vcpus = vcpus + VALUES(vcpus), local_gb = local_gb + VALUES(local_gb); "
     "INSERT INTO cpu_arch_counters (shard, conductor_group, slot, cpu_arch, "
     "node_count) SELECT delta.shard, delta.conductor_group, delta.slot, "
     "delta.cpu_arch, SUM(delta.node_count) FROM (SELECT COALESCE(OLD.shard, "
     "'') AS shard, COALESCE(OLD.conductor_group, '') AS conductor_group, "
     "OLD.id % 16 AS slot, OLD.cpu_arch AS cpu_arch, -1 * (1) AS node_count "
     "FROM DUAL WHERE NOT OLD.vanished AND OLD.cpu_arch IS NOT NULL) delta "
     "WHERE 1 = 1 GROUP BY delta.shard, delta.conductor_group, delta.slot, "
     "delta.cpu_arch HAVING SUM(delta.node_count) <> 0 ORDER BY delta.shard, "
     "delta.conductor_group, delta.slot, delta.cpu_arch ON DUPLICATE KEY "
     "UPDATE node_count = node_count + VALUES(node_count); END IF; END"),
    ('node_summary_delete_traits',
     "BEFORE DELETE ON nodes FOR EACH ROW BEGIN IF "
     "@reserveapi_counted_by_statement IS NULL THEN INSERT INTO "
     "free_trait_counters (shard, conductor_group, trait, slot, node_count) "
     "SELECT delta.shard, delta.conductor_group, t.trait, delta.slot, "
     "SUM(delta.node_count) FROM node_traits t, (SELECT COALESCE(OLD.shard, "
     "'') AS shard, COALESCE(OLD.conductor_group, '') AS conductor_group, "
     "OLD.id % 16 AS slot, OLD.id AS node_id, -1 AS node_count FROM DUAL "
     "WHERE OLD.schedulable AND NOT OLD.reserved) delta WHERE t.node_id = "
     "delta.node_id GROUP BY delta.shard, delta.conductor_group, t.trait, "
     "delta.slot HAVING SUM(delta.node_count) <> 0 ORDER BY delta.shard, "
     "delta.conductor_group, t.trait, delta.slot ON DUPLICATE KEY UPDATE "
     "node_count = node_count + VALUES(node_count); END IF; END"),
    ('node_trait_summary_insert',
     "AFTER INSERT ON node_traits FOR EACH ROW BEGIN IF "
     "@reserveapi_counted_by_statement IS NULL THEN INSERT INTO "
     "free_trait_counters (shard, conductor_group, trait, slot, node_count) "
     "SELECT COALESCE(n.shard, ''), COALESCE(n.conductor_group, ''), "
     "delta.trait, n.id % 16, SUM(delta.node_count) FROM nodes n, (SELECT "
     "NEW.node_id AS node_id, NEW.trait AS trait, 1 AS node_count FROM DUAL) "
     "delta WHERE n.id = delta.node_id AND n.schedulable AND NOT n.reserved "
     "GROUP BY COALESCE(n.shard, ''), COALESCE(n.conductor_group, ''), "
     "delta.trait, n.id % 16 HAVING SUM(delta.node_count) <> 0 ORDER BY "
     "COALESCE(n.shard, ''), COALESCE(n.conductor_group, ''), delta.trait, "
     "n.id % 16 ON DUPLICATE KEY UPDATE node_count = node_count + "
     "VALUES(node_count); END IF; END"),
    ('node_trait_summary_update',
     "AFTER UPDATE ON node_traits FOR EACH ROW BEGIN IF "
     "@reserveapi_counted_by_statement IS NULL THEN IF NOT (OLD.node_id <=> "
     "NEW.node_id) OR NOT (OLD.trait <=> NEW.trait) THEN INSERT INTO "
     "free_trait_counters (shard, conductor_group, trait, slot, node_count) "
     "SELECT COALESCE(n.shard, ''), COALESCE(n.conductor_group, ''), "
     "delta.trait, n.id % 16, SUM(delta.node_count) FROM nodes n, (SELECT "
     "OLD.node_id AS node_id, OLD.trait AS trait, -1 AS node_count FROM DUAL "
     "UNION ALL SELECT NEW.node_id AS node_id, NEW.trait AS trait, 1 AS "
     "node_count FROM DUAL) delta WHERE n.id = delta.node_id AND "
     "n.schedulable AND NOT n.reserved GROUP BY COALESCE(n.shard, ''), "
     "COALESCE(n.conductor_group, ''), delta.trait, n.id % 16 HAVING "
     "SUM(delta.node_count) <> 0 ORDER BY COALESCE(n.shard, ''), "
     "COALESCE(n.conductor_group, ''), delta.trait, n.id % 16 ON DUPLICATE "
     "KEY UPDATE node_count = node_count + VALUES(node_count); END IF; END "
     "IF; END"),
    ('node_trait_summary_delete',
     "AFTER DELETE ON node_traits FOR EACH ROW BEGIN IF "
     "@reserveapi_counted_by_statement IS NULL THEN INSERT INTO "
     "free_trait_counters (shard, conductor_group, trait, slot, node_count) "
     "SELECT COALESCE(n.shard, ''), COALESCE(n.conductor_group, ''), "
     "delta.trait, n.id % 16, SUM(delta.node_count) FROM nodes n, (SELECT "
     "OLD.node_id AS node_id, OLD.trait AS trait, -1 AS node_count FROM DUAL) "
     "delta WHERE n.id = delta.node_id AND n.schedulable AND NOT n.reserved "
     "GROUP BY COALESCE(n.shard, ''), COALESCE(n.conductor_group, ''), "
     "delta.trait, n.id % 16 HAVING SUM(delta.node_count) <> 0 ORDER BY "
     "COALESCE(n.shard, ''), COALESCE(n.conductor_group, ''), delta.trait, "
     "n.id % 16 ON DUPLICATE KEY UPDATE node_count = node_count + "
     "VALUES(node_count); END IF; END"),
)


def upgrade():
    bind = op.get_bind()
    if bind.dialect.name != 'mysql':
        return
    mariadb = getattr(bind.dialect, 'is_mariadb', True)
    for name, trigger in TRIGGERS:
        if not mariadb:
            op.execute('DROP TRIGGER IF EXISTS %s' % name)
        op.execute('CREATE %sTRIGGER %s %s' % (
            'OR REPLACE ' if mariadb else '', name, trigger))
