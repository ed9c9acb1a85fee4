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


"""Engines for the harnesses that watch the database beside the service.

Their connections carry a name, so that ``reserveapi-dbsync contract``
and the upgrade check leave them out as another program's: a session
that names nothing might be a process of version 1.0.0.
"""

import sqlalchemy as sa

NAME = 'reserveapi-testing-observer'
_NAMED_BY = {'postgresql': 'application_name', 'mysql': 'program_name'}


def engine(url, **kwargs):
    """``sqlalchemy.create_engine(url, **kwargs)``, its connections
    named."""
    argument = _NAMED_BY.get(sa.engine.make_url(url).get_backend_name())
    if argument:
        kwargs['connect_args'] = dict(kwargs.get('connect_args', {}),
                                      **{argument: NAME})
    return sa.create_engine(url, **kwargs)
