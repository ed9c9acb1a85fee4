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


"""``openstack baremetal reservation candidates``: how many more servers
of a flavor, with an image, the cloud (or one Ironic partition) can take
now.

The flavor (with its extra specs) and the image (with its properties) are
read from the cloud's own Nova and Glance with the user's session, and
the request spec is built from them by ``reserveapi.client.request_spec``,
as nova-compute's driver builds it from the same flavor and image.

``--spec FILE`` takes a request spec or a whole ``POST /v1/candidates``
body. The service ignores a spec's unknown keys, so a mistaken one here
is refused by name rather than answered for an emptier spec.
"""

from keystoneauth1.identity import base as identity_base
from osc_lib import exceptions
import prettytable

from reserveapi.client import request_spec
from reserveapi.osc import common
from reserveapi.osc import reservations


def _image(image_proxy, name_or_id):
    """The image as Glance shows it: the SDK keeps the properties it does
    not model apart, under ``properties``."""
    image = image_proxy.find_image(name_or_id, ignore_missing=False)
    shown = image.to_dict(computed=False, ignore_none=True,
                          original_names=True, headers=False)
    shown.update(shown.pop('properties', None) or {})
    return shown


def _names(keys):
    return ', '.join(sorted(keys))


def _refuse_unknown(path, where, value, known, hint=''):
    unknown = set(value) - set(known)
    if unknown:
        raise exceptions.CommandError(
            '--spec %s: unknown key(s) %s in %s; it may hold %s.%s'
            % (path, _names(repr(key) for key in unknown), where,
               _names(known), hint))


def read_spec(path):
    """``(request_spec, query)`` from the file of ``--spec``.

    A file with a top-level ``request_spec`` is a candidates body, whose
    other keys are the query, as the service reads them; any other file
    is a request spec and the query empty.
    """
    document = reservations.json_argument('@' + path, '--spec')
    if not isinstance(document, dict):
        raise exceptions.CommandError('--spec must hold a JSON object.')
    if 'request_spec' in document:
        _refuse_unknown(path, 'the candidates body', document,
                        request_spec.CANDIDATES_BODY_KEYS)
        query = dict(document)
        spec = query.pop('request_spec')
        where = 'request_spec'
        if not isinstance(spec, dict):
            raise exceptions.CommandError(
                '--spec %s: request_spec must be a JSON object.' % path)
    else:
        spec, query, where = document, {}, 'the request spec'
    hint = ''
    if where != 'request_spec' and set(spec) & set(
            request_spec.CANDIDATES_BODY_KEYS):
        hint = ' A candidates body holds its spec under request_spec.'
    _refuse_unknown(path, where, spec, request_spec.KEYS, hint)
    if isinstance(spec.get('image'), dict):
        _refuse_unknown(path, where + "'s image", spec['image'],
                        request_spec.IMAGE_KEYS,
                        ' Image properties go under properties.')
    if not isinstance(query.get('explain', True), bool):
        raise exceptions.CommandError(
            '--spec %s: explain must be true or false.' % path)
    if not isinstance(query.get('candidate_nodes') or [], list):
        raise exceptions.CommandError(
            '--spec %s: candidate_nodes must be a list.' % path)
    return spec, query


def missing_catalog(manager, service_type, service, option):
    """Refuse ``option`` when nothing says where ``service_type`` is.

    Without a service catalog (auth type ``none``, or a bare token and
    endpoint) ``--os-endpoint`` is every service's endpoint, so Nova's
    and Glance's calls would reach this service; an endpoint override
    for the service in clouds.yaml still says where it is.
    """
    config = manager.get_configuration()
    key = service_type.replace('-', '_')
    if config.get(key + '_endpoint_override') or config.get(
            key + '_endpoint'):
        return
    manager.setup_auth()
    if isinstance(manager.auth, identity_base.BaseIdentityPlugin):
        return
    raise exceptions.CommandError(
        "%s needs %s's endpoint from the service catalog, and "
        "--os-auth-type %s gives none: pass --spec FILE instead, or set "
        "%s_endpoint_override in clouds.yaml."
        % (option, service, config.get('auth_type') or 'none', key))


def _table(columns, rows):
    table = prettytable.PrettyTable(columns)
    table.align = 'l'
    for row in rows:
        table.add_row(row)
    return table.get_string()


