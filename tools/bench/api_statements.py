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

"""Print, as JSON, the SQL the API sends for a request spec.

One ``POST /v1/reservations`` runs in-process (webtest) on the database
of ``--config-file``, and its reservation is deleted again. Printed, as
the driver received them: ``reads``, every statement from the first
read of candidate nodes up to the reservation's INSERT, and
``reserve``, the statements of the transaction that makes the
reservation; each ``{"sql", "params", "positions"}``,
``params`` by name and ``positions`` the names in order where the
driver takes a tuple (PyMySQL). run.py replays them as raw SQL for the
floor that does the API's own database work (see
benchdb.Backend.reserve_once); candidate_scale.py records the statements
of its requests in its own process (``recorded``)::

    python -m tools.bench.api_statements --config-file reserveapi.conf
"""

import argparse
import contextlib
import json
import sys

import sqlalchemy as sa
import webtest

from reserveapi.api import app as app_mod
from reserveapi.common import service
import reserveapi.conf
from reserveapi.db import base as db_base
from tools.bench import benchload

CONF = reserveapi.conf.CONF
# The parameter of the reserving statements that names the node (the
# product's own bind name): each replay sets its own.
RESERVED_NODE = 'new_node_id'


def is_candidate_query(statement):
    """The matcher's read of candidate nodes (db/matching.py): nodes in
    best-fit order, a batch at a time."""
    text = ' '.join(statement.split())
    return (text.startswith('SELECT nodes.id') and ' FROM nodes ' in text
            and ' ORDER BY ' in text and ' LIMIT ' in text)


def _by_name(context, parameters):
    """``(params by name, positions)`` of one statement as sent; a
    statement sent as text (SQLite's BEGIN) has its parameters named by
    their place."""
    if isinstance(parameters, dict):
        return dict(parameters), None
    if context.compiled is None:
        positions = [str(place) for place in range(len(parameters))]
    else:
        positions = list(context.compiled.positiontup)
    return dict(zip(positions, parameters, strict=True)), positions


@contextlib.contextmanager
def recorded():
    """A list of the statements this process sends to the database
    meanwhile, each as the driver receives it."""
    sent = []

    def record(conn, cursor, statement, parameters, context, executemany):
        params, positions = _by_name(context, parameters)
        sent.append({'sql': statement, 'params': params,
                     'positions': positions})

    engine = db_base.get_engine()
    sa.event.listen(engine, 'before_cursor_execute', record)
    try:
        yield sent
    finally:
        sa.event.remove(engine, 'before_cursor_execute', record)


def reservation_statements(client, request_spec):
    """``{"reads", "reserve"}`` of one ``POST /v1/reservations`` through
    ``client`` (webtest, this process), whose reservation is deleted
    again."""
    with recorded() as sent:
        response = client.post_json(
            '/v1/reservations',
            benchload.reservation_body(request_spec, 'bench-capture'))
    client.delete('/v1/reservations/' + response.json['uuid'])
    starts = [index for index, statement in enumerate(sent)
              if is_candidate_query(statement['sql'])]
    reserving = [index for index, statement in enumerate(sent)
                 if RESERVED_NODE in statement['params']]
    if not starts or not reserving:
        raise RuntimeError('no candidate query or no reservation INSERT '
                           'seen')
    # The reserving transaction: its statements are consecutive.
    end = reserving[0]
    while end + 1 < len(sent) and RESERVED_NODE in sent[end + 1]['params']:
        end += 1
    return {'reads': sent[starts[0]:reserving[0]],
            'reserve': sent[reserving[0]:end + 1]}


def capture(config_file, request_spec, log_file):
    service.prepare_service(['--config-file', config_file,
                             '--log-file', log_file])
    CONF.set_override('auth_strategy', 'noauth', group='api')
    return reservation_statements(webtest.TestApp(app_mod.setup_app()),
                                  request_spec)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--config-file', required=True)
    parser.add_argument('--spec', choices=sorted(benchload.SPECS),
                        default='baremetal')
    parser.add_argument('--log-file', default='/dev/null')
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    _resource_class, request_spec = benchload.SPECS[args.spec]
    json.dump(capture(args.config_file, request_spec, args.log_file),
              sys.stdout, default=str)
    return 0


if __name__ == '__main__':
    sys.exit(main())
