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

"""Node inventories for functional tests.

Tests describe nodes the way Ironic's ``GET /v1/nodes?detail=True``
does; :func:`sync` writes them as a YAML document into a temporary
directory, points ``[inventory] file`` at it and runs the real sync, so
every test goes through the same path as ``reserveapi-manage
sync-nodes``.
"""

import io
import os
import uuid

import fixtures
import yaml

from reserveapi import conf
from reserveapi.cmd import manage as manage_cmd
from reserveapi.inventory import sync as inventory_sync

# Node uuids derive from names, so a test can know them before syncing.
_NAMESPACE = uuid.UUID('6c1f9d1e-2b0a-4a8e-9a57-8f3f0e6f4a11')


def node_uuid(name):
    return str(uuid.uuid5(_NAMESPACE, name))


def node(name, resource_class='baremetal-gold', memory_mb=8192, cpus=8,
         local_gb=100, cpu_arch='x86_64',
         capabilities='boot_mode:uefi,supports_uefi:true,has_gpu:True',
         traits=('CUSTOM_RAID', 'HW_CPU_X86_AVX2'),
         provision_state='available',
         power_state='power off', maintenance=False, retired=False,
         instance_uuid=None, owner=None, lessee=None, conductor_group='',
         shard=None, uuid=None, ironic_traits=False):
    """One node as Ironic lists it; the defaults make an eligible node
    that the example request spec (reserveapi_testing/examples.py)
    matches.

    ``ironic_traits`` writes traits in Ironic's ``[{"trait": ...}]`` form.
    """
    return {
        'uuid': uuid or node_uuid(name),
        'name': name,
        'resource_class': resource_class,
        'properties': {'memory_mb': memory_mb, 'cpus': cpus,
                       'local_gb': local_gb, 'cpu_arch': cpu_arch,
                       'capabilities': capabilities},
        'traits': ([{'trait': trait} for trait in traits]
                   if ironic_traits else list(traits)),
        'provision_state': provision_state,
        'power_state': power_state,
        'maintenance': maintenance,
        'retired': retired,
        'instance_uuid': instance_uuid,
        'conductor_group': conductor_group,
        'shard': shard,
        'owner': owner,
        'lessee': lessee,
    }


def write(directory, nodes, filename='nodes.yaml'):
    """Write ``{"nodes": nodes}`` as YAML; returns the path."""
    path = os.path.join(directory, filename)
    with open(path, 'w', encoding='utf-8') as stream:
        yaml.safe_dump({'nodes': list(nodes)}, stream)
    return path


def use(test, nodes, filename='nodes.yaml'):
    """Point ``[inventory] file`` at a new document holding ``nodes``."""
    directory = test.useFixture(fixtures.TempDir()).path
    path = write(directory, nodes, filename)
    test.config(file=path, group='inventory')
    return path


def sync(test, nodes):
    """Write ``nodes``, point the config at them and sync; the counts."""
    use(test, nodes)
    return inventory_sync.sync()


def sync_path(test, nodes):
    """As ``sync``; the document's path."""
    path = use(test, nodes)
    inventory_sync.sync()
    return path


def manage(test, *argv):
    """Run ``reserveapi-manage ARGV`` in this process, on the test's
    database and configuration overrides.

    Returns ``(exit code, stdout, stderr)``.
    """
    return run_command(test, manage_cmd, *argv)


def run_command(test, command, *argv):
    """Run the console script of module ``command`` (``reserveapi.cmd.*``)
    with ``argv`` in this process, on the test's database and
    configuration overrides.

    Returns ``(exit code, stdout, stderr)``; a ``sys.exit(message)`` is
    exit code ``message``.
    """
    directory = test.useFixture(fixtures.TempDir()).path
    config_file = os.path.join(directory, 'reserveapi.conf')
    with open(config_file, 'w') as stream:
        stream.write('[DEFAULT]\n')
    stdout = io.StringIO()
    stderr = io.StringIO()
    test.useFixture(fixtures.MonkeyPatch('sys.stdout', stdout))
    test.useFixture(fixtures.MonkeyPatch('sys.stderr', stderr))
    # Keep the test runner's log capture.
    test.useFixture(fixtures.MockPatch('oslo_log.log.setup'))

    def forget_command_line():
        # The base test case parses no command; a later test must too.
        conf.CONF.clear()
        conf.CONF.unregister_opt(command.COMMAND_OPT)

    conf.CONF.clear()
    test.addCleanup(forget_command_line)
    try:
        code = command.main(['--config-file', config_file] + list(argv))
    except SystemExit as exit_:
        code = exit_.code
    return code, stdout.getvalue(), stderr.getvalue()
