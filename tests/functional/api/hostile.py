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

"""The table of bad requests the hostile-input suite sends.

Built from the API's own route table (``reserveapi.api.routes``), so a
new route gets every row the day it is written: junk path segments and
wrong methods, bad path parameters, unknown, repeated and bad query
parameters, bodies sent where none is taken, malformed bodies, wrong
media types and charsets, NUL and 4-byte text, huge and nested inputs,
bad microversions.

Each request says what it may be answered (``statuses``) and what the
error's detail must mention (``names``: any of these, case-insensitive),
so that a 400 that says nothing useful fails as surely as a 500.
"""

import dataclasses
import json
import re
import urllib.parse
import uuid

from reserveapi.api import routes as api_routes

EMOJI = '\U0001f5a5'  # 4 bytes in UTF-8
METHODS = ('GET', 'PUT', 'POST', 'PATCH', 'DELETE', 'OPTIONS')
MISSING_UUID = '0E2B5C9A-1D4F-4A6B-8C3D-2E1F0A9B8C7D'  # upper case, unknown
_PARAM = re.compile(r'{(\w+)}')


@dataclasses.dataclass(frozen=True)
class Request:
    kind: str
    method: str
    path: str
    statuses: frozenset
    names: tuple = ()
    body: bytes | None = None
    content_type: str | None = None
    headers: tuple = ()

    def __str__(self):
        return '%s %s %s' % (self.kind, self.method, self.path[:120])


def _req(kind, method, path, statuses, names=(), body=None,
         content_type=None, headers=()):
    if isinstance(names, str):
        names = (names,)
    return Request(kind, method, path, frozenset(statuses), tuple(names),
                   body, content_type, tuple(headers))


def quote(text):
    return urllib.parse.quote(text, safe='')


def fill(template, values, **overrides):
    """The template with each ``{param}`` replaced by its (quoted)
    value; ``overrides`` are already quoted.
    """
    def value(match):
        name = match.group(1)
        if name in overrides:
            return overrides[name]
        return quote(values[name])
    return _PARAM.sub(value, template)


def requests(values, bodies, version):
    """Every hostile request for every route, at microversion
    ``version`` (a route newer than it is not there: its valid request
    is a 404).

    ``values`` maps path parameter names to values of existing
    resources; ``bodies`` maps ``"METHOD template"`` to a valid body of
    a route that takes one (which the table only ever breaks).
    """
    table = []
    for route in api_routes.routes():
        if not _served(route, version):
            table += _too_early_requests(route, values, bodies)
            table += _microversion_requests(route, values)
            continue
        table += _path_requests(route, values)
        table += _param_requests(route, values)
        table += _query_requests(route, values)
        table += _microversion_requests(route, values)
        if route.media_types:
            key = '%s %s' % (route.method, route.template)
            table += _body_requests(route, values, bodies[key])
        else:
            table += _unwanted_body_requests(route, values)
    table += _method_requests(values, version)
    return table


def _served(route, version):
    return route.min_version is None or version >= route.min_version


def _too_early_requests(route, values, bodies):
    """The valid request of a route newer than the request's version."""
    body = bodies.get('%s %s' % (route.method, route.template))
    needs = 'needs microversion %s or later' % (route.min_version,)
    return [_req('too early', route.method, fill(route.template, values),
                 {404}, needs,
                 body=None if body is None else _json(body),
                 content_type=None if body is None else 'application/json')]


def _path_requests(route, values):
    path = fill(route.template, values)
    junk = []
    junk.append('/foo' + path)
    junk.append('/v1' + path if path != '/' else '/v1/v1')
    segments = path.split('/')
    if len(segments) > 2:
        junk.append('/'.join(segments[:2] + [''] + segments[2:]))
        junk.append('/'.join(segments[:2] + ['v1'] + segments[2:]))
        junk.append('/'.join(segments[:1] + [segments[1] + '%00']
                             + segments[2:]))
        junk.append('/'.join(segments[:1] + [segments[1].upper()]
                             + segments[2:]))
    junk.append(path.rstrip('/') + '/%FF')
    rows = [_req('junk path', route.method, p, {404}, 'No such resource')
            for p in junk]
    # Extra segments are a 404, or for a route whose last parameter is a
    # host name, a host name that would contain "/".
    extra = path.rstrip('/') + '/junk/junk'
    if route.template.endswith('{host}'):
        rows.append(_req('junk path', route.method, extra, {400}, '"/"'))
    else:
        rows.append(_req('junk path', route.method, extra, {404, 405},
                         ('No such resource', 'not allowed')))
    return rows


