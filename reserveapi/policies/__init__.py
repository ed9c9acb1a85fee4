"""Policy rules in code, one module per resource."""

import itertools

from reserveapi.policies import aggregate
from reserveapi.policies import capacity
from reserveapi.policies import node
from reserveapi.policies import reservation

RULE_MODULES = (aggregate, capacity, node, reservation)


def list_rules():
    """Entry point for oslo.policy.policies."""
    return list(itertools.chain.from_iterable(
        module.list_rules() for module in RULE_MODULES))
