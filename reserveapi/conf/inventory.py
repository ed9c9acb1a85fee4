from oslo_config import cfg

GROUP = 'inventory'

opts = [
    cfg.StrOpt('source', default='file',
               choices=[('file', 'A JSON or YAML document shaped like '
                                 "Ironic's GET /v1/nodes?detail=True.")],
               help='Where the node inventory comes from.'),
    cfg.StrOpt('file', default='/etc/reserveapi/nodes.yaml',
               help='Inventory document used when source is "file".'),
    cfg.IntOpt('sync_interval', default=60, min=0,
               help='Seconds between inventory syncs run by '
                    'reserveapi-worker. 0 disables the periodic sync.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
