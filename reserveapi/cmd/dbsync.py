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

"""reserveapi-dbsync: create or upgrade the database schema."""

import sys

from oslo_config import cfg

from reserveapi.common import service
import reserveapi.conf
from reserveapi.db import migration

CONF = reserveapi.conf.CONF


def _upgrade():
    migration.upgrade(CONF.command.revision)
    print('Database is at revision %s.' % migration.current())


def _current():
    print(migration.current() or 'The database has no schema yet.')


def _revision():
    migration.revision(CONF.command.message,
                       autogenerate=CONF.command.autogenerate)


def _add_commands(subparsers):
    parser = subparsers.add_parser(
        'upgrade', help='Upgrade the schema (default: to the newest).',
        prog='reserveapi-dbsync upgrade')
    parser.add_argument('--revision', default='head')
    parser.set_defaults(func=_upgrade)

    parser = subparsers.add_parser(
        'current', help='Print the revision the database is at.',
        prog='reserveapi-dbsync current')
    parser.set_defaults(func=_current)

    parser = subparsers.add_parser(
        'revision', help='Create a new migration script (developers).',
        prog='reserveapi-dbsync revision')
    parser.add_argument('-m', '--message', required=True)
    parser.add_argument('--autogenerate', action='store_true')
    parser.set_defaults(func=_revision)


COMMAND_OPT = cfg.SubCommandOpt('command', title='Commands',
                                handler=_add_commands)


USAGE = service.usage(
    '[--config-file PATH] [COMMAND [ARGS]]',
    'Creates or upgrades the database schema ([database] connection).',
    commands=(('upgrade', 'Upgrade the schema (the default), to the '
                          'newest or to --revision.'),
              ('current', 'Print the revision the database is at.'),
              ('revision', 'Create a new migration script (developers).')))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not any(arg in ('upgrade', 'current', 'revision', '-h', '--help')
               for arg in argv):
        argv = argv + ['upgrade']
    CONF.register_cli_opt(COMMAND_OPT)
    service.prepare_service(argv, usage=USAGE)
    CONF.command.func()
