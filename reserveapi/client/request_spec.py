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

"""The request spec of ``POST /v1/reservations`` and ``/v1/candidates``
from a flavor and an image, built one way for nova-compute's driver
(from Nova's objects, ``reserveapi.nova.request_spec``) and for the
``openstack`` command (from Nova's and Glance's APIs), so that a
capacity question asks exactly what the driver will.
"""

FLAVOR_FIELDS = ('name', 'flavorid', 'memory_mb', 'vcpus', 'vcpu_weight',
                 'root_gb', 'ephemeral_gb', 'swap', 'rxtx_factor')
"""The fields of Nova's Flavor object a spec carries, beside its extra
specs."""
MATCHED_KEYS = ('memory_mb', 'vcpus', 'vcpu_weight', 'root_gb',
                'ephemeral_gb', 'swap', 'rxtx_factor', 'extra_specs',
                'image')
"""The keys of a request spec the service reads; it ignores any other
(a test holds this to the API's type)."""
KEYS = FLAVOR_FIELDS + ('extra_specs', 'image')
"""Every key a spec built here holds: MATCHED_KEYS and the flavor's
``name`` and ``flavorid``, which name it but match nothing."""
IMAGE_KEYS = ('id', 'properties')
"""The keys of a spec's ``image`` the service reads."""
CANDIDATES_BODY_KEYS = ('project_id', 'candidate_nodes', 'request_spec',
                        'conductor_group', 'shard', 'limit', 'explain',
                        'start', 'end')
"""The keys of a ``POST /v1/candidates`` body; the service refuses any
other."""
# Compute's API name of each field (GET /flavors/{flavor_id}).
_COMPUTE_API_FLAVOR = {'name': 'name', 'id': 'flavorid', 'ram': 'memory_mb',
                       'vcpus': 'vcpus', 'disk': 'root_gb',
                       'OS-FLV-EXT-DATA:ephemeral': 'ephemeral_gb',
                       'swap': 'swap', 'rxtx_factor': 'rxtx_factor'}
# Nova's current name for a Glance property's legacy one, where matching
# reads it (nova.objects.ImageMetaProps._legacy_property_map).
_LEGACY_IMAGE_PROPERTIES = {'architecture': 'hw_architecture',
                            'hypervisor_type': 'img_hv_type',
                            'vm_mode': 'hw_vm_mode'}
# What Glance shows of every image beside its properties.
_GLANCE_IMAGE_FIELDS = frozenset((
    'id', 'name', 'status', 'visibility', 'protected', 'os_hidden',
    'checksum', 'os_hash_algo', 'os_hash_value', 'owner', 'size',
    'virtual_size', 'min_ram', 'min_disk', 'disk_format',
    'container_format', 'created_at', 'updated_at', 'tags', 'locations',
    'direct_url', 'self', 'file', 'schema', 'stores'))


def build(flavor, image):
    """The request spec: ``flavor`` holds the FLAVOR_FIELDS it has and
    ``extra_specs``; ``image`` the image's ``id`` (if it has one) and its
    ``properties`` as Nova's ImageMeta has them, in JSON values."""
    spec = {name: flavor[name] for name in FLAVOR_FIELDS if name in flavor}
    spec['extra_specs'] = dict(flavor.get('extra_specs') or {})
    spec['image'] = dict(image)
    return spec


def flavor_from_compute(flavor):
    """A flavor as compute's API shows it (with ``extra_specs``, as
    microversion 2.61 answers) as Nova's Flavor object has it: what the
    driver sees of the same flavor. Swap "" is no swap."""
    fields = {field: flavor[key] for key, field in _COMPUTE_API_FLAVOR.items()
              if flavor.get(key) is not None}
    if fields.get('swap') == '':
        fields['swap'] = 0
    fields['extra_specs'] = dict(flavor.get('extra_specs') or {})
    return fields


def image_from_glance(image):
    """An image as Glance's API shows it (its properties beside its own
    fields) as Nova's ImageMeta has it, for what matching reads: legacy
    names are Nova's current ones (``architecture`` is
    ``hw_architecture`` unless that is set too), and ``trait:T`` set to
    ``required`` is in ``traits_required``; any other ``trait:`` value
    Nova drops."""
    properties, traits = {}, []
    for key, value in image.items():
        if key in _GLANCE_IMAGE_FIELDS:
            continue
        if key.startswith('trait:'):
            if value == 'required':
                traits.append(key[len('trait:'):])
            continue
        properties[key] = value
    for legacy, current in _LEGACY_IMAGE_PROPERTIES.items():
        if legacy in properties:
            properties.setdefault(current, properties.pop(legacy))
    if traits:
        properties['traits_required'] = sorted(traits)
    return {'id': image['id'], 'properties': properties}
