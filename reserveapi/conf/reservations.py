from oslo_config import cfg

GROUP = 'reservations'

opts = [
    cfg.IntOpt('reserved_ttl', default=0, min=0,
               help='Seconds after which a reservation still in state '
                    '"reserved" (never confirmed as deployed) is expired '
                    'by reserveapi-worker. 0 means never.'),
    cfg.IntOpt('expire_interval', default=60, min=1,
               help='Seconds between expiry passes of reserveapi-worker.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
