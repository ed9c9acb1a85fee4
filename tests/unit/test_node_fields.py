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

"""common/node_fields.py against what follows it: the nodes table's
columns, the records, the inventory sources. The widths themselves are
the migrations' (tests/functional/db/test_migrations.py compares the
models with them)."""

import dataclasses

from oslotest import base
import sqlalchemy as sa

from reserveapi.common import node_fields
from reserveapi.db import models
from reserveapi.db import records
from reserveapi.inventory import file as inventory_file
from reserveapi.inventory import ironic
from tests.unit.inventory import test_file

COLUMN_TYPES = {node_fields.UUID: sa.String, node_fields.TEXT: sa.String,
                node_fields.SIZE: sa.Integer, node_fields.FLAG: sa.Boolean}


class TestNodeFields(base.BaseTestCase):

    def test_every_field_is_a_column_of_its_kind_and_width(self):
        columns = models.Node.__table__.c
        for field in node_fields.FIELDS:
            column_type = columns[field.name].type
            self.assertIsInstance(column_type, COLUMN_TYPES[field.kind],
                                  field.name)
            self.assertEqual(field.max_length,
                             getattr(column_type, 'length', None),
                             field.name)

    def test_items_and_summary_keys_are_as_wide_as_declared(self):
        for column in (models.NodeTrait.trait, models.NodeCapability.key,
                       models.NodeCapability.value,
                       models.FreeTraitCounter.trait):
            self.assertEqual(node_fields.ITEM_LENGTH, column.type.length,
                             column)
        for column in (models.CapacityCounter.shard,
                       models.CapacityCounter.conductor_group,
                       models.CapacityCounter.resource_class,
                       models.CpuArchCounter.cpu_arch):
            self.assertEqual(node_fields.max_length(column.key),
                             column.type.length, column)

    def test_records_carry_every_field(self):
        self.assertEqual(node_fields.NAMES, records.NODE_COLUMNS)
        self.assertLessEqual(
            set(node_fields.NAMES),
            {field.name for field in dataclasses.fields(records.NodeRecord)})

    def test_the_file_source_reads_every_field(self):
        node = inventory_file.normalize(test_file.ironic_node())
        self.assertEqual(set(node_fields.NAMES) | {'capabilities', 'traits'},
                         set(node))

    def test_ironic_is_asked_for_every_field(self):
        self.assertEqual(
            {'uuid', 'name', 'resource_class', 'properties', 'traits',
             'provision_state', 'power_state', 'maintenance', 'retired',
             'instance_uuid', 'conductor_group', 'shard', 'owner',
             'lessee'},
            set(ironic.FIELDS))
        self.assertEqual(len(set(ironic.FIELDS)), len(ironic.FIELDS))
