from oslo_policy import policy

from reserveapi.policies import base

rules = [
    policy.DocumentedRuleDefault(
        name='reserveapi:capacity:get',
        check_str=base.ADMIN_SERVICE_OR_READER,
        description='Show capacity per resource class.',
        operations=[{'method': 'GET', 'path': '/v1/capacity'}],
        scope_types=['project']),
]


def list_rules():
    return rules
