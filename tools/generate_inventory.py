#!/usr/bin/env python3
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

"""Generate a node inventory like Ironic's ``GET /v1/nodes?detail=True``.

Usage::

    python tools/generate_inventory.py --count 300 --seed 42 \\
        --output etc/reserveapi/nodes.yaml
    python tools/generate_inventory.py --count 100000 --seed 1 \\
        --output /tmp/nodes.json

The same count and seed always give the same bytes.  The format follows the
output's extension (``.json``, else YAML) unless ``--format`` says.  Nodes
are written one at a time, so memory stays flat however many are asked for.

The mix resembles a real bare metal cloud: several resource classes (most
in Ironic's lower-case spelling), mostly x86_64 with some aarch64, traits in
both of Ironic's forms, varied capability strings, mostly ``available``
nodes plus deployed, manageable, cleaning, enrolling, maintenance and
retired ones, and some owned by ``OWNER_PROJECT`` or leased to
``LESSEE_PROJECT``.  Needs only the standard library.
"""

import argparse
import functools
import itertools
import json
import os
import random
import re
import sys
import uuid

OWNER_PROJECT = '5d8e3f1a9c2b4e6f8a0b1c2d3e4f5a6b'
LESSEE_PROJECT = '9f8e7d6c5b4a49382716051a2b3c4d5e'
CONDUCTOR_GROUPS = ('', '', 'rack-a', 'rack-b', 'rack-c')

# name: (weight, cpu_arch, memory_mb choices, cpus, local_gb,
#        {trait: probability}, probability of a GPU)
PROFILES = {
    'baremetal-silver': (35, 'x86_64', (32768, 65536), (8, 16, 24),
                         (240, 480), {'HW_CPU_X86_AVX2': 0.7,
                                      'CUSTOM_RAID': 0.3}, 0.0),
    'baremetal-gold': (30, 'x86_64', (131072, 262144), (32, 48, 64),
                       (480, 960, 1920), {'HW_CPU_X86_AVX2': 0.95,
                                          'CUSTOM_RAID': 0.7,
                                          'CUSTOM_NVME': 0.4}, 0.3),
    'baremetal-gpu': (10, 'x86_64', (262144, 524288), (64, 96),
                      (1920, 3840), {'HW_CPU_X86_AVX2': 1.0,
                                     'HW_CPU_X86_AVX512F': 0.5,
                                     'CUSTOM_NVME': 0.8}, 1.0),
    # Upper case, as some operators write it: Nova reports it as
    # CUSTOM_BAREMETAL_LARGE. (An Ironic class CUSTOM_X would be reported
    # as CUSTOM_CUSTOM_X.)
    'BAREMETAL_LARGE': (10, 'x86_64', (524288, 1048576), (96, 128),
                        (3840, 7680), {'HW_CPU_X86_AVX2': 1.0,
                                       'HW_CPU_X86_AVX512F': 0.8,
                                       'CUSTOM_RAID': 0.9,
                                       'CUSTOM_NVME': 0.6}, 0.0),
    'baremetal-arm': (10, 'aarch64', (65536, 131072, 262144), (64, 80, 128),
                      (480, 960), {'HW_CPU_AARCH64_ASIMD': 1.0,
                                   'HW_CPU_AARCH64_SVE': 0.4,
                                   'CUSTOM_NVME': 0.5}, 0.0),
    # Just enrolled: no resource class or properties yet, only a weight.
    None: (5,),
}
# Twice as many A100s as H100s.
GPU_TRAITS = ('CUSTOM_GPU_A100', 'CUSTOM_GPU_A100', 'CUSTOM_GPU_H100')

# (weight, provision_state, power_state, deployed)
STATES = (
    (72, 'available', 'power off', False),
    (12, 'active', 'power on', True),
    (6, 'manageable', 'power off', False),
    (3, 'cleaning', 'power on', False),
    (2, 'clean wait', 'power on', False),
    (2, 'deploy failed', 'power on', False),
    (3, 'available', None, False),
)


