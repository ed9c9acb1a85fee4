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

"""Read a request spec (flavor, extra specs, image) as Nova means it.

The API has already checked its structure (the types of the flavor
fields, extra specs an object of strings, the image an object); what is
left here is meaning: Nova's extra-spec keys and operators, and every
trap a node could never satisfy, rejected with ``InvalidRequestSpec``
naming the key, so matching itself cannot fail.
"""

import dataclasses
import re

from reserveapi.common import exception
from reserveapi.common import validators
from reserveapi.matcher import operators

CUSTOM_PREFIX = 'CUSTOM_'
VCPU = 'VCPU'
MEMORY_MB = 'MEMORY_MB'
DISK_GB = 'DISK_GB'
STANDARD_CLASSES = (VCPU, MEMORY_MB, DISK_GB)

# Nova's ResourceRequest key pattern: an optional group suffix.
_RESOURCES_KEY = re.compile(r'^resources([a-zA-Z0-9_-]{1,64})?:(.*)$')
_TRAIT_KEY = re.compile(r'^trait([a-zA-Z0-9_-]{1,64})?:(.*)$')
_CAPABILITIES_PREFIX = 'capabilities:'
_NAME = re.compile(r'^[A-Z0-9_]+$')
_AMOUNT = re.compile(r'^[0-9]+$')
_NOT_ALNUM = re.compile(r'[^0-9A-Za-z]+')
_ARCH_NAME = re.compile(r'^[a-z0-9_]+$')
# nova.objects.fields.Architecture.canonicalize, plus common spellings
# (x86, x64, arm64, armv7) that Nova rejects but operators do type.
_ARCH_ALIASES = {
    'i386': 'i686', 'i486': 'i686', 'i586': 'i686', 'x86': 'i686',
    'x86_32': 'i686', 'x86_32p': 'i686',
    'amd64': 'x86_64', 'x64': 'x86_64',
    'arm64': 'aarch64',
    'armv7': 'armv7l',
}
# nova.objects.fields.VMMode.canonicalize maps these legacy names to hvm.
_HVM_MODES = ('hvm', 'hv', 'baremetal')
_FLAVOR_COUNTS = ('memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb', 'swap')
_TRAIT_VALUES = ('required', 'forbidden')


@dataclasses.dataclass(frozen=True)
class RequestSpec:
    """What a node must offer, already validated and normalized.

    ``disk_gb`` is root + ephemeral + swap rounded up to whole GiB.  The
    ``check_*`` flags are False when the flavor zeroes the matching standard
    resource class (``resources:VCPU=0`` ...), as bare metal flavors do.
    """

    memory_mb: int = 0
    vcpus: int = 0
    disk_gb: int = 0
    check_memory: bool = True
    check_vcpus: bool = True
    check_disk: bool = True
    resource_class: str | None = None
    required_traits: frozenset[str] = frozenset()
    forbidden_traits: frozenset[str] = frozenset()
    capabilities: tuple[operators.Requirement, ...] = ()
    cpu_arch: str | None = None


def _invalid(key, reason):
    return exception.InvalidRequestSpec(key=key, reason=reason)


def parse_capabilities(value):
    """Node capabilities as a ``{name: text}`` dict.

    Accepts Ironic's ``"k:v,k:v"`` string (split on the first ``:``, so a
    value may contain colons; entries lacking a key or value are skipped;
    the last duplicate wins, as in Nova) or a dict (metalsmith and
    ``instance_info`` style).  Keys and values are stripped, as Ironic does.
    """
    if not value:
        return {}
    if isinstance(value, str):
        pairs = (entry.partition(':')[::2] for entry in value.split(','))
    elif isinstance(value, dict):
        pairs = ((str(key), operators.as_text(text))
                 for key, text in value.items() if text is not None)
    else:
        raise TypeError('capabilities must be a string or a dict, not %s'
                        % type(value).__name__)
    parsed = {}
    for key, text in pairs:
        key, text = key.strip(), text.strip()
        if key and text:
            parsed[key] = text
    return parsed


def normalize_resource_class(name):
    """The resource class Nova's Ironic driver reports for a node whose
    Ironic resource class is ``name``, exactly as
    ``nova.utils.normalize_rc_name``: ``baremetal-gold`` becomes
    ``CUSTOM_BAREMETAL_GOLD`` and ``CUSTOM_GOLD`` becomes
    ``CUSTOM_CUSTOM_GOLD``, so a flavor that works with Nova gets the
    same nodes here. None for a node without one: Nova reports no
    inventory for it.
    """
    if not name:
        return None
    return CUSTOM_PREFIX + _NOT_ALNUM.sub('_', name).upper()


