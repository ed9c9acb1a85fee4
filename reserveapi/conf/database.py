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

"""The [database] group belongs to oslo.db; we only set its defaults."""

from oslo_config import cfg
from oslo_db import options as db_options

DEFAULT_CONNECTION = 'sqlite:///$state_path/reserveapi.sqlite'


def set_lib_defaults():
    # max_retries = 0: no connection test when the engine is created.
    # oslo.db's default retries it 10 times 10 s apart inside whatever
    # request comes first; an API process started while the database is
    # down must answer 503 at once, and connect again on the next request.
    cfg.set_defaults(db_options.database_opts, connection=DEFAULT_CONNECTION,
                     max_retries=0)


def register_opts(conf):
    set_lib_defaults()
    conf.register_opts(db_options.database_opts, group='database')


def list_opts():
    """None of ours: the generator takes [database] from oslo.db."""
    return {}
