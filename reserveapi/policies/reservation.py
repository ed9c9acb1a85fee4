from reserveapi.policies import base

COLLECTION = '/v1/reservations'
RESOURCE = '/v1/reservations/{reservation_uuid}'

rules = [
    base.rule(
        'reserveapi:reservation:create', base.ADMIN_OR_SERVICE,
        'Reserve a node for an instance.',
        'POST', COLLECTION),
    base.rule(
        'reserveapi:reservation:list', base.ADMIN_SERVICE_OR_PROJECT_READER,
        "List reservations (a reader sees its project's).",
        'GET', COLLECTION),
    base.rule(
        'reserveapi:reservation:list_all', base.ADMIN_OR_SERVICE,
        'List the reservations of every project.',
        'GET', COLLECTION),
    base.rule(
        'reserveapi:reservation:get', base.ADMIN_SERVICE_OR_PROJECT_READER,
        'Show a reservation.',
        'GET', RESOURCE),
    base.rule(
        'reserveapi:reservation:update', base.ADMIN_OR_SERVICE,
        'Take a reservation over for another host, or mark it '
        'active once the instance is deployed.',
        'PATCH', RESOURCE),
    base.rule(
        'reserveapi:reservation:delete', base.ADMIN_OR_SERVICE,
        'Release a reservation.',
        'DELETE', RESOURCE),
]


def list_rules():
    return rules
