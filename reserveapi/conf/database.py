"""The [database] group belongs to oslo.db; we only set its defaults."""

from oslo_config import cfg
from oslo_db import options as db_options

DEFAULT_CONNECTION = 'sqlite:///$state_path/reserveapi.sqlite'


def set_lib_defaults():
    cfg.set_defaults(db_options.database_opts, connection=DEFAULT_CONNECTION)


def register_opts(conf):
    set_lib_defaults()
    conf.register_opts(db_options.database_opts, group='database')


def list_opts():
    """None of ours: the generator takes [database] from oslo.db."""
    return {}
