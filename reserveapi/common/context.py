"""Request context: who is calling, built from auth_token's headers."""

from oslo_context import context


class RequestContext(context.RequestContext):

    @classmethod
    def for_noauth(cls, environ):
        """Development mode: the caller is an admin of any project."""
        ctx = cls.from_environ(environ)
        ctx.roles = ['admin', 'member', 'reader']
        ctx.is_admin = True
        return ctx
