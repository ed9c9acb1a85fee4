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

Reads the config file named by RESERVEAPI_CONFIG_FILE or, unset, the one
every command reads without --config-file (oslo.config's search:
~/.reserveapi/, ~/, /etc/reserveapi/, /etc/). Example::

    gunicorn -w 4 -b 127.0.0.1:6390 reserveapi.wsgi.api:application
"""

import os
import signal
import sys
import tempfile
import threading
import time

from oslo_log import log

from reserveapi import fleet
from reserveapi import policy
from reserveapi.api import app
from reserveapi.common import exception
from reserveapi.common import service
from reserveapi.db import backends
from reserveapi.peers import credentials

LOG = log.getLogger(__name__)

CONFIG_FILE_ENV = 'RESERVEAPI_CONFIG_FILE'
REFUSED = 3
"""Exit status of a process that cannot load the application: gunicorn's
"worker failed to boot", on which its master stops, printing no
traceback, rather than starting the worker again and again."""

_lock = threading.Lock()
_application = None

GRACE = 1.0
"""Seconds the gunicorn worker that refuses first waits before it exits,
so that its siblings find it there and wait too (see ``_refuse``)."""


def _under_gunicorn():
    return 'gunicorn.workers.base' in sys.modules


def _refuse(error):
    """Say why in one line (on stderr while logging is not set up yet),
    and stop the server: exit REFUSED.

    gunicorn loads the application in each of its workers at once. Its
    master stops on the first worker that exits REFUSED, but fails with
    a traceback of its own should a second exit so while it stops. So
    under gunicorn the first worker of a master to refuse says why and
    exits; any other that comes to refuse meanwhile waits, quietly, and
    any still loading dies, when the master stops them (init_application
    leaves SIGTERM its default action while loading).
    """
    if _under_gunicorn() and not _first_to_refuse():
        while True:
            time.sleep(60)
    LOG.critical('%s', error, exc_info=(
        type(error), error, error.__traceback__) if service.debugging()
        else False)
    if _under_gunicorn():
        time.sleep(GRACE)
    raise SystemExit(REFUSED)


def _first_to_refuse():
    """Whether no other worker of this master refused yet: the first
    creates a file named after the master (its pid and start time). A
    file, not a name bound while the first lives: a sibling slow to load
    on a busy host may come to refuse after the first has exited, before
    the master stopped it. The empty file stays in the temporary
    directory, one per refused start."""
    master = os.getppid()
    try:
        with open('/proc/%d/stat' % master) as stat:
            started = stat.read().rpartition(')')[2].split()[19]
    except OSError:
        started = 'unknown'
    marker = os.path.join(tempfile.gettempdir(), 'reserveapi-refused-%d-%s'
                          % (master, started))
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                         0o600))
    except FileExistsError:
        return False
    except OSError:
        pass  # no temporary directory: each refuses on its own
    return True


def init_application():
    global _application
    with _lock:
        if _application is None:
            config_file = os.environ.get(CONFIG_FILE_ENV)
            if _under_gunicorn():
                # Until loaded, a stop from the master is a stop.
                stop = signal.signal(signal.SIGTERM, signal.SIG_DFL)
            refused = None
            try:
                service.prepare_service(
                    [], named_by=CONFIG_FILE_ENV,
                    default_config_files=[config_file] if config_file
                    else None,
                    checks=(backends.check_connection_url,
                            app.check_auth_at_startup,
                            app.check_audit_at_startup,
                            policy.check_at_startup,
                            credentials.check_placement_at_startup,
                            credentials.check_ironic_at_startup))
            except exception.ConfigurationError as exc:
                refused = exc
            if refused:
                # Out of the except block: oslo.log would repeat the
                # error after the line.
                _refuse(refused)
            if _under_gunicorn():
                signal.signal(signal.SIGTERM, stop)
            _application = app.setup_app()
            fleet.start_heartbeat('api')
    return _application


application = init_application()
