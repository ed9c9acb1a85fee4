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

"""The [healthcheck] group belongs to oslo.middleware; we only set its
defaults: ``GET /healthcheck`` checks the database unless told otherwise.
"""

from oslo_config import cfg
from oslo_middleware.healthcheck import opts as healthcheck_opts

GROUP = 'healthcheck'
DATABASE_BACKEND = 'reserveapi_database'


def set_lib_defaults():
    cfg.set_defaults(healthcheck_opts.HEALTHCHECK_OPTS,
                     backends=[DATABASE_BACKEND])


def register_opts(conf):
    set_lib_defaults()
    conf.register_opts(healthcheck_opts.HEALTHCHECK_OPTS, group=GROUP)


def list_opts():
    """None of ours: the generator takes [healthcheck] from oslo.middleware.
    """
    return {}
