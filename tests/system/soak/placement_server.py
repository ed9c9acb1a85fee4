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

"""Serve the real Placement (openstack-placement) on loopback, for the
soak: its own process, its own SQLite database, ``noauth2``.

    python placement_server.py STATE_DIR

Builds the schema with Placement's migrations (as ``placement-manage db
sync`` does) and prints ``listening on PORT`` once it accepts
connections. One request at a time: SQLite refuses concurrent writers.
Clients authenticate with the token ``admin:PROJECT``.
"""

import os
import sys
from wsgiref import simple_server

from oslo_config import cfg
from oslo_policy import opts as policy_opts
from placement import conf as placement_conf
from placement import db_api
from placement import deploy
from placement.db.sqlalchemy import migration


class QuietHandler(simple_server.WSGIRequestHandler):

    def log_message(self, format, *args):
        """No access log: the soak counts requests itself."""


def _conf(state_dir):
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    policy_opts.set_defaults(
        conf, policy_file=os.path.join(state_dir, 'policy.yaml'))
    conf.set_override('connection', 'sqlite:///%s' % os.path.join(
        state_dir, 'placement.sqlite'), group='placement_database')
    conf.set_override('auth_strategy', 'noauth2', group='api')
    conf([], project='placement', default_config_files=[],
         default_config_dirs=[], use_env=False)
    return conf


def main():
    conf = _conf(sys.argv[1])
    db_api.configure(conf)
    migration.upgrade('head')
    server = simple_server.make_server(
        '127.0.0.1', 0, deploy.loadapp(conf), handler_class=QuietHandler)
    print('listening on %d' % server.server_port, flush=True)
    server.serve_forever()


if __name__ == '__main__':
    main()
