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
ADMIN_SERVICE_OR_PROJECT_MANAGER = (
    'role:admin or role:service or '
    '(role:manager and project_id:%(project_id)s)')
ADMIN_SERVICE_OR_NODE_PROJECT = (
    'role:admin or role:service or '
    '(role:reader and (project_id:%(node.owner)s or '
    'project_id:%(node.lessee)s))')
"""Target: ``node.owner`` and ``node.lessee``, each present only when
set (a missing key never matches)."""


def rule(name, check_str, description, method, path, *more_operations):
    """A project-scoped rule guarding one API operation, or more:
    ``more_operations`` are further ``(method, path)`` pairs.
    """
    operations = [(method, path)] + list(more_operations)
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': one_method, 'path': one_path}
                    for one_method, one_path in operations],
        scope_types=['project'])
