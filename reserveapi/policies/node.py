from reserveapi.policies import base

rules = [
    base.rule(
        'reserveapi:node:list', base.ADMIN_SERVICE_OR_READER,
        'List the node inventory.',
        'GET', '/v1/nodes'),
    base.rule(
        'reserveapi:node:get', base.ADMIN_SERVICE_OR_READER,
        'Show a node.',
        'GET', '/v1/nodes/{node_ident}'),
]


def list_rules():
    return rules
