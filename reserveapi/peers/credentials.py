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


"""Are the keystoneauth1 credentials of a peer group complete?

The aggregate mirror needs ``[placement]`` (and ``[nova]`` for the
features that ask Nova). Without them every change stays pending with a
keystoneauth error that names no option, so the services check at
start-up and name each missing option: a warning by default, fatal with
``[mirror] require_placement_credentials = true``. ``reserveapi-status
upgrade check`` uses the same function.
"""

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_log import log

from reserveapi.common import exception
import reserveapi.conf

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF

DEFAULT_AUTH_TYPE = 'password'
"""What we check a group against when it names no auth_type: the plugin
nearly every deployment uses for a service user."""

_USER = ('username', 'user_id')
_USER_DOMAIN = ('user_domain_name', 'user_domain_id', 'default_domain_name',
                'default_domain_id')
_PROJECT_DOMAIN = ('project_domain_name', 'project_domain_id',
                   'default_domain_name', 'default_domain_id')
_SCOPE = ('project_name', 'project_id', 'domain_name', 'domain_id',
          'system_scope', 'trust_id')
_APP_CREDENTIAL = ('application_credential_id',
                   'application_credential_name')
_ENDPOINT = ('endpoint_override', 'endpoint')


def missing_options(group):
    """Names of the options ``[group]`` still needs, in the order an
    operator would write them; alternatives read "username or user_id".

    An empty list means the options are complete, not that they are
    right: only a request tells that.
    """
    auth_type = CONF[group].auth_type
    missing = [] if auth_type else ['auth_type']
    try:
        loader = ks_loading.get_plugin_loader(auth_type or DEFAULT_AUTH_TYPE)
    except ks_exc.NoMatchingPlugin:
        return ['auth_type (%r is no keystoneauth1 plugin)' % auth_type]
    _register(group, ks_loading.get_auth_plugin_conf_options(loader))
    values = _Values(CONF[group])
    available = {opt.dest for opt in loader.get_options()} | {
        'endpoint_override'}
    for alternatives in _requirements(loader, available, values):
        alternatives = [name for name in alternatives if name in available]
        if alternatives and not any(values[name] for name in alternatives):
            # The two usual spellings; any of the others is accepted too.
            missing.append(' or '.join(alternatives[:2]))
    return missing


def _register(group, opts):
    """Register the plugin's options, as loading the plugin would; one
    another plugin registered under the same name (``endpoint``) stays.
    """
    for opt in opts:
        try:
            CONF.register_opt(opt, group=group)
        except cfg.DuplicateOptError:
            pass


def _requirements(loader, available, values):
    """The groups of alternatives the plugin needs, given what is set."""
    required = [(opt.dest,) for opt in loader.get_options() if opt.required]
    if 'auth_url' not in available:
        # No identity service: the adapter needs the endpoint itself.
        return required + [('username',), ('password',), ('token',),
                           _ENDPOINT]
    if 'application_credential_secret' in available:
        required.append(_APP_CREDENTIAL)
        if (values.application_credential_name
                and not values.application_credential_id):
            # A credential known by name belongs to a user we must name.
            required += [_USER] + _domain_of_user(values)
        return required
    if 'password' in available:
        required += [_USER, ('password',)] + _domain_of_user(values)
    required += [('token',), _SCOPE]
    if values.project_name and not values.project_id:
        required.append(_PROJECT_DOMAIN)
    return required


def _domain_of_user(values):
    """A user given by name needs its domain; one given by id does not."""
    if values.username and not values.user_id:
        return [_USER_DOMAIN]
    return []


class _Values:
    """A group's values by attribute; None for an option the chosen
    plugin does not have.
    """

    def __init__(self, group):
        self._group = group

    def __getattr__(self, name):
        return self[name]

    def __getitem__(self, name):
        try:
            return self._group[name]
        except cfg.NoSuchOptError:
            return None


def describe_missing(group, missing):
    return ('[%s] lacks %s: set %s (see the sample configuration).'
            % (group, ', '.join(missing),
               'it' if len(missing) == 1 else 'them'))


def unusable_reason(group):
    """Why requests to the peer of ``group`` cannot be made, for the
    reason a pending change shows: the options the start-up check found
    missing, or at least auth_type.
    """
    return describe_missing(group, _found_at_startup.get(group)
                            or ['auth_type'])


_found_at_startup = {}


def check_placement_at_startup():
    """Warn once, naming each missing ``[placement]`` option; raise
    ``MissingCredentials`` instead with ``[mirror]
    require_placement_credentials = true``.
    """
    missing = missing_options('placement')
    _found_at_startup['placement'] = missing
    if not missing:
        return
    message = ('%s Until then the aggregate mirror cannot reach '
               'Placement and every change stays pending.'
               % describe_missing('placement', missing))
    if CONF.mirror.require_placement_credentials:
        raise exception.MissingCredentials(message)
    LOG.warning(message)


IRONIC_SOURCE = 'ironic'


def check_ironic_at_startup():
    """With ``[inventory] source = ironic`` every sync, and every claim,
    needs ``[ironic]``: raise ``MissingCredentials`` naming each missing
    option, rather than failing every job and reservation later.
    """
    if CONF.inventory.source != IRONIC_SOURCE:
        return
    missing = missing_options('ironic')
    if missing:
        raise exception.MissingCredentials(
            '%s [inventory] source is ironic: the inventory sync and the '
            'claims in Ironic need them.'
            % describe_missing('ironic', missing))
