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

"""Bare metal node reservations for many nova-compute hosts."""

import warnings

# oslo.messaging (notifications) installs eventlet, which warns on import
# that it is deprecated when futurist or oslo.service look for it; we use
# neither its hub nor its monkey-patching, and the warning would open
# every command's output.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
