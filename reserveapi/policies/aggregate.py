from reserveapi.policies import base

COLLECTION = '/v1/aggregates'
RESOURCE = '/v1/aggregates/{aggregate_uuid}'
HOST = '/v1/aggregates/{aggregate_uuid}/hosts/{host}'

rules = [
    base.rule(
        'reserveapi:aggregate:list', base.ADMIN_OR_SERVICE,
        'List mirrored aggregates and their sync state.',
        'GET', COLLECTION),
    base.rule(
        'reserveapi:aggregate:get', base.ADMIN_OR_SERVICE,
        'Show a mirrored aggregate and its sync state.',
        'GET', RESOURCE),
    base.rule(
        'reserveapi:aggregate:add_host', base.ADMIN_OR_SERVICE,
        "Add a host to an aggregate: every resource provider "
        "of the host joins it in Placement.",
        'PUT', HOST),
    base.rule(
        'reserveapi:aggregate:remove_host', base.ADMIN_OR_SERVICE,
        "Remove a host from an aggregate: every resource "
        "provider of the host leaves it in Placement.",
        'DELETE', HOST),
    base.rule(
        'reserveapi:aggregate:delete', base.ADMIN_OR_SERVICE,
        'Delete an aggregate: every resource provider leaves '
        'it in Placement.',
        'DELETE', RESOURCE),
    base.rule(
        'reserveapi:aggregate:sync', base.ADMIN_OR_SERVICE,
        'Compare Placement with a desired state of the '
        'aggregates and fix the differences.',
        'POST', COLLECTION + '/sync'),
]


def list_rules():
    return rules
