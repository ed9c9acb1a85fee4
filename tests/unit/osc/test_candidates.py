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


"""What ``candidates --spec`` accepts, held to the API's own types, and
where ``--flavor`` and ``--image`` look for Nova and Glance, through
openstackclient's real client manager (no request is sent).
"""

import argparse

from openstack.config import loader
from openstackclient.common import clientmanager
from osc_lib import exceptions
from osc_lib.cli import client_config
from oslotest import base
from wsme import types as wtypes

from reserveapi.api import types as api_types
from reserveapi.api.controllers.v1 import candidates as api_candidates
from reserveapi.client import request_spec
from reserveapi.osc import candidates

ENDPOINT = 'http://127.0.0.1:6390'
PASSWORD = {'auth_type': 'password', 'auth_url': 'http://keystone/v3',
            'username': 'u', 'password': 'p', 'project_name': 'p',
            'user_domain_id': 'default', 'project_domain_id': 'default'}


def names(datatype):
    return {attribute.name for attribute in wtypes.list_attributes(datatype)}


class TestKeysMatchTheService(base.BaseTestCase):
    """The CLI refuses what the service would ignore or refuse."""

    def test_request_spec_keys(self):
        self.assertEqual(names(api_types.RequestSpec),
                         set(request_spec.MATCHED_KEYS))
        self.assertEqual(set(request_spec.MATCHED_KEYS) | {'name',
                                                           'flavorid'},
                         set(request_spec.KEYS))
        built = request_spec.build(
            {name: 1 for name in request_spec.FLAVOR_FIELDS},
            {'id': 'i', 'properties': {}})
        self.assertEqual(set(request_spec.KEYS), set(built))

    def test_image_keys(self):
        self.assertEqual(names(api_types.Image), set(request_spec.IMAGE_KEYS))

    def test_body_keys(self):
        # The newest body: a window from microversion 1.5.
        self.assertEqual(names(api_candidates.WindowedCandidatesRequest),
                         set(request_spec.CANDIDATES_BODY_KEYS))


def client_manager(**options):
    """openstackclient's client manager for these global options, as
    ``openstack`` builds it (clouds.yaml and OS_* ignored)."""
    config = client_config.OSC_Config(load_yaml_config=False,
                                      load_envvars=False)
    region = config.get_one_cloud(argparse=argparse.Namespace(**options))
    return clientmanager.ClientManager(cli_options=region, api_version={})


class TestWhereNovaIs(base.BaseTestCase):

    def refusal(self, manager, *args):
        return str(self.assertRaises(exceptions.CommandError,
                                     candidates.missing_catalog, manager,
                                     *args))

    def test_auth_type_none_has_no_catalog(self):
        manager = client_manager(auth_type='none', endpoint=ENDPOINT)
        # What the SDK would do: --os-endpoint is every service's.
        self.assertEqual(ENDPOINT, manager._cli_options.get_endpoint(
            'compute'))
        self.assertEqual(
            "--flavor needs Nova's endpoint from the service catalog, and "
            "--os-auth-type none gives none: pass --spec FILE instead, or "
            "set compute_endpoint_override in clouds.yaml.",
            self.refusal(manager, 'compute', 'Nova', '--flavor'))
        self.assertEqual(
            "--image needs Glance's endpoint from the service catalog, and "
            "--os-auth-type none gives none: pass --spec FILE instead, or "
            "set image_endpoint_override in clouds.yaml.",
            self.refusal(manager, 'image', 'Glance', '--image'))

    def test_a_bare_token_has_no_catalog(self):
        manager = client_manager(auth_type='admin_token', endpoint=ENDPOINT,
                                 token='secret')
        self.assertIn('--os-auth-type admin_token gives none',
                      self.refusal(manager, 'compute', 'Nova', '--flavor'))

    def test_an_override_says_where_nova_is(self):
        manager = client_manager(auth_type='none', endpoint=ENDPOINT,
                                 compute_endpoint_override='http://nova')
        candidates.missing_catalog(manager, 'compute', 'Nova', '--flavor')
        self.assertEqual('http://nova',
                         manager._cli_options.get_endpoint('compute'))
        self.refusal(manager, 'image', 'Glance', '--image')

    def test_keystone_s_catalog_is_not_overridden_by_os_endpoint(self):
        manager = client_manager(endpoint=ENDPOINT, **PASSWORD)
        candidates.missing_catalog(manager, 'compute', 'Nova', '--flavor')
        candidates.missing_catalog(manager, 'image', 'Glance', '--image')
        # No override for Nova or Glance: the SDK reads the catalog
        # (tests/osc/test_candidates.py follows one request there).
        for service_type in ('compute', 'image'):
            self.assertIsNone(
                manager._cli_options.get_endpoint(service_type))


class TestLoaderNamesOurOptions(base.BaseTestCase):
    """The override the refusal names is one the SDK reads."""

    def test_compute_endpoint_override_is_read(self):
        config = loader.OpenStackConfig(load_yaml_config=False,
                                        load_envvars=False)
        region = config.get_one(argparse=argparse.Namespace(
            auth_type='none', compute_endpoint_override='http://nova',
            image_endpoint_override='http://glance'))
        self.assertEqual('http://nova', region.get_endpoint('compute'))
        self.assertEqual('http://glance', region.get_endpoint('image'))
