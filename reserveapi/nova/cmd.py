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

"""``reserveapi-nova-compute``: nova-compute with our driver loadable.

Nova loads a compute driver only from ``nova.virt`` (``compute_driver =
X.Y`` imports ``nova.virt.X``), so this registers
``reserveapi.nova.driver`` as ``nova.virt.reserveapi`` and then runs
nova-compute's own ``main``: ``compute_driver = reserveapi.IronicDriver``.
"""

import sys

VIRT_NAME = 'nova.virt.reserveapi'


def register():
    """Make ``reserveapi.IronicDriver`` a valid ``compute_driver``."""
    import nova.virt

    from reserveapi.nova import driver

    sys.modules[VIRT_NAME] = driver
    nova.virt.reserveapi = driver
    return driver


NOVA_MISSING = ("reserveapi-nova-compute needs Nova: pip install "
                "'reserveapi[nova]'")


def main():
    # nova-compute's module patches the standard library when imported;
    # it must come first, as it does in nova-compute's own script.
    try:
        from nova.cmd import compute
    except ModuleNotFoundError as exc:
        if (exc.name or '').partition('.')[0] != 'nova':
            raise
        sys.exit(NOVA_MISSING)

    register()
    return compute.main()
