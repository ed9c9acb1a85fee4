import os

from oslo_config import cfg

opts = [
    cfg.StrOpt('state_path',
               default=os.path.join(os.path.expanduser('~'), '.reserveapi'),
               help='Directory where reserveapi keeps its state, including '
                    'the default SQLite database.'),
]


def register_opts(conf):
    conf.register_opts(opts)


def list_opts():
    return {'DEFAULT': opts}
