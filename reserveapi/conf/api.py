from oslo_config import cfg

GROUP = 'api'

opts = [
    cfg.HostAddressOpt('host_ip', default='127.0.0.1',
                       help='Address the development API server binds to.'),
    cfg.PortOpt('port', default=6390,
                help='Port the development API server binds to.'),
    cfg.StrOpt('auth_strategy', default='keystone',
               choices=[('keystone', 'Validate tokens with keystonemiddleware '
                                     'and enforce policy.'),
                        ('noauth', 'No authentication: every caller is an '
                                   'admin. Development only.')],
               help='How API callers are authenticated.'),
    cfg.IntOpt('max_limit', default=1000, min=1,
               help='Largest number of items one list request returns.'),
    cfg.StrOpt('public_endpoint',
               help='Base URL used in links (e.g. https://api.example.com/'
                    'reservation). Defaults to the URL of the request.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
