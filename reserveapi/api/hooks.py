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
