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

"""The [database] group belongs to oslo.db: we set its defaults, and add
one option of ours, Galera's causal reads."""

from oslo_config import cfg
from oslo_db import options as db_options

GROUP = 'database'
DEFAULT_CONNECTION = 'sqlite:///$state_path/reserveapi.sqlite'

GALERA_OPTS = [
    cfg.IntOpt(
        'galera_sync_wait', default=1, min=0, max=15,
        help='The wsrep_sync_wait each database session sets when the '
             'server is a MariaDB Galera node (wsrep_on = ON); other '
             'MariaDB/MySQL servers and PostgreSQL are left alone. 1 '
             '(the default): every read waits until the node has applied '
             'every write committed anywhere in the cluster before it, so '
             'that a reservation made through one node is found through '
             'any other at once (read-your-writes behind a load '
             'balancer). 0 turns causal reads off; see the MariaDB '
             'documentation of wsrep_sync_wait for the other bits. Leave '
             "oslo.db's mysql_wsrep_sync_wait unset: it sets the variable "
             'on every MySQL server, Galera or not.'),
]


def set_lib_defaults():
    # max_retries = 0: no connection test when the engine is created.
    # oslo.db's default retries it 10 times 10 s apart inside whatever
    # request comes first; an API process started while the database is
    # down must answer 503 at once, and connect again on the next request.
    cfg.set_defaults(db_options.database_opts, connection=DEFAULT_CONNECTION,
                     max_retries=0)


def register_opts(conf):
    set_lib_defaults()
    conf.register_opts(db_options.database_opts, group=GROUP)
    conf.register_opts(GALERA_OPTS, group=GROUP)


def list_opts():
    """Ours only: the generator takes the rest of [database] from oslo.db.
    """
    return {GROUP: GALERA_OPTS}
