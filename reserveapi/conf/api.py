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

GROUP = 'api'

opts = [
    cfg.HostAddressOpt('host_ip', default='127.0.0.1',
                       help='Address the development API server binds to.'),
    cfg.PortOpt('port', default=6390,
                help='Port the development API server binds to.'),
    cfg.StrOpt('auth_strategy', default='keystone',
               # Written under [DEFAULT], as in older services, it is read
               # with a deprecation warning rather than silently ignored.
               deprecated_group='DEFAULT',
               choices=[('keystone', 'Validate tokens with keystonemiddleware '
                                     'and enforce policy.'),
                        ('noauth', 'No authentication: every caller is an '
                                   'admin. Development only.')],
               help='How API callers are authenticated.'),
    cfg.IntOpt('max_limit', default=1000, min=1,
               help='Largest number of items one list request returns.'),
    cfg.StrOpt('public_endpoint',
               help='Base URL used in links (e.g. https://api.example.com/'
                    'reservation). Defaults to the URL of the request.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
