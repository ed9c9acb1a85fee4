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

"""nova.conf ``[reserveapi]``: how nova-compute and nova-api reach the
reservation service, and what the driver and the aggregate hook do when
they cannot.

Listed for oslo-config-generator under the ``reserveapi.nova`` namespace
(``etc/reserveapi/nova-config-generator.conf``).
"""

import copy

from oslo_config import cfg

from reserveapi.client import conf as client_conf

GROUP = client_conf.GROUP

driver_opts = [
    cfg.BoolOpt('required', default=True,
                help='Refuse to start nova-compute when the reservation '
                     'service is not in the catalog or does not answer. '
                     'False runs the stock Ironic driver instead (one '
                     'compute node per Ironic node, deprecated), for the '
                     'time between upgrading nova-compute and deploying '
                     'the reservation service.'),
    cfg.IntOpt('inventory_cache_time', default=10, min=0,
               help='Seconds the capacity summary of this host\'s Ironic '
                    'partition (GET /v1/capacity: per resource class, the '
                    'free nodes\' traits, the architectures) is reused. '
                    'The resource tracker asks for the inventory on every '
                    'build; its cost does not grow with the inventory.'),
    cfg.IntOpt('traits_cache_time', default=300, min=0,
               deprecated_for_removal=True,
               deprecated_since='2027.1',
               deprecated_reason='The traits and architectures come with '
                                 'the capacity summary, reused for '
                                 'inventory_cache_time; no node is listed '
                                 'any more.',
               help='Ignored.'),
]

aggregate_hook_opts = [
    cfg.FloatOpt('aggregate_timeout', default=10.0, min=0.1,
                 help='nova-api: seconds the aggregate hook '
                      '(reserveapi.nova.aggregates) waits for the '
                      'reservation service, connecting and answering '
                      'included, in one attempt without retries. Nova '
                      'answers the aggregate call within about this much '
                      'even when the service is down or hung; a change '
                      'not made is repaired by the service\'s reconcile '
                      'from Nova. Keep it above the service\'s [mirror] '
                      'inline_timeout, which bounds how long the service '
                      'itself waits for Placement before it answers.'),
]


def register_opts(conf):
    """The whole ``[reserveapi]`` group, for the driver and the hook alike
    (registering it again, from the other module, changes nothing).
    """
    conf.register_opts(driver_opts + aggregate_hook_opts, group=GROUP)
    client_conf.register_keystoneauth_opts(conf, GROUP)


def list_opts():
    """[(group, opts)] for the ``reserveapi.nova`` generator namespace."""
    return [(GROUP, [copy.deepcopy(opt) for opt
                     in driver_opts + aggregate_hook_opts]
             + client_conf.listed_keystoneauth_opts())]


def load_adapter(conf, timeout=None):
    """A keystoneauth1 adapter for the service, as configured; ``timeout``
    replaces the session's ``[reserveapi] timeout`` (Keystone's token
    requests included).
    """
    return client_conf.load_adapter(conf, GROUP, timeout)
