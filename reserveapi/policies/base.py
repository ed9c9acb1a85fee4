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

"""Check strings and the rule constructor shared by the resource modules."""

from oslo_policy import policy

ADMIN_OR_SERVICE = 'role:admin or role:service'
ADMIN_SERVICE_OR_READER = 'role:admin or role:service or role:reader'
ADMIN_SERVICE_OR_PROJECT_READER = (
    'role:admin or role:service or '
    '(role:reader and project_id:%(project_id)s)')


def rule(name, check_str, description, method, path):
    """A project-scoped rule guarding one API operation."""
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': method, 'path': path}],
        scope_types=['project'])
