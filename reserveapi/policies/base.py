"""Check strings shared by the resource rule modules."""

ADMIN_OR_SERVICE = 'role:admin or role:service'
ADMIN_SERVICE_OR_READER = 'role:admin or role:service or role:reader'
ADMIN_SERVICE_OR_PROJECT_READER = (
    'role:admin or role:service or '
    '(role:reader and project_id:%(project_id)s)')
