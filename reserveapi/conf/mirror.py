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

GROUP = 'mirror'

opts = [
    cfg.BoolOpt('resolve_hosts_via_nova', default=False,
                help="Also resolve a host to every compute node Nova's "
                     'hypervisor list reports for it (an Ironic host has '
                     'one per node), not only to the provider named after '
                     'the host.'),
    cfg.FloatOpt('inline_timeout', default=5.0, min=0,
                 help='Seconds an API call waits for Placement before it '
                      'answers 202 and leaves the change to the worker.'),
    cfg.IntOpt('retry_interval', default=10, min=1,
               help='Seconds between passes of the worker over pending '
                    'changes.'),
    cfg.IntOpt('backoff_base', default=5, min=1,
               help='First retry delay in seconds; doubled per attempt.'),
    cfg.IntOpt('backoff_max', default=600, min=1,
               help='Longest delay between two retries of one change.'),
    cfg.IntOpt('lease_timeout', default=15, min=1,
               deprecated_name='claim_timeout',
               help='Seconds a leased change stays owned without being '
                    'renewed. A worker renews its leases while it applies '
                    'them, so this only bounds how long the changes of a '
                    'process that died wait before another takes them '
                    'over. Was claim_timeout: "claim" names only a claim '
                    'in Ironic.'),
    cfg.IntOpt('reconcile_interval', default=600, min=0,
               help='Seconds between sync-aggregates passes of the '
                    'worker (what "reserveapi-manage sync-aggregates" '
                    'does), which let new providers inherit their host\'s '
                    'aggregates. 0 disables it.'),
    cfg.IntOpt('reconcile_from_nova_interval', default=0, min=0,
               help='Seconds between sync-aggregates-from-nova passes of '
                    'the worker (what "reserveapi-manage sync-aggregates '
                    '--from-nova" does), which read Nova\'s '
                    'host aggregates (GET /os-aggregates at microversion '
                    '2.41, with the [nova] credentials) and apply them as '
                    'the desired state: a host joining or leaving an '
                    'aggregate, or an aggregate deleted, that nova-api\'s '
                    'hook could not tell the service (it was down or '
                    'hung) is repaired on every provider of the host. 0 '
                    '(the default) disables it.'),
    cfg.BoolOpt('reconcile_from_nova_prune', default=False,
                help='Let the sync from Nova also remove memberships '
                     'of our aggregates that neither Nova nor our records '
                     'explain (a provider an operator put in one by hand), '
                     'as "reserveapi-manage sync-aggregates --prune" does. '
                     'Without it those are only reported.'),
    cfg.BoolOpt('require_placement_credentials', default=False,
                help='Refuse to start reserveapi-api, the WSGI application '
                     'and reserveapi-worker while [placement] lacks the '
                     'options needed to authenticate (auth_type and its '
                     'plugin\'s options, or an endpoint with auth_type '
                     'none). By default they only log a warning naming the '
                     'missing options: aggregate changes then stay pending '
                     'until Placement is configured. Will default to true '
                     'in a later version.'),
    cfg.IntOpt('generation_retries', default=4, min=1,
               help='Attempts to update one provider when its generation '
                    'keeps changing under us.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
