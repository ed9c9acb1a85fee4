"""Start-up shared by every entry point: config files, then logging."""

import os

from oslo_log import log

from reserveapi import version
import reserveapi.conf

CONF = reserveapi.conf.CONF


def prepare_service(argv=None, default_config_files=None):
    """Parse the command line and config files into CONF; set up logging.
    """
    log.register_options(CONF)
    log.set_defaults(default_log_levels=log.get_default_log_levels() + [
        'alembic=WARNING', 'keystonemiddleware=WARNING'])
    CONF(argv if argv is not None else [], project='reserveapi',
         version=version.version_string(),
         default_config_files=default_config_files)
    log.setup(CONF, 'reserveapi')
    os.makedirs(CONF.state_path, exist_ok=True)
