from oslo_config import cfg

from reserveapi.conf import ksa

GROUP = 'ironic'
SERVICE_TYPE = 'baremetal'

opts = [
    cfg.BoolOpt('claim_nodes', default=False,
                help="Also set the node's instance_uuid (and the matched "
                     'capabilities and traits in instance_info) in Ironic '
                     'when a reservation is made.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)
    ksa.register_opts(conf, GROUP, SERVICE_TYPE)


def list_opts():
    return {GROUP: opts + ksa.list_opts(GROUP, SERVICE_TYPE)}
