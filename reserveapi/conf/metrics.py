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

"""[metrics]: what Prometheus may scrape (doc/source/admin/monitoring.rst).
"""

from oslo_config import cfg

GROUP = 'metrics'

opts = [
    cfg.BoolOpt('enabled', default=False,
                help='Serve metrics in the Prometheus text format: the API '
                     'at [metrics] path, reserveapi-worker on [metrics] '
                     'worker_host and worker_port. Under gunicorn, run it '
                     'with "-c python:reserveapi.wsgi.gunicorn_config" so '
                     'that a scrape sums every worker process.'),
    cfg.StrOpt('path', default='/metrics', regex=r'^/[A-Za-z0-9_./-]*$',
               help='Path of the API\'s metrics. It needs no token '
                    '(Prometheus has none); allowed_networks can restrict '
                    'it.'),
    cfg.ListOpt('allowed_networks', default=[],
                help='Networks (CIDR, e.g. 10.0.0.0/8) whose addresses may '
                     'read the API\'s metrics; others get 403. Empty: '
                     'anyone who reaches the API. The address is the '
                     'connection\'s peer, a proxy\'s if there is one.'),
    cfg.HostAddressOpt('worker_host', default='127.0.0.1',
                       help='Address reserveapi-worker serves its metrics '
                            'on (/metrics). Set the management address '
                            'for a Prometheus on another host.'),
    cfg.PortOpt('worker_port', default=6391,
                help='Port reserveapi-worker serves its metrics on. Two '
                     'workers on one host need two ports.'),
    cfg.IntOpt('max_host_series', default=200, min=1,
               help='Compute hosts that get a series of their own in '
                    'reserveapi_reservations_live (those with the most live '
                    'reservations); the others are summed in one series, '
                    'so a cloud\'s host count cannot grow the scrape '
                    'without bound.'),
    cfg.FloatOpt('database_timeout', default=5.0, min=0.1,
                 help='Seconds a scrape of reserveapi-worker waits for the '
                      'database gauges (capacity, mirror, inventory sync, '
                      'leases); past it the scrape answers without them '
                      'and reserveapi_database_up is 0.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
