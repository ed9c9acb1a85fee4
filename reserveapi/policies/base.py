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
