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

"""blazar.conf's ``[reserveapi]``: how the plugin reaches the service.

Apart from the plugin, which imports Blazar: the config generator lists
these options (the ``reserveapi.blazar`` namespace,
``etc/reserveapi/blazar-config-generator.conf``) without Blazar
installed.
"""

from oslo_config import cfg

from reserveapi.client import conf as client_conf

GROUP = client_conf.GROUP
DEFAULT_TIMEOUT = 20
"""Seconds each call to the service may take: blazar-api waits 60 s
(rpc_response_timeout) for blazar-manager, which waits for us."""


def register_opts(conf):
    """The service's endpoint (catalog or ``endpoint_override``) and
    credentials, as keystoneauth reads them. A service user with the
    ``service`` (or ``admin``) role may hold nodes for any project."""
    client_conf.register_keystoneauth_opts(conf, GROUP)
    conf.set_default('timeout', DEFAULT_TIMEOUT, group=GROUP)


def list_opts():
    """[(group, opts)] for the ``reserveapi.blazar`` namespace."""
    opts = client_conf.listed_keystoneauth_opts()
    cfg.set_defaults(opts, timeout=DEFAULT_TIMEOUT)
    return [(GROUP, opts)]
