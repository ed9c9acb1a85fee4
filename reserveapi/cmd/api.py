"""reserveapi-api: the API on a simple threaded server.

For development and demos; production runs ``reserveapi.wsgi.api`` under
uWSGI, gunicorn or mod_wsgi.
"""

import socketserver
import sys
from wsgiref import simple_server

from oslo_log import log

from reserveapi.api import app
from reserveapi.common import service
from reserveapi.mirror import credentials

LOG = log.getLogger(__name__)


class ThreadingWSGIServer(socketserver.ThreadingMixIn,
                          simple_server.WSGIServer):
    daemon_threads = True


class LoggingRequestHandler(simple_server.WSGIRequestHandler):

    def log_message(self, format, *args):
        LOG.info('%s %s', self.address_string(), format % args)


def main(argv=None):
    conf = service.prepare_service(sys.argv[1:] if argv is None else argv)
    try:
        credentials.check_placement_at_startup(conf)
    except credentials.MissingCredentials as exc:
        sys.exit(str(exc))
    server = simple_server.make_server(
        conf.api.host_ip, conf.api.port, app.setup_app(conf),
        server_class=ThreadingWSGIServer,
        handler_class=LoggingRequestHandler)
    LOG.info('Serving on http://%s:%s', conf.api.host_ip, conf.api.port)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
