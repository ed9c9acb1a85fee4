"""Policy rules in code, one module per resource."""

import itertools

RULE_MODULES = ()


def list_rules():
    """Entry point for oslo.policy.policies."""
    return list(itertools.chain.from_iterable(
        module.list_rules() for module in RULE_MODULES))
