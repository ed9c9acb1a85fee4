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

"""[audit]: keystonemiddleware's audit middleware in the API, Ironic's
option names (doc/source/admin/audit.rst). Where the events go is
keystonemiddleware's own [audit_middleware_notifications].
"""

from oslo_config import cfg

GROUP = 'audit'

opts = [
    cfg.BoolOpt('enabled', default=False,
                help='Send a CADF event (audit.http.request, then '
                     'audit.http.response) for every API request but '
                     'those of ignore_req_list, with the caller\'s user '
                     'and project as auth_token validated them. The '
                     'events go where [audit_middleware_notifications] '
                     'says, else [oslo_messaging_notifications]; with no '
                     'driver set in either, none is sent.'),
    cfg.StrOpt('audit_map_file', default='api_audit_map.conf',
               help='The audit map: which path segments name a resource '
                    'and which CADF type the service is. An absolute path, '
                    'or one looked for beside the configuration files, '
                    'then in ~/.reserveapi/, ~/, /etc/reserveapi/ and '
                    '/etc/. With enabled, a map that cannot be found or '
                    'read stops the API at start-up. The package ships '
                    'etc/reserveapi/api_audit_map.conf (installed under '
                    'the virtualenv\'s etc/reserveapi/).'),
    cfg.ListOpt('ignore_req_list', default=['GET', 'HEAD'],
                help='HTTP methods not audited: by default every write '
                     '(POST, PUT, PATCH, DELETE) is, and no read. Empty: '
                     'every request.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
