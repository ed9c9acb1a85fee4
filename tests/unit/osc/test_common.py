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


"""The OSC plugin's argument handling, without a service."""

import argparse
import json
import os

import fixtures
from osc_lib import exceptions
from oslotest import base

from reserveapi.osc import common
from reserveapi.osc import plugin
from reserveapi.osc import reservations

SORT_KEYS = ('uuid', 'name')


def paging(limit=None, marker=None, sort=None):
    return argparse.Namespace(limit=limit, marker=marker, sort=sort)


class TestPaging(base.BaseTestCase):

    def test_query(self):
        self.assertEqual({'marker': None}, common.paging_query(
            paging(), SORT_KEYS))
        self.assertEqual(
            {'marker': 'm', 'limit': 3, 'sort_key': 'name',
             'sort_dir': 'desc'},
            common.paging_query(paging(3, 'm', 'name:desc'), SORT_KEYS))
        self.assertEqual(
            {'marker': None, 'sort_key': 'uuid', 'sort_dir': None},
            common.paging_query(paging(sort='uuid'), SORT_KEYS))

    def test_bad_sort_names_the_choices(self):
        error = self.assertRaises(exceptions.CommandError,
                                  common.paging_query,
                                  paging(sort='size'), SORT_KEYS)
        self.assertEqual("Cannot sort by 'size': choose one of uuid, name.",
                         str(error))
        self.assertRaises(exceptions.CommandError, common.paging_query,
                          paging(sort='name:up'), SORT_KEYS)

    def test_limit_stops_reading(self):
        def endless():
            count = 0
            while True:
                count += 1
                yield count
        self.assertEqual([1, 2], list(common.limited(endless(),
                                                     paging(limit=2))))
        self.assertEqual([1, 2, 3], list(common.limited(iter([1, 2, 3]),
                                                        paging(limit=0))))


class TestRequestSpec(base.BaseTestCase):

    def args(self, **values):
        defaults = dict(request_spec=None, extra_spec=None,
                        image_property=None, **dict.fromkeys(
                            reservations.SIZES))
        defaults.update(values)
        return argparse.Namespace(**defaults)

    def test_options_override_the_document(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'spec.json')
        with open(path, 'w') as stream:
            json.dump({'memory_mb': 1, 'extra_specs': {'a': '1'}}, stream)
        spec = reservations.request_spec_from(self.args(
            request_spec='@' + path, memory_mb=2048, vcpus=4,
            extra_spec=['b=2', 'trait:CUSTOM_X=required'],
            image_property=['hw_architecture=x86_64']))
        self.assertEqual(
            {'memory_mb': 2048, 'vcpus': 4,
             'extra_specs': {'a': '1', 'b': '2',
                             'trait:CUSTOM_X': 'required'},
             'image': {'properties': {'hw_architecture': 'x86_64'}}}, spec)

    def test_bad_arguments_are_command_errors(self):
        for values in ({'request_spec': '{'}, {'request_spec': '[1]'},
                       {'request_spec': '@/nonexistent/spec.json'},
                       {'extra_spec': ['no-equals-sign']}):
            self.assertRaises(exceptions.CommandError,
                              reservations.request_spec_from,
                              self.args(**values))


class TestMicroversion(base.BaseTestCase):

    def test_major_version_means_the_newest_known(self):
        self.assertEqual(plugin.LATEST_KNOWN_VERSION,
                         plugin.microversion('1'))
        self.assertEqual('1.0', plugin.microversion('1.0'))
