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

"""Start-up shared by every entry point: config files, then logging."""

import itertools
import textwrap

from oslo_config import cfg
from oslo_log import log

from reserveapi import version
import reserveapi.conf

CONF = reserveapi.conf.CONF


GLOBAL_VALUE_OPTIONS = frozenset((
    '--config-file', '--config-dir', '--log-file', '--log-dir',
    '--log-config-append'))
GLOBAL_FLAGS = frozenset(('--debug', '-d', '--nodebug'))
"""Options every command takes, which argparse only accepts before a
sub-command; ``global_options_first`` moves them there."""


def global_options_first(argv):
    """``argv`` with the options every command takes moved to the front.

    argparse knows ``--config-file`` only before a sub-command
    (``reserveapi-manage --config-file F mirror-status``), while the
    usage lines and habit put it anywhere (``reserveapi-manage
    mirror-status --config-file F``); both mean the same.
    """
    moved, rest = [], []
    args = iter(argv)
    for arg in args:
        if arg == '--':
            rest.append(arg)
            rest.extend(args)
            break
        if arg.partition('=')[0] in GLOBAL_VALUE_OPTIONS:
            value = [] if '=' in arg else list(itertools.islice(args, 1))
            if '=' in arg or value:
                moved += [arg] + value
            else:
                # No value: where it is, argparse says so.
                rest.append(arg)
        elif arg in GLOBAL_FLAGS:
            moved.append(arg)
        else:
            rest.append(arg)
    return moved + rest


def prepare_service(argv=None, default_config_files=None, usage=None,
                    results_on_stdout=False):
    """Parse the command line and config files into CONF; set up logging.

    ``usage`` opens ``--help``: argparse prints it as written, before
    the many logging options oslo.log adds, so a command says what it
    does and which commands it has first.
    """
    log.register_options(CONF)
    if results_on_stdout:
        # A command whose output is read (reserveapi-status --json):
        # logs, --debug ones included, go to stderr unless a log file is
        # set.
        CONF.set_default('use_stderr', True)
    log.set_defaults(default_log_levels=log.get_default_log_levels() + [
        'alembic=WARNING', 'keystonemiddleware=WARNING'])
    CONF(global_options_first(argv or []), project='reserveapi',
         version=version.release_string(),
         default_config_files=default_config_files, usage=usage)
    log.setup(CONF, 'reserveapi')
    _refuse_unknown_source()


def _refuse_unknown_source():
    """A source we do not know stops the service at start-up, in one
    line, rather than at the first request or sync that reads it."""
    try:
        CONF.inventory.source  # noqa: B018
    except cfg.ConfigFileValueError as exc:
        raise SystemExit('Invalid [inventory] source: %s'
                         % str(exc).rpartition('is not valid: ')[2])


def usage(synopsis, text, commands=()):
    """A ``--help`` opening: the synopsis, what the command does and its
    sub-commands, one per line; ``%`` is escaped for argparse.
    """
    lines = ['%(prog)s ' + synopsis, '']
    lines += textwrap.wrap(text.replace('%', '%%'), 72)
    if commands:
        width = max(len(name) for name, _help in commands) + 2
        lines += ['', 'commands:']
        for name, summary in commands:
            wrapped = textwrap.wrap(summary.replace('%', '%%'),
                                    76 - width - 2)
            lines.append('  %s%s' % (name.ljust(width), wrapped[0]))
            lines += ['  %s%s' % (' ' * width, more) for more in wrapped[1:]]
    return '\n'.join(lines) + '\n'
