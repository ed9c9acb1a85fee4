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

"""A node as matching reads it, for unit tests of the pure matcher."""

import dataclasses

from reserveapi.common import states


@dataclasses.dataclass(frozen=True)
class FakeNode:
    """The node fields matching reads; the database's records have them
    too. The defaults describe an eligible, unowned node of unknown size.
    """

    uuid: str
    name: str | None = None
    resource_class: str | None = None
    memory_mb: int | None = None
    cpus: int | None = None
    local_gb: int | None = None
    cpu_arch: str | None = None
    capabilities: dict = dataclasses.field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    provision_state: str | None = states.AVAILABLE
    power_state: str | None = 'power off'
    maintenance: bool = False
    retired: bool = False
    instance_uuid: str | None = None
    conductor_group: str | None = None
    shard: str | None = None
    owner: str | None = None
    lessee: str | None = None
    stale_since: object = None
    reserved: bool = False
    vanished: bool = False
