from oslo_policy import policy

from reserveapi.policies import base

COLLECTION = '/v1/reservations'
RESOURCE = '/v1/reservations/{reservation_uuid}'

rules = [
    policy.DocumentedRuleDefault(
        name='reserveapi:reservation:create',
        check_str=base.ADMIN_OR_SERVICE,
        description='Reserve a node for an instance.',
        operations=[{'method': 'POST', 'path': COLLECTION}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name='reserveapi:reservation:list',
        check_str=base.ADMIN_SERVICE_OR_PROJECT_READER,
        description="List reservations (a reader sees its project's).",
        operations=[{'method': 'GET', 'path': COLLECTION}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name='reserveapi:reservation:list_all',
        check_str=base.ADMIN_OR_SERVICE,
        description='List the reservations of every project.',
        operations=[{'method': 'GET', 'path': COLLECTION}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name='reserveapi:reservation:get',
        check_str=base.ADMIN_SERVICE_OR_PROJECT_READER,
        description='Show a reservation.',
        operations=[{'method': 'GET', 'path': RESOURCE}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name='reserveapi:reservation:update',
        check_str=base.ADMIN_OR_SERVICE,
        description='Take a reservation over for another host, or mark it '
                    'active once the instance is deployed.',
        operations=[{'method': 'PATCH', 'path': RESOURCE}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name='reserveapi:reservation:delete',
        check_str=base.ADMIN_OR_SERVICE,
        description='Release a reservation.',
        operations=[{'method': 'DELETE', 'path': RESOURCE}],
        scope_types=['project']),
]


def list_rules():
    return rules
