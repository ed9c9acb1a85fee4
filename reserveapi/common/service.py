"""Start-up shared by every entry point: config files, then logging."""

import os

from oslo_log import log

from reserveapi import conf
from reserveapi import version


def prepare_service(argv=None, default_config_files=None, conf_obj=None):
    conf_obj = conf_obj or conf.CONF
    log.register_options(conf_obj)
    log.set_defaults(default_log_levels=log.get_default_log_levels() + [
        'alembic=WARNING', 'keystonemiddleware=WARNING'])
    conf_obj(argv if argv is not None else [], project='reserveapi',
             version=version.version_string(),
             default_config_files=default_config_files)
    log.setup(conf_obj, 'reserveapi')
    os.makedirs(conf_obj.state_path, exist_ok=True)
    return conf_obj
