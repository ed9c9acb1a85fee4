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

"""The request spec of ``POST /v1/reservations``, built from the Nova
objects the driver is given, by ``reserveapi.client.request_spec``, which
the ``openstack`` command shares.
"""

from oslo_serialization import jsonutils

from reserveapi.client import request_spec


def _flavor(flavor):
    fields = {name: getattr(flavor, name)
              for name in request_spec.FLAVOR_FIELDS
              if flavor.obj_attr_is_set(name)}
    fields['extra_specs'] = dict(flavor.extra_specs or {})
    return fields


def _image(image_meta):
    """The image's id and every property set, as JSON (Nova keeps the
    image's ``trait:X=required`` properties in ``traits_required``).
    """
    image = {}
    if image_meta.obj_attr_is_set('id'):
        image['id'] = image_meta.id
    properties = {}
    if image_meta.obj_attr_is_set('properties'):
        props = image_meta.properties
        properties = {name: getattr(props, name) for name in props.fields
                      if props.obj_attr_is_set(name)}
    image['properties'] = jsonutils.to_primitive(properties,
                                                 convert_instances=True)
    return image


def build(flavor, image_meta):
    """``flavor`` is a ``nova.objects.Flavor``; ``image_meta`` a
    ``nova.objects.ImageMeta``.
    """
    return jsonutils.to_primitive(
        request_spec.build(_flavor(flavor), _image(image_meta)),
        convert_instances=True)
