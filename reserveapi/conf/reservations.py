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

GROUP = 'reservations'

opts = [
    cfg.IntOpt('reserved_ttl', default=0, min=0,
               help='Seconds after which a reservation still in state '
                    '"reserved" (never confirmed as deployed) is expired '
                    'by reserveapi-worker. 0 means never.'),
    cfg.IntOpt('expire_interval', default=60, min=1,
               help='Seconds between expiry passes of reserveapi-worker.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