def generate_nodes(count, seed):
    """Yield ``count`` node dicts, the same ones for the same seed."""
    rng = random.Random(seed)
    profiles = list(PROFILES.items())
    profile_weights = [profile[0] for _, profile in profiles]
    state_weights = [state[0] for state in STATES]
    width = len(str(count))
    for index in range(1, count + 1):
        resource_class, profile = rng.choices(profiles, profile_weights)[0]
        if resource_class is None:
            yield _enrolled_node(rng, index, width)
        else:
            state = rng.choices(STATES, state_weights)[0]
            yield _node(rng, index, width, resource_class, profile, state)


CHANGED_TRAIT = 'CUSTOM_BENCH_CHANGED'


def changed(node):
    """``node`` as a later read finds it after a change of every node
    (a trait added, and one more MiB where it has a size): what a
    benchmark's sync that rewrites every node and its traits reads."""
    properties = dict(node['properties'])
    if isinstance(properties.get('memory_mb'), int):
        properties['memory_mb'] += 1
    traits = list(node['traits'])
    # In the form the node's other traits take.
    traits.append({'trait': CHANGED_TRAIT} if traits and isinstance(
        traits[0], dict) else CHANGED_TRAIT)
    return dict(node, properties=properties, traits=traits)


def _uuid(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _enrolled_node(rng, index, width):
    return {
        'uuid': _uuid(rng), 'name': 'node-%0*d' % (width, index),
        'resource_class': None, 'properties': {}, 'traits': [],
        'provision_state': 'enroll', 'power_state': None,
        'maintenance': False, 'retired': False, 'instance_uuid': None,
        'conductor_group': '', 'owner': None, 'lessee': None,
    }


def _node(rng, index, width, resource_class, profile, state):
    _, arch, memory, cpus, disk, trait_odds, gpu_odds = profile
    _, provision_state, power_state, deployed = state
    has_gpu = rng.random() < gpu_odds
    traits = sorted(trait for trait, odds in trait_odds.items()
                    if rng.random() < odds)
    if has_gpu:
        traits.append(rng.choice(GPU_TRAITS))
    properties = {
        'memory_mb': rng.choice(memory),
        'cpus': rng.choice(cpus),
        'local_gb': rng.choice(disk),
        'cpu_arch': arch,
        'capabilities': _capabilities(rng, arch, has_gpu),
    }
    if rng.random() < 0.03:
        # Older inspection data stored sizes as text; Nova copes, so do we.
        for key in ('memory_mb', 'cpus', 'local_gb'):
            properties[key] = str(properties[key])
    if rng.random() < 0.25:
        traits = [{'trait': trait} for trait in traits]
    owner_roll = rng.random()
    maintenance = rng.random() < 0.04
    retired = (provision_state in ('available', 'manageable')
               and rng.random() < 0.02)
    return {
        'uuid': _uuid(rng),
        'name': 'node-%0*d' % (width, index),
        'resource_class': resource_class,
        'properties': properties,
        'traits': traits,
        'provision_state': provision_state,
        'power_state': power_state,
        'maintenance': maintenance,
        'retired': retired,
        'instance_uuid': _uuid(rng) if deployed else None,
        'conductor_group': rng.choice(CONDUCTOR_GROUPS),
        'owner': OWNER_PROJECT if owner_roll < 0.08 else None,
        'lessee': LESSEE_PROJECT if 0.08 <= owner_roll < 0.13 else None,
    }


def _capabilities(rng, arch, has_gpu):
    """An Ironic ``k:v,k:v`` string, as inspection and operators set it."""
    uefi = arch == 'aarch64' or rng.random() < 0.85
    capabilities = {'boot_mode': 'uefi' if uefi else 'bios'}
    if uefi:
        capabilities['supports_uefi'] = 'true'
        capabilities['secure_boot'] = rng.choice(('true', 'false'))
    if has_gpu:
        capabilities['has_gpu'] = 'true'
    if rng.random() < 0.7:
        capabilities['disk_label'] = 'gpt' if uefi else 'msdos'
    if arch == 'x86_64' and rng.random() < 0.9:
        capabilities['cpu_vt'] = 'true'
    if rng.random() < 0.1:
        capabilities['iscsi_boot'] = 'true'
    return ','.join('%s:%s' % item for item in capabilities.items())


def write_json(nodes, stream):
    """Stream ``{"nodes": [...]}`` one node per line."""
    stream.write('{"nodes": [')
    separator = '\n'
    for node in nodes:
        stream.write(separator)
        stream.write(json.dumps(node))
        separator = ',\n'
    stream.write('\n]}\n')


def write_yaml(nodes, stream, header=''):
    """Stream ``nodes:`` followed by one block-style list item per node."""
    stream.write(header)
    stream.write('nodes:\n')
    for node in nodes:
        stream.write('\n'.join(_yaml_block([node], 0)))
        stream.write('\n')


# PyYAML's representer needs about 20 s for 100,000 nodes, so this small
# emitter writes the generator's plain dicts, lists and scalars instead.
_YAML_PLAIN = re.compile(r'[A-Za-z][A-Za-z0-9_.,:/ -]*'
                         r'|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}'
                         r'-[0-9a-f]{12}')
_YAML_WORDS = frozenset(('yes', 'no', 'true', 'false', 'on', 'off', 'null'))


def _yaml_block(value, indent):
    """Block-style lines for a dict or list nested ``indent`` deep."""
    pad = ' ' * indent
    if isinstance(value, dict):
        for key, item in value.items():
            head = pad + _yaml_scalar(key) + ':'
            if isinstance(item, (dict, list)):
                if item:
                    yield head
                    yield from _yaml_block(item, indent + 2)
                else:
                    yield head + (' {}' if isinstance(item, dict) else ' []')
            else:
                yield head + ' ' + _yaml_scalar(item)
        return
    for item in value:
        if isinstance(item, (dict, list)):
            first, *rest = _yaml_block(item, indent + 2)
            yield pad + '- ' + first[indent + 2:]
            yield from rest
        else:
            yield pad + '- ' + _yaml_scalar(item)


@functools.lru_cache(maxsize=1024, typed=True)
def _yaml_scalar(value):
    """``value`` as YAML reads it back: plain when safe, else JSON-quoted."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, int):
        return str(value)
    if (_YAML_PLAIN.fullmatch(value) and ': ' not in value
            and not value.endswith((':', ' '))
            and value.lower() not in _YAML_WORDS):
        return value
    return json.dumps(value)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--count', type=int, required=True,
                        help='How many nodes to generate.')
    parser.add_argument('--seed', type=int, required=True,
                        help='Random seed; the same seed gives the same '
                             'document.')
    parser.add_argument('--output', required=True,
                        help='File to write.')
    parser.add_argument('--changed', action='store_true',
                        help='Every node changed (see changed()): the '
                             'same nodes a later read would find.')
    parser.add_argument('--drop-percent', type=int, default=0,
                        help='Leave out this last percentage of the '
                             'nodes: the same ones as if Ironic removed '
                             'them.')
    parser.add_argument('--format', choices=('yaml', 'json'),
                        help='Default: json for a .json output, else yaml.')
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error('--count must be at least 1')
    if not 0 <= args.drop_percent < 100:
        parser.error('--drop-percent must be from 0 to 99')
    if args.format is None:
        is_json = os.path.splitext(args.output)[1].lower() == '.json'
        args.format = 'json' if is_json else 'yaml'
    return args


def main(argv=None):
    args = parse_args(argv)
    nodes = generate_nodes(args.count, args.seed)
    if args.drop_percent:
        kept = args.count - args.count * args.drop_percent // 100
        nodes = itertools.islice(nodes, kept)
    if args.changed:
        nodes = map(changed, nodes)
    with open(args.output, 'w', encoding='utf-8') as stream:
        if args.format == 'json':
            write_json(nodes, stream)
        else:
            header = ('# Generated by tools/generate_inventory.py --count %d '
                      '--seed %d.\n# Regenerate it rather than editing it.\n'
                      % (args.count, args.seed))
            write_yaml(nodes, stream, header)


if __name__ == '__main__':
    sys.exit(main())
