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

"""Refuse a service token that would lift a credential's access rules.

keystonemiddleware does not check an application credential's access
rules when the request also carries a valid service token
(``X-Service-Token``): the request is then taken for one a service makes
on a user's behalf, as Nova does with a user's token and its own. A user
with the ``service`` role whose credential is restricted could send its
token twice, or a second token of the same credential, and do what its
rules forbid. Right inside auth_token, this answers 401 to a request
whose service token is its user token, or a token of an application
credential with access rules; a service's own, different token beside a
user token goes through as before.
"""

from oslo_log import log

from reserveapi.api import errors
from reserveapi.common import exception

LOG = log.getLogger(__name__)
TOKEN_AUTH_KEY = 'keystone.token_auth'  # noqa: S105 (an environ key)
"""Where auth_token leaves the validated user and service tokens."""


def refusal(token_auth):
    """Why the request's service token is refused, or None.

    ``token_auth``: auth_token's plugin, whose ``user`` and ``service``
    are keystoneauth1 AccessInfo (None when that token was not sent or
    not valid).
    """
    service = getattr(token_auth, 'service', None)
    if service is None:
        return None
    user = token_auth.user
    if user is not None and service.auth_token == user.auth_token:
        return 'the service token is the user token itself'
    if getattr(service, 'application_credential_access_rules',
               None) is not None:
        return ('the service token comes from an application credential '
                'with access rules')
    return None


class ServiceTokenCheck:
    """WSGI middleware, inside auth_token (which adds WWW-Authenticate to
    the 401)."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        token_auth = environ.get(TOKEN_AUTH_KEY)
        reason = refusal(token_auth)
        if reason is None:
            return self.application(environ, start_response)
        service = token_auth.service
        LOG.warning('Refused a service token of user %(user)s (application '
                    'credential %(credential)s): %(reason)s.',
                    {'user': service.user_id,
                     'credential': getattr(
                         service, 'application_credential_id', None),
                     'reason': reason})
        response = errors.from_exception(exception.Unauthorized(
            reason='The service token (X-Service-Token) is refused: %s. '
                   'Send a token of the service user, distinct from the '
                   'user token, or no service token.' % reason), environ)
        return response(environ, start_response)
