# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""WSGI entry point for uWSGI, gunicorn or mod_wsgi.

Reads the config file named by RESERVEAPI_CONFIG_FILE, default
/etc/reserveapi/reserveapi.conf. Example::

    gunicorn -w 4 -b 127.0.0.1:6390 reserveapi.wsgi.api:application
"""

import os
import threading

from oslo_log import log

from reserveapi import fleet
from reserveapi.api import app
from reserveapi.common import exception
from reserveapi.common import service
from reserveapi.peers import credentials

LOG = log.getLogger(__name__)

CONFIG_FILE_ENV = 'RESERVEAPI_CONFIG_FILE'
DEFAULT_CONFIG_FILE = '/etc/reserveapi/reserveapi.conf'

_lock = threading.Lock()
_application = None


def init_application():
    global _application
    with _lock:
        if _application is None:
            config_file = os.environ.get(CONFIG_FILE_ENV, DEFAULT_CONFIG_FILE)
            service.prepare_service([], default_config_files=[config_file])
            try:
                app.check_auth_at_startup()
                credentials.check_placement_at_startup()
            except exception.MissingCredentials as exc:
                # One clear line in the log, then refuse to load.
                LOG.critical('%s', exc)
                raise
            _application = app.setup_app()
            fleet.start_heartbeat('api')
    return _application


application = init_application()
