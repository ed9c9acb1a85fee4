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

"""The node fields copied from the inventory, declared once.

What the inventory sources read (``inventory/file.py``'s validation,
the fields asked of Ironic), the columns of the ``nodes`` table and
their widths (``db/models.py``) and what a node record carries
(``db/records.py``) all follow from this table, so a field added or
widened here is read, validated and stored alike. Widths are the
schema's: changing one needs a migration.
"""

import typing

UUID = 'uuid'
TEXT = 'text'
SIZE = 'size'
FLAG = 'flag'

MAX_SIZE = 2 ** 31 - 1
"""The largest size: sizes are stored in a signed 32-bit INTEGER."""
ITEM_LENGTH = 255
"""The longest trait name, capability key and capability value: the
width of their columns in ``node_traits`` and ``node_capabilities``."""


class NodeField(typing.NamedTuple):
    """One field: ``max_length`` is its column's width (texts and
    uuids); ``in_properties``, that Ironic keeps it in the node's
    ``properties``."""

    name: str
    kind: str
    max_length: int | None = None
    in_properties: bool = False


FIELDS = (
    NodeField('uuid', UUID, 36),
    NodeField('name', TEXT, 255),
    NodeField('resource_class', TEXT, 255),
    NodeField('memory_mb', SIZE, in_properties=True),
    NodeField('cpus', SIZE, in_properties=True),
    NodeField('local_gb', SIZE, in_properties=True),
    NodeField('cpu_arch', TEXT, 64, in_properties=True),
    NodeField('provision_state', TEXT, 32),
    NodeField('power_state', TEXT, 32),
    NodeField('maintenance', FLAG),
    NodeField('retired', FLAG),
    NodeField('instance_uuid', UUID, 36),
    NodeField('conductor_group', TEXT, 255),
    NodeField('shard', TEXT, 255),
    NodeField('owner', TEXT, 255),
    NodeField('lessee', TEXT, 255),
)
NAMES = tuple(field.name for field in FIELDS)
BY_NAME = {field.name: field for field in FIELDS}


def named(kind):
    """The names of the fields of ``kind``, in their order."""
    return tuple(field.name for field in FIELDS if field.kind == kind)


def max_length(name):
    """The width of field ``name``'s column."""
    return BY_NAME[name].max_length
