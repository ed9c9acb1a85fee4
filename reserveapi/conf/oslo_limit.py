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

"""The [oslo_limit] group belongs to oslo.limit, which reads a project's
unified limits in Keystone (``[holds] unified_limits``); we register it
at start-up, as oslo.limit's ``opts`` does, without loading the
enforcer and the OpenStack SDK it needs.
"""

from keystoneauth1 import loading as ks_loading
from oslo_limit import opts as limit_opts

GROUP = 'oslo_limit'


def register_opts(conf):
    limit_opts.register_opts(conf)


def list_opts():
    """``auth_type`` and ``auth_section`` only: the generator takes the
    rest of [oslo_limit] from oslo.limit's namespace, whose list leaves
    out these two, without which no credentials can be loaded.
    """
    return {GROUP: ks_loading.get_auth_common_conf_options()}
