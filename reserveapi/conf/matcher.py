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

GROUP = 'matcher'

opts = [
    cfg.IntOpt('subset_size', default=10, min=1,
               help='A reservation picks at random among this many of the '
                    'best fitting nodes, so that concurrent requests for '
                    'the same flavor rarely collide.'),
    cfg.BoolOpt('exact_match', default=False,
                help='Demand that memory and CPU count equal the flavor '
                     "(Nova's old Exact*Filter behaviour) instead of being "
                     'at least as large.'),
    cfg.IntOpt('batch_size', default=500, min=1,
               help='Nodes loaded per batch when checking the predicates '
                    'that cannot be expressed in SQL.'),
    cfg.IntOpt('max_attempts', default=5, min=1,
               help='Candidates tried, of one read of the best fitting '
                    'nodes, when concurrent requests take the chosen node '
                    'first. Should they take every one tried, the nodes '
                    'are read again, up to 10 times.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
