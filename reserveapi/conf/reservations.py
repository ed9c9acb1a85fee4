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
    cfg.IntOpt('reserved_ttl', default=7200, min=0,
               help='Seconds after which a reservation still in state '
                    '"reserved" (never confirmed as deployed) is expired '
                    'by reserveapi-worker, which frees its node. The driver '
                    'confirms a reservation as soon as its node is active, '
                    'so only a build that never finished (nova-compute '
                    'crashed, or lost the reservation) stays reserved. The '
                    'default outlasts any deploy Ironic lets run by '
                    'default ([conductor] deploy_callback_timeout, 30 '
                    'minutes), with room for slow image downloads and '
                    'cleaning; raise it if your deploys take longer. Even '
                    'after it, a node that Ironic still reports as '
                    'deploying or holding an instance is not handed out. 0 '
                    'means never, which leaks a node for every lost '
                    'build.'),
    cfg.IntOpt('expire_interval', default=60, min=1,
               help='Seconds between expiry passes of reserveapi-worker.'),
    cfg.IntOpt('orphan_interval', default=0, min=0,
               help='Seconds between release-orphans passes of '
                    'reserveapi-worker, which release reservations whose '
                    'instance Nova has deleted '
                    '(deleted while its compute host was down, so that no '
                    'driver released it). Needs [nova] credentials that '
                    'may list servers of every project and compute '
                    'services. 0 (the default) disables it; '
                    '"reserveapi-manage release-orphans" does the '
                    'same on demand.'),
    cfg.IntOpt('orphan_grace', default=1800, min=0,
               help='Seconds an instance must have been deleted in Nova '
                    'before its reservation is released as an orphan, so '
                    'that a driver still tearing the node down releases it '
                    'itself first.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
