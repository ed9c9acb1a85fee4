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

GROUP = 'notifications'

opts = [
    cfg.IntOpt('queue_size', default=1000, min=1,
               help='Events a process holds while the message bus is slow '
                    'or down. They are sent in the background, in order, '
                    'once it answers; beyond this many the newest are '
                    'dropped (and logged), so an API call never waits for '
                    'the bus. Notifications are off unless '
                    '[oslo_messaging_notifications] driver is set.'),
    cfg.FloatOpt('flush_timeout', default=5.0, min=0,
                 help='Seconds a command that ends (reserveapi-manage, '
                      'reserveapi-worker --once) waits for its events to '
                      'be sent before it exits.'),
    cfg.IntOpt('mirror_pending_attempts', default=5, min=1,
               help='Failed attempts after which an aggregate membership '
                    'change that Placement has not taken yet is notified '
                    '(baremetal_reservation.aggregate.pending), once.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
