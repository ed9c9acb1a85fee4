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

"""Client of ``/v1/nodes``: the inventory as the service knows it."""

import urllib.parse

from reserveapi.client import base


class NodeClient(base.BaseClient):

    def list(self, **query):
        """Every node matching ``query`` (filters, ``limit``, ``marker``,
        ``sort_key``, ``sort_dir``), following ``next`` links.
        """
        return self.pages('/v1/nodes', 'nodes', **query)

    def get(self, ident):
        """A node by UUID or name."""
        return self.request('GET', '/v1/nodes/%s'
                            % urllib.parse.quote(ident, safe=''))
