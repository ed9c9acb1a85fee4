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

GROUP = 'holds'

opts = [
    cfg.IntOpt('cleaning_padding', default=3600, min=0,
               help='Seconds a hold keeps its nodes before its start and '
                    'after its end, for Ironic to clean them between one '
                    'window and the next. Admission counts a hold as '
                    'taking its nodes over its window padded at both '
                    'ends. A hold keeps the padding it was admitted '
                    'with; a change applies to holds admitted after it.'),
    cfg.IntOpt('max_length', default=30 * 86400, min=0,
               help='Longest window of a hold, in seconds. A project\'s '
                    'holds of one resource class that overlap, or lie no '
                    'more than twice cleaning_padding apart (a gap '
                    'nobody else could use), count as one window '
                    '(anti-stacking), so a long window cannot be booked '
                    'as a chain of short ones. 0 means no limit.'),
    cfg.IntOpt('max_lead_time', default=90 * 86400, min=0,
               help='Seconds ahead of now a hold may start at the latest. '
                    '0 means no limit.'),
    cfg.IntOpt('max_amount_per_project', default=0, min=0,
               help='Most nodes one project may hold at any one instant, '
                    'summed over its overlapping holds. 0 means no '
                    'limit. Not read with unified_limits.'),
    cfg.BoolOpt('unified_limits', default=False,
                help='Take the most nodes a project may hold at any one '
                     'instant from Keystone\'s unified limits instead of '
                     'max_amount_per_project, so that operators set it per '
                     'project: the project\'s limit on the resource '
                     'baremetal_hold_nodes (one for every resource class) '
                     'of the service and region of the endpoint '
                     '[oslo_limit] names, else that resource\'s registered '
                     'limit; -1 means no limit, and with no registered '
                     'limit a project may hold no node, as oslo.limit '
                     'reads it. The limit is read at each hold created or '
                     'changed; while Keystone cannot tell it, the request '
                     'is refused with 503 reserveapi.keystone_unavailable '
                     'and nothing changes. [oslo_limit] also needs '
                     'credentials that may read endpoints (the reader '
                     'role on the system) and a timeout.'),
    cfg.IntOpt('tend_interval', default=60, min=0,
               help='Seconds between the worker\'s rounds over the holds: '
                    'it creates each hold\'s private flavor in Nova, pins '
                    'its nodes at its start, gives back idle pins, warns '
                    'before its end and carries the end out. A hold\'s '
                    'start and end take effect up to this late. 0 turns '
                    'the job off.'),
    cfg.IntOpt('pin_idle_time', default=0, min=0,
               help='Seconds a pinned node may wait for one of its hold\'s '
                    'boots before the worker gives it back (reclaimed): '
                    'the hold then keeps one node fewer, and anyone may '
                    'reserve it. 0 means pins wait until the hold ends.'),
    cfg.IntOpt('end_notice', default=3600, min=0,
               help='Seconds before a hold ends at which the worker sends '
                    'the hold.end_soon notification, once: time for its '
                    'project to save its work before its instances are '
                    'deleted (at_end=delete). 0 sends none.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
