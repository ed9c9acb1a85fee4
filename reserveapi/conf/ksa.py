"""keystoneauth1 session, auth and adapter options for a peer service."""

import copy

from keystoneauth1 import loading as ks_loading


def register_opts(conf, group, service_type):
    ks_loading.register_session_conf_options(conf, group)
    ks_loading.register_auth_conf_options(conf, group)
    ks_loading.register_adapter_conf_options(conf, group)
    conf.set_default('service_type', service_type, group=group)
    conf.set_default('valid_interfaces', ['internal', 'public'], group=group)


def list_opts(group, service_type):
    """Options for the config generator, with our defaults filled in."""
    adapter_opts = copy.deepcopy(ks_loading.get_adapter_conf_options())
    for opt in adapter_opts:
        if opt.dest == 'service_type':
            opt.default = service_type
        elif opt.dest == 'valid_interfaces':
            opt.default = ['internal', 'public']
    return (ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_auth_plugin_conf_options('password')
            + adapter_opts)
