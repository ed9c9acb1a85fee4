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

"""reserveapi-api: the API on a simple threaded server.

For development and demos; production runs ``reserveapi.wsgi.api`` under
uWSGI, gunicorn or mod_wsgi.
"""

import ipaddress
import logging
import os
import signal
import socketserver
import sys
from wsgiref import simple_server

from oslo_log import log

from reserveapi import fleet
from reserveapi import policy
from reserveapi.api import app
from reserveapi.common import service
import reserveapi.conf
from reserveapi.db import backends
from reserveapi.peers import credentials

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF


class ThreadingWSGIServer(socketserver.ThreadingMixIn,
                          simple_server.WSGIServer):
    daemon_threads = True
    # socketserver listens with a backlog of 5: a burst of clients (a
    # dozen compute hosts booting at once) overflows it and the kernel
    # resets the surplus connections. gunicorn's default is 2048.
    request_queue_size = 128


class LoggingRequestHandler(simple_server.WSGIRequestHandler):

    def log_message(self, format, *args):
        LOG.info('%s %s', self.address_string(), format % args)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stop(BaseException):
    """SIGINT (Ctrl-C) or SIGTERM (a service manager, tox): stop serving
    and exit 0, as a stop that was asked for is no failure.

    A BaseException, as KeyboardInterrupt is: raised while the server
    hands a request to its thread, an Exception would be caught and
    logged as that request's error, and serving would go on.
    """


def _stop(signum, frame):
    # Once stopping, a second signal (Ctrl-C reaches tox and us, and tox
    # forwards its own) must not interrupt the clean-up.
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    raise Stop(signal.Signals(signum).name)


USAGE = service.usage(
    '[--config-file PATH] [--debug]',
    'Serves the API on [api] host_ip and port with a simple threaded '
    'server, for development and demos. Production runs '
    'reserveapi.wsgi.api:application under a WSGI server (gunicorn, '
    'uWSGI, mod_wsgi).')


@service.console_script
def main(argv=None):
    service.prepare_service(
        sys.argv[1:] if argv is None else argv, usage=USAGE,
        checks=(backends.check_connection_url, app.check_auth_at_startup,
                app.check_audit_at_startup, policy.check_at_startup,
                credentials.check_placement_at_startup,
                credentials.check_ironic_at_startup))
    application = app.setup_app(loopback_only=_loopback(CONF.api.host_ip))
    try:
        server = simple_server.make_server(
            CONF.api.host_ip, CONF.api.port, application,
            server_class=ThreadingWSGIServer,
            handler_class=LoggingRequestHandler)
    except OSError as exc:
        sys.exit('Cannot serve on %s:%s: %s ([api] host_ip and port).'
                 % (CONF.api.host_ip, CONF.api.port,
                    exc.strerror or exc))
    LOG.info('Serving on http://%s:%s', CONF.api.host_ip, CONF.api.port)
    fleet.start_heartbeat('api')
    for number in STOP_SIGNALS:
        signal.signal(number, _stop)
    try:
        server.serve_forever()
    except Stop as stop:
        LOG.info('Stopped by %s', stop)
    finally:
        server.server_close()
        fleet.stop_heartbeat()
    _exit_now()


def _loopback(host):
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == 'localhost'


def _exit_now():
    """Exit 0 at once, the logs and output flushed.

    The interpreter's own finalization takes seconds here (tearing down
    every module of the app); tox sends SIGTERM 0.3 s after SIGINT and
    reports the demo as failed (``code -15``) if it is still running.
    Nothing is left to clean up: requests in flight are abandoned either
    way, and the database holds all state.
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