def _method_requests(values, version):
    rows = []
    by_template = {}
    for route in api_routes.routes():
        methods = by_template.setdefault(route.template, set())
        if _served(route, version):
            methods.add(route.method)
    for template, allowed in sorted(by_template.items()):
        for method in METHODS:
            if not allowed:
                # No route of the path at this version: no resource.
                # The route's own method names the microversion that
                # has it.
                rows.append(_req('wrong method', method,
                                 fill(template, values),
                                 {404} | ({200} if method == 'OPTIONS'
                                         else set()),
                                 ('No such resource', 'needs microversion')))
            elif method not in allowed:
                # /v1/aggregates/sync is also an aggregate_uuid to the
                # item routes: a 400 saying it is no UUID.
                # OPTIONS may be a CORS preflight, answered by the CORS
                # middleware.
                statuses = {400, 405} | ({200} if method == 'OPTIONS'
                                         else set())
                rows.append(_req('wrong method', method,
                                 fill(template, values), statuses,
                                 ('is not allowed', 'UUID')))
    return rows


_BAD_UUIDS = ('not-a-uuid', '%00', quote(EMOJI), 'a' * 300, '%20',
              quote('{%s}' % uuid.uuid4()) + 'x', '1' * 40)
_BAD_NAMES = ('%00', '%20', 'a' * 300, '%09tab', quote('\u2028'),
              quote('x\x7f'))


def _param_requests(route, values):
    rows = []
    for name in _PARAM.findall(route.template):
        bad = _BAD_UUIDS if name.endswith('uuid') else _BAD_NAMES
        for value in bad:
            rows.append(_req('bad path parameter', route.method,
                             fill(route.template, values, **{name: value}),
                             {400}, name))
        rows.append(_req('bad path parameter', route.method,
                         fill(route.template, values, **{name: '%FF%FE'}),
                         {404}, 'UTF-8'))
        if name.endswith('uuid') and route.method == 'GET':
            # Well formed, in capitals, of nothing: canonicalized, then
            # not found, the same status for every resource. (Writes may
            # name an aggregate the mirror has not seen yet.)
            rows.append(_req('bad path parameter', route.method,
                             fill(route.template, values,
                                  **{name: MISSING_UUID}),
                             {404}, MISSING_UUID.lower()))
        if name == 'host':
            rows.append(_req('bad path parameter', route.method,
                             fill(route.template, values,
                                  host=quote('compute/1')), {400}, '"/"'))
    return rows


_BAD_QUERY_VALUES = ('%00', '%FF', 'x' * 1000, '', '%20', quote(EMOJI),
                     quote('a\u2028b'), '-1', '9' * 30, 'true%00')


def _query_requests(route, values):
    path = fill(route.template, values)
    rows = [
        _req('unknown query', route.method, path + '?bogus=1', {400},
             'bogus'),
        _req('unknown query', route.method, path + '?_method=DELETE',
             {400}, '_method'),
        _req('unknown query', route.method,
             path + '?' + '&'.join('p%d=1' % i for i in range(200)),
             {400}, 'p0'),
        _req('unknown query', route.method, path + '?' + quote(EMOJI) + '=1',
             {400}, EMOJI),
    ]
    for name in sorted(route.query):
        rows.append(_req('repeated query', route.method,
                         path + '?%s=1&%s=2' % (name, name), {400},
                         (name, 'UTF-8')))
        for value in _BAD_QUERY_VALUES:
            # Reads: a value the type takes is a 200, else a 400 naming
            # the parameter.
            rows.append(_req('bad query value', route.method,
                             '%s?%s=%s' % (path, name, value), {200, 400},
                             (name, 'UTF-8')))
    return rows


_BAD_VERSIONS = (
    ('reservation 1.a', {400}), ('reservation one', {400}),
    ('reservation', {400}), ('reservation 1', {400}),
    ('reservation 1.0.0', {400}), ('reservation -1.0', {400, 406}),
    ('reservation latest latest', {400}),
    # UTF-8 bytes as WSGI hands them over (latin-1): no mojibake back.
    ('reservation 1.\xc3\xa9', {400}), ('reservation \x00', {400}),
    ('reservation 2.0', {406}), ('reservation 1.99999', {406}),
    ('reservation 0.9', {406}),
    ('baremetal-reservation 1.a', {400}), ('baremetal-reservation', {400}),
    ('baremetal-reservation 1.0.0', {400}),
    ('baremetal-reservation 1.\xc3\xa9', {400}),
    ('baremetal-reservation 2.0', {406}),
)


