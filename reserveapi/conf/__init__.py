"""Configuration: one module per option group, all registered on CONF."""

from oslo_config import cfg

from reserveapi.conf import opts

CONF = cfg.CONF

for _module in opts.MODULES:
    _module.register_opts(CONF)
