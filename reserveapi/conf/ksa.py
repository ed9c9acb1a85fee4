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

"""keystoneauth1 session, auth and adapter options for a peer service."""

import copy

from keystoneauth1 import loading as ks_loading

VALID_INTERFACES = ['internal', 'public']


def _adapter_opts(service_type):
    """Adapter options with our defaults built in.

    Built in rather than set with ``set_default``, which a test's config
    fixture would undo at cleanup.
    """
    opts = copy.deepcopy(ks_loading.get_adapter_conf_options())
    for opt in opts:
        if opt.dest == 'service_type':
            opt.default = service_type
        elif opt.dest == 'valid_interfaces':
            opt.default = VALID_INTERFACES
    return opts


def register_opts(conf, group, service_type):
    ks_loading.register_session_conf_options(conf, group)
    ks_loading.register_auth_conf_options(conf, group)
    conf.register_opts(_adapter_opts(service_type), group=group)


def list_opts(group, service_type):
    """Options for the config generator."""
    return (ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_auth_plugin_conf_options('password')
            + _adapter_opts(service_type))