def _microversion_requests(route, values):
    path = fill(route.template, values)
    return [_req('bad microversion', route.method, path, statuses,
                 ('OpenStack-API-Version', 'not supported'),
                 headers=(('OpenStack-API-Version', version),))
            for version, statuses in _BAD_VERSIONS]


def _unwanted_body_requests(route, values):
    path = fill(route.template, values)
    return [
        _req('unwanted body', route.method, path, {400}, 'takes no body',
             body=body, content_type=content_type)
        for body, content_type in (
            (b'{}', 'application/json'), (b'[1]', 'application/json'),
            (b'limit=1', 'application/x-www-form-urlencoded'),
            (b'<a/>', 'application/xml'), (b'x', 'text/plain'))]


def _json(document):
    return json.dumps(document).encode('utf-8')


def _raw_bodies():
    """Bodies that are not acceptable JSON documents at all."""
    nested_lists = b'[' * 1200 + b']' * 1200
    nested_objects = b'{"a":' * 40 + b'1' + b'}' * 40
    return (
        (b'{', 'JSON'), (b'nul', 'JSON'), (b'{"a": 1,}', 'JSON'),
        (nested_lists, 'levels'), (nested_objects, 'levels'),
        (b'{"a": NaN}', 'NaN'), (b'{"a": Infinity}', 'Infinity'),
        (b'{"a": -Infinity}', 'Infinity'),
        (b'{"a": 1' + b'0' * 30 + b'}', 'digits'),
        (b'{"host": "a", "host": "b"}', '"host"'),
        (b'{"a": "\\u0000"}', 'NUL'), (b'{"a\\u0000": 1}', 'NUL'),
        (b'{"a": "\\ud800"}', 'surrogate'),
        (b'{"a": "x\x00"}', 'JSON'),
        (b'\xff\xfe{\x00}\x00', 'UTF-8'), (b'{"a": "\xc3"}', 'UTF-8'),
        ('\ufeff{}'.encode(), 'JSON'),
        (b' ' * 200000, 'larger than'),
        (_json({'a': 'x' * 200000}), 'larger than'),
    )


_MEDIA_TYPES = (
    ('text/plain', 'application/json'), ('application/xml',
                                         'application/json'),
    ('application/x-www-form-urlencoded', 'application/json'),
    ('multipart/form-data; boundary=x', 'application/json'),
    ('application/json; charset=bogus', 'UTF-8'),
    ('application/json; charset=latin-1', 'UTF-8'),
)


def _body_requests(route, values, valid):
    path = fill(route.template, values)
    rows = [_req('malformed body', route.method, path, {400, 413}, names,
                 body=body, content_type='application/json')
            for body, names in _raw_bodies()]
    rows += [_req('media type', route.method, path, {415}, names,
                  body=_json(valid), content_type=content_type)
             for content_type, names in _MEDIA_TYPES]
    rows.append(_req('media type', route.method, path, {415}, 'UTF-8',
                     body=json.dumps(valid).encode('utf-16'),
                     content_type='application/json; charset=utf-16'))
    rows.append(_req('media type', route.method, path, {415, 400},
                     ('application/json', 'JSON'), body=_json(valid),
                     content_type=None))
    for document, statuses, names in _documents(route, valid):
        rows.append(_req('bad field', route.method, path, statuses, names,
                         body=_json(document),
                         content_type='application/json'))
    return rows


def _documents(route, valid):
    """``(document, statuses, names)``: the valid body broken once."""
    shapes = [(None, {400}, 'request body'), ('x', {400}, 'request body'),
              (1, {400}, 'request body'), ({}, {400}, ('missing',
                                                       'non-empty'))]
    if isinstance(valid, list):
        return shapes + list(_patches(valid))
    shapes.append(([valid], {400}, 'request body'))
    shapes += [(dict(valid, bogus=1), {400}, 'bogus')]
    for field in valid:
        shapes += _field_breakers(valid, field)
    if 'request_spec' in valid:
        shapes += list(_spec_breakers(valid))
    if 'aggregates' in valid:
        shapes += list(_sync_breakers(valid))
    return shapes


_BAD_SCALARS = (None, 1, -1, 1.5, True, [], {}, '', ' ', '\x00', 'a' * 300,
                '\u2028', EMOJI * 300, 2 ** 40)


def _field_breakers(valid, field):
    rows = []
    for value in _BAD_SCALARS:
        if type(value) is type(valid[field]) and value == valid[field]:
            continue
        if (field in ('dry_run', 'prune', 'explain')
                and isinstance(value, bool)):
            continue
        if field == 'request_spec' and value == {}:
            continue  # an empty spec is a valid one: it asks for nothing
        if field == 'aggregates' and value == []:
            continue  # an empty desired state is a valid one
        if field in ('conductor_group', 'shard') and value is None:
            continue  # no partition: any node
        rows.append((dict(valid, **{field: value}), {400}, field))
    return rows


