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

"""Policy rules in code, one module per resource."""

import itertools

from reserveapi.policies import aggregate
from reserveapi.policies import candidate
from reserveapi.policies import capacity
from reserveapi.policies import hold
from reserveapi.policies import node
from reserveapi.policies import reservation

RULE_MODULES = (aggregate, candidate, capacity, hold, node, reservation)


def list_rules():
    """Entry point for oslo.policy.policies."""
    return list(itertools.chain.from_iterable(
        module.list_rules() for module in RULE_MODULES))
