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
                                 "Ironic's GET /v1/nodes?detail=True."),
                        ('ironic', 'The Ironic service of [ironic]: '
                                   'synced by reserveapi-worker and '
                                   'reserveapi-manage sync-nodes.')],
               help='Where the node inventory comes from.'),
    cfg.StrOpt('file', default='/etc/reserveapi/nodes.yaml',
               help='Inventory document used when source is "file"; '
                    'never read otherwise.'),
    cfg.IntOpt('sync_interval', default=60, min=0,
               help='Seconds between inventory syncs run by '
                    'reserveapi-worker. 0 disables the periodic sync. '
                    'With source = ironic, a pass reads only what changed '
                    'since the last one, unless full_sync_interval has '
                    'passed.'),
    cfg.IntOpt('full_sync_interval', default=600, min=0,
               help='With source = ironic: seconds after which the '
                    "worker's next pass reads every node again, which is "
                    'how nodes deleted from Ironic leave the inventory. '
                    '0 makes every pass a full one.'),
    cfg.IntOpt('sync_margin', default=60, min=0,
               help='With source = ironic: seconds before the newest '
                    'change already read at which an incremental pass '
                    "stops reading, for Ironic services' clock skew and "
                    'late commits.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