def _spec_breakers(valid):
    spec = valid['request_spec']

    def with_spec(**changes):
        return dict(valid, request_spec=dict(spec, **changes))

    for name in ('memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb', 'swap',
                 'vcpu_weight', 'rxtx_factor'):
        for value in (-1, 2 ** 31, 1.5, '8', True, [], 10 ** 19):
            if name == 'rxtx_factor' and value == 1.5:
                continue
            yield with_spec(**{name: value}), {400}, name
    extra = spec['extra_specs']
    for key, value in (
            ('resources:VCPU', '9' * 15), ('resources:CUSTOM_X', '9' * 19),
            ('resources:custom_x', '1'), ('trait:CUSTOM_A', 'maybe'),
            ('capabilities:boot_mode', 1), ('capabilities:a:b', 'x'),
            ('capabilities:x', '\x00'), ('capabilities:x', 'a' * 300),
            ('', '1'), ('a' * 300, '1'), ('capabilities:\t', 'x')):
        yield (with_spec(extra_specs=dict(extra, **{key: value})), {400},
               ('extra_specs', 'JSON'))
    yield with_spec(extra_specs=[]), {400}, 'extra_specs'
    yield with_spec(image='x'), {400}, 'image'
    yield with_spec(image={'properties': 1}), {400}, 'image.properties'
    yield (with_spec(image={'properties': {'hw_architecture': ['x']}}),
           {400}, 'hw_architecture')
    yield (with_spec(image={'properties': {'traits_required': 'x'}}),
           {400}, 'traits_required')
    yield (with_spec(image={'properties': {'img_hv_type': 'kvm'}}),
           {400}, 'img_hv_type')
    yield dict(valid, candidate_nodes='node-1'), {400}, 'candidate_nodes'
    yield dict(valid, candidate_nodes=[1]), {400}, 'candidate_nodes'
    yield dict(valid, candidate_nodes=['\x00']), {400}, 'candidate_nodes'


def _sync_breakers(valid):
    good = valid['aggregates'][0]
    for aggregates, names in (
            ('all', 'aggregates'), ({}, 'aggregates'),
            ([dict(good, name='x')], 'aggregates[0]'),
            ([{'uuid': 'x', 'hosts': []}], 'aggregates[0].uuid'),
            ([{'uuid': good['uuid']}], 'aggregates[0]'),
            ([dict(good, hosts=None)], 'aggregates[0].hosts'),
            ([dict(good, hosts=['a/b'])], 'aggregates[0].hosts[0]'),
            ([dict(good, hosts=['\x00'])], 'aggregates[0].hosts[0]'),
            ([dict(good, hosts=['ok', ' '])], 'aggregates[0].hosts[1]'),
            ([dict(good, hosts=[7])], 'aggregates[0].hosts[0]'),
            ([good, good], 'aggregates[1].uuid')):
        yield dict(valid, aggregates=aggregates), {400}, names


def _patches(valid):
    operation = valid[0]
    return (
        ([], {400}, 'non-empty'), ([{}], {400}, '[0].op'),
        (['replace'], {400}, '[0]'), ([[operation]], {400}, '[0]'),
        ([dict(operation, op='add')], {400}, '[0].op'),
        ([dict(operation, op='remove')], {400}, '[0].op'),
        ([dict(operation, op={'a': 1})], {400}, '[0].op'),
        ([dict(operation, path='/uuid')], {400}, '[0].path'),
        ([dict(operation, path=['/host'])], {400}, '[0].path'),
        ([{'op': 'replace', 'path': '/host'}], {400}, '[0].value'),
        ([dict(operation, path='/host', value='')], {400}, 'host'),
        ([dict(operation, path='/host', value='\x00')], {400}, 'NUL'),
        ([dict(operation, path='/host', value='a/b')], {400}, 'host'),
        ([dict(operation, path='/host', value='a' * 300)], {400},
         'host'),
        ([dict(operation, path='/host', value=1)], {400}, 'host'),
        ([dict(operation, path='/state', value='deleted')], {400},
         'state'),
        ([dict(operation, path='/state', value=[])], {400}, 'state'),
        ([dict(operation, path='/state', value='expired')], {409},
         'expired'),
        ([{'op': 'test', 'path': '/host', 'value': 'elsewhere'},
          dict(operation, path='/host', value='compute-9')], {409},
         'tests that host'),
        ([operation, {'op': 'test', 'path': '/state',
                      'value': 'reserved'}], {409},
         'tests that state'))
