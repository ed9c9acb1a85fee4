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

"""``[ironic]``: how to reach Ironic, which of its nodes are ours, and
whether a reservation also claims its node there.

The keystoneauth1 options are Nova's ``[ironic]`` options: ``auth_type =
none`` with ``endpoint_override``, or ``password`` and friends with the
catalog (``valid_interfaces``, ``region_name``); the CA options apply.
"""

from oslo_config import cfg

from reserveapi.conf import ksa

GROUP = 'ironic'
SERVICE_TYPE = 'baremetal'
TIMEOUT = 30
"""Default seconds an Ironic request may take; keystoneauth1's default
waits forever, which would hang a reservation with Ironic."""

opts = [
    cfg.BoolOpt('claim_nodes', default=True,
                help='With [inventory] source = ironic, also claim a '
                     "reserved node in Ironic: set its instance_uuid and "
                     "instance_info as Nova's Ironic driver does, so "
                     'that nobody else takes it. While Ironic is '
                     'unreachable, reservations then fail with 503. '
                     'With false, reservations are made from the last '
                     'synced inventory only.'),
    cfg.StrOpt('conductor_group',
               help='Only sync nodes of this Ironic conductor group (as '
                    "nova-compute's [ironic] conductor_group). Unset: "
                    'every group.'),
    cfg.StrOpt('shard',
               help='Only sync nodes of this Ironic shard (as '
                    "nova-compute's [ironic] shard). Unset: every shard."),
    cfg.IntOpt('page_size', default=1000, min=1,
               help='Nodes per page when listing Ironic. Ironic caps a '
                    'page at its [api] max_limit (1000 by default).'),
    cfg.IntOpt('api_max_retries', default=2, min=0,
               help="python-ironicclient's retries of a sync or worker "
                    'request that Ironic answered 409 or 503 or that '
                    'could not connect. Reservations never use them: a '
                    'claim decides itself what a 409 means, and an '
                    'unreachable Ironic fails a reservation at once.'),
    cfg.IntOpt('api_retry_interval', default=2, min=0,
               help='Seconds between the retries of api_max_retries.'),
    cfg.IntOpt('node_locked_retries', default=1, min=0,
               help='Retries of a claim or a clear that Ironic refused '
                    'because a conductor holds the node\'s lock (a '
                    'NodeLocked 409, itself answered after Ironic\'s own '
                    '[conductor] node_locked_retry_attempts, about 3 s). '
                    'Any other 409 moves on at once.'),
    cfg.FloatOpt('node_locked_retry_interval', default=0.2, min=0,
                 help='Seconds before the first NodeLocked retry; doubled '
                      'for each further one.'),
    cfg.IntOpt('reconcile_interval', default=300, min=0,
               help='Seconds between passes of reserveapi-worker that '
                    'clear claims left in Ironic (released while Ironic '
                    'was down) and repair reservations Ironic '
                    'contradicts, logging each. 0 disables them.'),
    cfg.IntOpt('orphan_claim_grace', default=300, min=0,
               help='Seconds a claim of ours may stand on an available '
                    'Ironic node with no reservation holding it and no '
                    'clear under way before the reconcile pass clears it '
                    '(a claim on its way to its reservation is far '
                    'younger). Claims of other tools are never touched.'),
]


def register_opts(conf):
    ksa.register_opts(conf, GROUP, SERVICE_TYPE, timeout=TIMEOUT)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: ksa.list_opts(GROUP, SERVICE_TYPE, timeout=TIMEOUT)
            + opts}
