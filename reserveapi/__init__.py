
"""Bare metal node reservations for many nova-compute hosts."""

import warnings

# oslo.messaging (notifications) installs eventlet, which warns on import
# that it is deprecated when futurist or oslo.service look for it; we use
# neither its hub nor its monkey-patching, and the warning would open
# every command's output.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
