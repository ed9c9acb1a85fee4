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

"""A controller method's parameters are its path's or declared query
parameters: anything else is refused when the method is defined or the
route table built, never turned into a path segment."""

from pecan import rest
import testtools

from reserveapi.api import expose
from reserveapi.api import routes
from reserveapi.api import types


def _build(root):
    found = {}
    routes._walk(root, '', (), found)
    return sorted(found)


class DefinitionTest(testtools.TestCase):

    def test_a_parameter_with_a_default_must_be_a_query_parameter(self):
        with testtools.ExpectedException(
                TypeError, r'.*get_one\(\): parameter detail is neither a '
                r'path parameter .* nor a query parameter .*'):
            @expose.expose()
            def get_one(self, reservation_uuid, detail=None):
                pass

    def test_keyword_only_and_variadic_parameters_are_refused(self):
        def keyword_only(self, *, host):
            pass

        def positional(self, *args):
            pass

        def keywords(self, **kwargs):
            pass

        for method in (keyword_only, positional, keywords):
            self.assertRaises(TypeError, expose.expose(), method)

    def test_a_declared_query_parameter_must_be_taken(self):
        with testtools.ExpectedException(
                TypeError, r".*get_all\(\): expose\(query=...\) declares "
                r"host, which it does not take\."):
            @expose.expose(query={'host': types.host_name})
            def get_all(self):
                pass

    def test_path_and_query_parameters(self):
        @expose.expose(query={'detail': types.boolean})
        def put(self, aggregate_uuid, host, detail=None):
            pass

        self.assertEqual(('aggregate_uuid', 'host'), put.path_params)
        self.assertEqual({'detail': types.boolean}, put.query)


class RegistrationTest(testtools.TestCase):

    def test_collection_method_with_a_path_parameter_is_refused(self):
        class Things(rest.RestController):
            @expose.expose()
            def get_all(self, host):
                pass

        class Root(rest.RestController):
            things = Things()

        with testtools.ExpectedException(
                TypeError, r".*GET /things: .*get_all\(\) takes the path "
                r"parameters \(host\), not the template's \(\)\."):
            _build(Root())

    def test_item_parameter_named_unlike_its_parent_is_refused(self):
        class Hosts(rest.RestController):
            @expose.expose()
            def put(self, uuid, host):
                pass

        class Aggregates(rest.RestController):
            hosts = Hosts()

            @expose.expose()
            def get_one(self, aggregate_uuid):
                pass

        class Root(rest.RestController):
            aggregates = Aggregates()

        with testtools.ExpectedException(
                TypeError, r".*PUT /aggregates/{aggregate_uuid}/hosts/{host}: "
                r".*put\(\) takes the path parameters \(uuid, host\)"):
            _build(Root())

    def test_a_well_formed_tree(self):
        class Hosts(rest.RestController):
            @expose.expose()
            def put(self, aggregate_uuid, host):
                pass

        class Aggregates(rest.RestController):
            hosts = Hosts()

            @expose.expose(query={'limit': types.limit})
            def get_all(self, limit=None):
                pass

            @expose.expose()
            def get_one(self, aggregate_uuid):
                pass

        class Root(rest.RestController):
            aggregates = Aggregates()

        self.assertEqual(
            [('GET', '/aggregates'), ('GET', '/aggregates/{aggregate_uuid}'),
             ('PUT', '/aggregates/{aggregate_uuid}/hosts/{host}')],
            _build(Root()))

    def test_every_route_of_the_api_registers(self):
        routes._table.cache_clear()
        self.addCleanup(routes._table.cache_clear)
        table = {(route.method, route.template): route
                 for route in routes.routes()}
        self.assertGreater(len(table), 10)
        self.assertEqual(
            ('reservation_uuid',),
            table['GET', '/v1/reservations/{reservation_uuid}'].path_params)
        self.assertEqual(
            ('aggregate_uuid', 'host'),
            table['PUT', '/v1/aggregates/{aggregate_uuid}/hosts/{host}']
            .path_params)
        self.assertEqual(
            [], [key for key, route in table.items()
                 if route.path_params != route.function.path_params])
