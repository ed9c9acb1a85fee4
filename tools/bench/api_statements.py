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

"""Print, as JSON, the candidate query the API sends for a request spec.

One ``POST /v1/reservations`` runs in-process (webtest) on the database
of ``--config-file``, and its reservation is deleted again; the first
statement that reads candidate nodes is printed as the driver received
it: ``{"sql": ..., "params": ...}``. run.py replays it as raw SQL for
the floor that does the API's own database work (see
benchload.raw_sql_floor)::

    python -m tools.bench.api_statements --config-file reserveapi.conf
"""

import argparse
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


def is_candidate_query(statement):
    """The matcher's read of candidate nodes (db/matching.py): nodes in
    best-fit order, a batch at a time."""
    text = ' '.join(statement.split())
    return (text.startswith('SELECT nodes.id') and ' FROM nodes ' in text
            and ' ORDER BY ' in text and ' LIMIT ' in text)


def capture(config_file, request_spec, log_file):
    service.prepare_service(['--config-file', config_file,
                             '--log-file', log_file])
    CONF.set_override('auth_strategy', 'noauth', group='api')
    client = webtest.TestApp(app_mod.setup_app())
    seen = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if not seen and is_candidate_query(statement):
            seen.append({'sql': statement, 'params': parameters})

    sa.event.listen(db_base.get_engine(), 'before_cursor_execute', record)
    response = client.post_json(
        '/v1/reservations',
        benchload.reservation_body(request_spec, 'bench-capture'))
    client.delete('/v1/reservations/' + response.json['uuid'])
    if not seen:
        raise RuntimeError('no candidate query seen')
    return seen[0]


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
