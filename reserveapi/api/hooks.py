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

"""Pecan hooks: request context, microversion, errors."""

from pecan import hooks

from reserveapi.api import errors
from reserveapi.api import microversion
from reserveapi.common import context


class ContextHook(hooks.PecanHook):
    """Builds ``request.context`` from auth_token's headers."""

    def __init__(self, auth_strategy):
        self.noauth = auth_strategy == 'noauth'

    def before(self, state):
        environ = state.request.environ
        if self.noauth:
            state.request.context = context.RequestContext.for_noauth(environ)
        else:
            state.request.context = context.RequestContext.from_environ(
                environ)


class MicroversionHook(hooks.PecanHook):
    """Parses OpenStack-API-Version and echoes it on the response."""

    def before(self, state):
        state.request.version = microversion.from_headers(
            state.request.headers)

    def after(self, state):
        version = getattr(state.request, 'version', None)
        if version is not None:
            state.response.headers[microversion.HEADER] = (
                microversion.header_value(version))
        state.response.headers['Vary'] = microversion.HEADER


class ErrorHook(hooks.PecanHook):
    """Renders every exception, including pecan's 404/405, as API-WG."""

    def on_error(self, state, exc):
        return errors.from_exception(exc, state.request.environ)
