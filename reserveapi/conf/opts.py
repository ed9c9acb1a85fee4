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

"""Entry points for oslo-config-generator."""

from reserveapi.conf import api
from reserveapi.conf import audit
from reserveapi.conf import database
from reserveapi.conf import default
from reserveapi.conf import healthcheck
from reserveapi.conf import holds
from reserveapi.conf import inventory
from reserveapi.conf import ironic
from reserveapi.conf import matcher
from reserveapi.conf import metrics
from reserveapi.conf import mirror
from reserveapi.conf import notifications
from reserveapi.conf import nova
from reserveapi.conf import oslo_limit
from reserveapi.conf import placement
from reserveapi.conf import reservations

MODULES = (default, api, audit, database, healthcheck, holds, inventory,
           ironic, matcher, metrics, mirror, notifications, nova, oslo_limit,
           placement, reservations)


def list_opts():
    """[(group, [opts])] for the oslo.config.opts entry point."""
    groups = {}
    for module in MODULES:
        for group, opts in module.list_opts().items():
            groups.setdefault(group, []).extend(opts)
    return sorted(groups.items())


def update_opt_defaults():
    """oslo.config.opts.defaults: our defaults for library options."""
    database.set_lib_defaults()
    healthcheck.set_lib_defaults()
