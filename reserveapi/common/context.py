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
