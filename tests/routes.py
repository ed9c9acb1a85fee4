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

"""Every route of the API, for the suites that walk them all (the RBAC
matrix under a real Keystone, the database-down suite).

``routes()`` reads them, for now, from the operations the policy rules
document. When the walker over the real route tree (issue 8) lands, this
one function reads that instead; the suites do not change.
"""

from reserveapi import policies


def routes():
    """Sorted ``"METHOD /v1/path/{param}"`` strings, one per route."""
    return sorted({'%s %s' % (operation['method'], operation['path'])
                   for rule in policies.list_rules()
                   for operation in rule.operations})
