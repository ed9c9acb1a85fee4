from oslo_policy import policy

from reserveapi.policies import base

COLLECTION = '/v1/aggregates'
RESOURCE = '/v1/aggregates/{aggregate_uuid}'
HOST = '/v1/aggregates/{aggregate_uuid}/hosts/{host}'

rules = [
    policy.DocumentedRuleDefault(
        name='reserveapi:aggregate:list',
        check_str=base.ADMIN_OR_SERVICE,
        description='List mirrored aggregates and their sync state.',
        operations=[{'method': 'GET', 'path': COLLECTION}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name='reserveapi:aggregate:get',
        check_str=base.ADMIN_OR_SERVICE,
        description='Show a mirrored aggregate and its sync state.',
        operations=[{'method': 'GET', 'path': RESOURCE}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name='reserveapi:aggregate:add_host',
        check_str=base.ADMIN_OR_SERVICE,
        description="Add a host to an aggregate: every resource provider "
                    "of the host joins it in Placement.",
        operations=[{'method': 'PUT', 'path': HOST}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name='reserveapi:aggregate:remove_host',
        check_str=base.ADMIN_OR_SERVICE,
        description="Remove a host from an aggregate: every resource "
                    "provider of the host leaves it in Placement.",
        operations=[{'method': 'DELETE', 'path': HOST}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name='reserveapi:aggregate:delete',
        check_str=base.ADMIN_OR_SERVICE,
        description='Delete an aggregate: every resource provider leaves '
                    'it in Placement.',
        operations=[{'method': 'DELETE', 'path': RESOURCE}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name='reserveapi:aggregate:sync',
        check_str=base.ADMIN_OR_SERVICE,
        description='Compare Placement with a desired state of the '
                    'aggregates and fix the differences.',
        operations=[{'method': 'POST', 'path': COLLECTION + '/sync'}],
        scope_types=['project']),
]


def list_rules():
    return rules
