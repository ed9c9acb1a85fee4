from reserveapi.policies import base

rules = [
    base.rule(
        'reserveapi:capacity:get', base.ADMIN_SERVICE_OR_READER,
        'Show capacity per resource class.',
        'GET', '/v1/capacity'),
]


def list_rules():
    return rules
