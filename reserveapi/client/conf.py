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

"""How another service's config file reaches this one: a group of
keystoneauth1 session, auth and adapter options (nova.conf's and
blazar.conf's ``[reserveapi]``), and the adapter built from it.
"""

import copy

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from reserveapi.client import base

GROUP = 'reserveapi'


def adapter_opts():
    """keystoneauth1's adapter options, finding this service in the
    catalog by its service type, internal endpoint first."""
    opts = ks_loading.get_adapter_conf_options(include_deprecated=False)
    cfg.set_defaults(opts, service_type=base.SERVICE_TYPE,
                     valid_interfaces=['internal', 'public'])
    return opts


def listed_keystoneauth_opts():
    """The group's options as a sample config file shows them: the
    adapter's, the session's and the password plugin's, each once."""
    opts = (adapter_opts() + ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_auth_plugin_conf_options('password'))
    unique = {opt.dest: opt for opt in opts}
    return [copy.deepcopy(opt) for opt in unique.values()]


def register_keystoneauth_opts(conf, group=GROUP):
    """The adapter, session and auth options of ``group``."""
    conf.register_opts(adapter_opts(), group=group)
    ks_loading.register_session_conf_options(conf, group)
    ks_loading.register_auth_conf_options(conf, group)


def load_adapter(conf, group=GROUP, timeout=None):
    """A keystoneauth1 adapter for the service, as ``group`` configures
    it; ``timeout`` replaces the session's ``timeout`` option (Keystone's
    token requests included).
    """
    auth = ks_loading.load_auth_from_conf_options(conf, group)
    session_kwargs = {'auth': auth}
    if timeout is not None:
        session_kwargs['timeout'] = timeout
    session = ks_loading.load_session_from_conf_options(conf, group,
                                                        **session_kwargs)
    return ks_loading.load_adapter_from_conf_options(
        conf, group, session=session, auth=auth)