def canonicalize_arch(name):
    """The canonical (Nova) spelling of a CPU architecture, or None.

    Unknown but well-formed names are lower-cased and kept, so a new
    architecture needs no code change; anything else is a ValueError.
    """
    if name is None:
        return None
    lowered = name.strip().lower()
    canonical = _ARCH_ALIASES.get(lowered, lowered)
    if not _ARCH_NAME.match(canonical):
        raise ValueError('malformed architecture name %s'
                         % validators.describe(name))
    return canonical


def parse_request_spec(data):
    """A :class:`RequestSpec` from a request spec whose structure the API
    has checked: a dict whose flavor sizes, when present, are
    non-negative integers, whose ``extra_specs`` map strings to strings
    and whose ``image`` has ``properties`` as a dict; None for absent.

    A standard class with a non-zero amount (``resources:VCPU=4``) keeps
    its sizing check and, as in Nova, overrides the flavor field.
    ``vcpu_weight`` and ``rxtx_factor`` mean nothing for bare metal.

    :raises: InvalidRequestSpec naming the key.
    """
    counts = {name: data.get(name) or 0 for name in _FLAVOR_COUNTS}
    extra = _ExtraSpecs(data.get('extra_specs') or {})
    image = _Image(data.get('image') or {})

    required = dict(extra.required_traits)
    for trait, key in image.required_traits.items():
        required.setdefault(trait, key)
    for trait, key in sorted(extra.forbidden_traits.items()):
        if trait in required:
            raise _invalid(key, 'trait %s is also required by %s'
                           % (trait, required[trait]))

    swap_gb = -(-counts['swap'] // 1024)
    flavor_sizes = {
        VCPU: counts['vcpus'],
        MEMORY_MB: counts['memory_mb'],
        DISK_GB: counts['root_gb'] + counts['ephemeral_gb'] + swap_gb,
    }
    sizes = {**flavor_sizes, **extra.standard_amounts}
    return RequestSpec(
        memory_mb=sizes[MEMORY_MB],
        vcpus=sizes[VCPU],
        disk_gb=sizes[DISK_GB],
        check_memory=extra.standard_amounts.get(MEMORY_MB) != 0,
        check_vcpus=extra.standard_amounts.get(VCPU) != 0,
        check_disk=extra.standard_amounts.get(DISK_GB) != 0,
        resource_class=extra.resource_class,
        required_traits=frozenset(required),
        forbidden_traits=frozenset(extra.forbidden_traits),
        capabilities=tuple(extra.capabilities),
        cpu_arch=image.cpu_arch,
    )


class _ExtraSpecs:
    """The flavor extra specs this service understands.

    Namespaces it does not know (``hw:``, ``quota:``,
    ``aggregate_instance_extra_specs:`` ...) are ignored, as Nova's
    scheduler ignores them; so are unscoped keys other than the legacy
    ``capabilities`` list and ``cpu_arch``.
    """

    def __init__(self, extra_specs):
        self.standard_amounts = {}
        self.resource_class = None
        self.required_traits = {}
        self.forbidden_traits = {}
        self.capabilities = []
        for key, value in extra_specs.items():
            self._add(key, 'extra_specs.%s' % key, value)

    def _add(self, key, spec_key, value):
        resources = _RESOURCES_KEY.match(key)
        trait = _TRAIT_KEY.match(key)
        if resources:
            self._add_resource(spec_key, resources.group(2), value)
        elif trait:
            self._add_trait(spec_key, trait.group(2), value)
        elif key.startswith(_CAPABILITIES_PREFIX):
            self._add_capability(spec_key, key[len(_CAPABILITIES_PREFIX):],
                                 value)
        elif key == 'capabilities':
            self._add_legacy_capabilities(spec_key, value)
        elif key == 'cpu_arch':
            self.capabilities.append(
                operators.parse_requirement('cpu_arch', value, spec_key))

    def _add_resource(self, spec_key, resource_class, value):
        if not _NAME.match(resource_class):
            raise _invalid(spec_key, 'malformed resource class %s: use '
                           'upper case letters, digits and _'
                           % validators.describe(resource_class))
        if not (resource_class in STANDARD_CLASSES
                or (resource_class.startswith(CUSTOM_PREFIX)
                    and resource_class != CUSTOM_PREFIX)):
            raise _invalid(spec_key, 'bare metal nodes offer only %s and '
                           'one CUSTOM_ resource class'
                           % ', '.join(STANDARD_CLASSES))
        if not _AMOUNT.match(value.strip()):
            raise _invalid(spec_key, 'the amount must be a non-negative '
                           'integer, got %s' % validators.describe(value))
        amount = int(value)
        if amount > validators.MAX_INTEGER:
            raise _invalid(spec_key, 'the amount must be at most %d, got %s'
                           % (validators.MAX_INTEGER, value.strip()[:24]))
        if resource_class in STANDARD_CLASSES:
            self.standard_amounts[resource_class] = (
                self.standard_amounts.get(resource_class, 0) + amount)
            return
        if self.resource_class == resource_class:
            raise _invalid(spec_key, '%s is requested twice: a node is one '
                           'unit' % resource_class)
        if self.resource_class is not None:
            raise _invalid(spec_key, 'only one custom resource class can be '
                           'requested, already have %s' % self.resource_class)
        if amount != 1:
            raise _invalid(spec_key, 'a bare metal node is one unit of its '
                           'resource class: the amount must be 1, got %d'
                           % amount)
        self.resource_class = resource_class

    def _add_trait(self, spec_key, trait, value):
        if not _NAME.match(trait):
            raise _invalid(spec_key, 'malformed trait name %s: use upper '
                           'case letters, digits and _'
                           % validators.describe(trait))
        if value not in _TRAIT_VALUES:
            raise _invalid(spec_key, "must be 'required' or 'forbidden', "
                           "got %s" % validators.describe(value))
        traits = (self.required_traits if value == 'required'
                  else self.forbidden_traits)
        traits.setdefault(trait, spec_key)

    def _add_capability(self, spec_key, name, value):
        if ':' in name:
            raise _invalid(spec_key, 'bare metal capabilities are flat: '
                           'nested scopes like capabilities:a:b never match')
        if not name or name != name.strip():
            raise _invalid(spec_key, 'malformed capability name %s'
                           % validators.describe(name))
        self.capabilities.append(
            operators.parse_requirement(name, value, spec_key))

    def _add_legacy_capabilities(self, spec_key, value):
        """``"supports_uefi,boot_mode:uefi"``: each bare name must be
        ``true`` (any case), each ``k:v`` item must equal its value.
        """
        for item in value.split(','):
            name, colon, text = (part.strip() for part in item.partition(':'))
            if not colon and name:
                self.capabilities.append(operators.any_case_true(name))
            elif name and text:
                self.capabilities.append(operators.equals(name, text))
            elif colon or item.strip():
                raise _invalid(spec_key, 'malformed capability %s: use '
                               '"name" or "name:value"'
                               % validators.describe(item.strip()))


class _Image:
    """The image properties that decide where an image can run."""

    def __init__(self, image):
        self.cpu_arch = None
        self.required_traits = {}
        properties = image.get('properties') or {}
        self._parse_arch(properties)
        self._check_runs_on_bare_metal(properties)
        self._parse_traits(properties)

    def _parse_arch(self, properties):
        name = 'hw_architecture'
        if not properties.get(name):
            name = 'architecture'
        value = properties.get(name)
        if not value:
            return
        key = 'image.properties.%s' % name
        if not isinstance(value, str):
            raise _invalid(key, 'must be a string')
        try:
            self.cpu_arch = canonicalize_arch(value)
        except ValueError as error:
            raise _invalid(key, str(error))

    def _check_runs_on_bare_metal(self, properties):
        """Reject images no bare metal node can ever run (Nova's
        ImagePropertiesFilter would answer "no valid host" every time).
        """
        allowed = {'img_hv_type': ('baremetal',), 'hw_vm_mode': _HVM_MODES}
        for name, values in allowed.items():
            value = properties.get(name)
            if not value:
                continue
            if not isinstance(value, str) or value.lower() not in values:
                raise _invalid('image.properties.%s' % name,
                               'bare metal nodes run only %s images, so '
                               '%s can never match' % (values[0],
                                                      validators.describe(value)))

    def _parse_traits(self, properties):
        for name, value in properties.items():
            if not name.startswith('trait:'):
                continue
            key = 'image.properties.%s' % name
            trait = name[len('trait:'):]
            if not _NAME.match(trait):
                raise _invalid(key, 'malformed trait name %s'
                              % validators.describe(trait))
            if value != 'required':
                raise _invalid(key, "an image can only require a trait: "
                               "the value must be 'required', got %s"
                               % validators.describe(value))
            self.required_traits.setdefault(trait, key)
        key = 'image.properties.traits_required'
        listed = properties.get('traits_required')
        if listed is None:
            listed = []
        if not isinstance(listed, (list, tuple)):
            raise _invalid(key, 'must be a list of trait names')
        for trait in listed:
            if not isinstance(trait, str) or not _NAME.match(trait):
                raise _invalid(key, 'malformed trait name %s'
                              % validators.describe(trait))
            self.required_traits.setdefault(trait, key)
