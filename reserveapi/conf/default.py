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

import os

from oslo_config import cfg

opts = [
    cfg.StrOpt('state_path',
               default=os.path.join(os.path.expanduser('~'), '.reserveapi'),
               help='Directory where reserveapi keeps its state, including '
                    'the default SQLite database.'),
    cfg.IntOpt('service_heartbeat_interval', default=10, min=0,
               help='Seconds between two heartbeats of every API worker '
                    'and reserveapi-worker in the database\'s services '
                    'table, which records the version each process runs. '
                    'A process not heard from for three intervals counts '
                    'as stopped. reserveapi-dbsync contract and '
                    'reserveapi-status upgrade check read it during a '
                    'rolling upgrade. 0 turns the heartbeats off.'),
]


def register_opts(conf):
    conf.register_opts(opts)


def list_opts():
    return {'DEFAULT': opts}
