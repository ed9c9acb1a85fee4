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

from oslo_config import cfg

GROUP = 'inventory'

opts = [
    cfg.StrOpt('source', default='file',
               choices=[('file', 'A JSON or YAML document shaped like '
                                 "Ironic's GET /v1/nodes?detail=True.")],
               help='Where the node inventory comes from.'),
    cfg.StrOpt('file', default='/etc/reserveapi/nodes.yaml',
               help='Inventory document used when source is "file".'),
    cfg.IntOpt('sync_interval', default=60, min=0,
               help='Seconds between inventory syncs run by '
                    'reserveapi-worker. 0 disables the periodic sync.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
