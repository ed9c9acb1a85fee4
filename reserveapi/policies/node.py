from oslo_policy import policy

from reserveapi.policies import base

rules = [
    policy.DocumentedRuleDefault(
        name='reserveapi:node:list',
        check_str=base.ADMIN_SERVICE_OR_READER,
        description='List the node inventory.',
        operations=[{'method': 'GET', 'path': '/v1/nodes'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name='reserveapi:node:get',
        check_str=base.ADMIN_SERVICE_OR_READER,
        description='Show a node.',
        operations=[{'method': 'GET', 'path': '/v1/nodes/{node_ident}'}],
        scope_types=['project']),
]


def list_rules():
    return rules