class ShowCandidates(common.Command):
    """Count the nodes a server of a flavor, with an image, could get now:
    per Ironic partition, what excluded the others, the best first.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument(
            '--flavor', metavar='<flavor>',
            help='Flavor (name or ID), read from Nova with its extra '
                 'specs.')
        source.add_argument(
            '--spec', metavar='<file>',
            help='JSON instead of a flavor and an image: a request spec, '
                 'as POST /v1/reservations takes it, or a whole POST '
                 '/v1/candidates body (with request_spec), whose '
                 'project_id, shard, conductor_group, limit, '
                 'candidate_nodes and explain apply; the options here '
                 'override them. An unknown key is refused.')
        parser.add_argument(
            '--image', metavar='<image>',
            help='Image (name or ID), read from Glance with its properties '
                 '(with --flavor).')
        parser.add_argument('--project', metavar='<project-id>',
                            help='Count for this project (default: yours).')
        common.add_partition_options(parser)
        parser.add_argument(
            '--limit', metavar='<count>', type=int,
            help='Name this many of the nodes, best fit first (default '
                 '10).')
        parser.add_argument(
            '--start', metavar='<time>',
            help='With --end: also say how many nodes a hold from this '
                 'time would be admitted for (ISO 8601 with a UTC '
                 'offset).')
        parser.add_argument('--end', metavar='<time>',
                            help='With --start: the end of that window.')
        return parser

    def request(self, parsed_args):
        """``(request_spec, query)`` of the file, or of the flavor and
        image, with the options on top."""
        if parsed_args.spec:
            spec, query = read_spec(parsed_args.spec)
        else:
            spec, query = self.request_spec(parsed_args), {}
        for option, key in (('project', 'project_id'), ('shard', 'shard'),
                            ('conductor_group', 'conductor_group'),
                            ('limit', 'limit'), ('start', 'start'),
                            ('end', 'end')):
            value = getattr(parsed_args, option)
            if value is not None:
                query[key] = value
        return spec, query

    def request_spec(self, parsed_args):
        """The spec nova-compute's driver builds from the flavor and
        image, as Nova and Glance show them."""
        manager = self.app.client_manager
        missing_catalog(manager, 'compute', 'Nova', '--flavor')
        if parsed_args.image:
            missing_catalog(manager, 'image', 'Glance', '--image')
        flavor = manager.compute.find_flavor(
            parsed_args.flavor, ignore_missing=False, get_extra_specs=True)
        image = {'properties': {}}
        if parsed_args.image:
            image = request_spec.image_from_glance(
                _image(manager.image, parsed_args.image))
        return request_spec.build(request_spec.flavor_from_compute(
            flavor.to_dict(computed=False, ignore_none=True,
                           original_names=True, headers=False)), image)

    def take_action(self, parsed_args):
        if parsed_args.image and not parsed_args.flavor:
            raise exceptions.CommandError(
                '--image goes with --flavor.')
        spec, query = self.request(parsed_args)
        answer = self.clients.reservations.candidates(spec, **query)
        out = self.app.stdout
        if 'total' in answer:
            out.write('%d of %d nodes could be reserved now.\n'
                      % (answer['count'], answer['total']))
        else:
            # "explain": false in a --spec body: no total, no exclusions.
            out.write('%d nodes could be reserved now.\n' % answer['count'])
        out.write(_table(('Shard', 'Conductor Group', 'Nodes'), [
            (row['shard'] or '', row['conductor_group'] or '(default)',
             row['count']) for row in answer['by_partition']]) + '\n')
        if 'excluded' in answer:
            out.write(_table(('Excluded By', 'Item', 'Nodes', 'Values'), [
                (row['reason'], row['item'] or '', row['count'], ', '.join(
                    '%s (%d)' % (value['value'], value['count'])
                    for value in row['values']))
                for row in answer['excluded']]) + '\n')
        if answer.get('promised'):
            out.write('%d of them are kept for holds.\n'
                      % answer['promised'])
        if 'admissible' in answer:
            out.write('A hold over the window would be admitted for %d '
                      'nodes.\n' % answer['admissible'])
        if answer['nodes']:
            out.write('Best fit first: %s\n' % ', '.join(
                node['name'] or node['uuid'] for node in answer['nodes']))
