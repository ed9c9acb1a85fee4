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

"""Start-up shared by every entry point: config files, then logging.

An operator's mistake (a file that is not there, a value an option
refuses, a section the chosen mode needs) is one line naming the file,
the option and what would be valid, never a traceback unless --debug:
exit 2 for a mistake in the command line or the configuration, 1 for a
failure the command could not get past (the database does not answer).
"""

import argparse
import difflib
import functools
import glob
import grp
import itertools
import os
import pwd
import sys
import textwrap
import traceback

from oslo_config import cfg
from oslo_config import types
from oslo_log import log

from reserveapi import compat
from reserveapi import version
from reserveapi.common import exception
import reserveapi.conf
from reserveapi.conf import opts

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF

PROJECT = 'reserveapi'
CONFIG_FILE = PROJECT + '.conf'
SEARCHED = ('~/.' + PROJECT, '~', '/etc/' + PROJECT, '/etc')
"""Where oslo.config looks for reserveapi.conf without --config-file,
in this order; the first found is read (as Nova and Ironic do)."""
USAGE_ERROR = 2
RUNTIME_ERROR = 1


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
                    named_by='--config-file', checks=()):
    """Parse the command line and config files into CONF, check every
    value, set up logging, say which file was read and warn of names it
    does not know, then run ``checks`` (what the process's mode needs,
    each raising ConfigurationError).

    Without ``default_config_files`` (or --config-file), oslo.config's
    search finds reserveapi.conf (``SEARCHED``). ``named_by`` is what
    named the files, for the line saying one is missing. ``usage`` opens
    ``--help``: argparse prints it as written, before the many logging
    options oslo.log adds, so a command says what it does and which
    commands it has first.

    :raises: ConfigurationError, one line per mistake, the only line
        the process writes.
    """
    log.register_options(CONF)
    log.set_defaults(default_log_levels=log.get_default_log_levels() + [
        'alembic=WARNING', 'keystonemiddleware=WARNING'])
    _read(global_options_first(argv or []), default_config_files, usage,
          named_by)
    _check_values()
    if not (CONF.log_file or CONF.log_dir):
        # Diagnostics on stderr, so that stdout holds a command's results
        # alone (reserveapi-status --json, reserveapi-dbsync current).
        CONF.set_default('use_stderr', True)
    try:
        log.setup(CONF, PROJECT)
    except OSError as exc:
        raise exception.ConfigurationError(
            'Cannot write the log file %s: %s ([DEFAULT] log_dir and '
            'log_file).' % (exc.filename, exc.strerror))
    # The file first, then its misspellings (which may explain what a
    # check refuses: auth_stratgy leaves keystone the strategy).
    _say_which_files()
    _warn_of_unknown_names()
    for check in checks:
        check()


def _read(argv, default_config_files, usage, named_by):
    try:
        CONF(argv, project=PROJECT, version=version.version_string(),
             default_config_files=default_config_files, usage=usage)
    except cfg.ConfigFilesNotFoundError as exc:
        raise exception.ConfigurationError(
            'Configuration file %s not found (named by %s).'
            % (', '.join(exc.config_files), named_by))
    except cfg.ConfigFilesPermissionDeniedError as exc:
        raise exception.ConfigurationError('; '.join(
            _unreadable(path) for path in exc.config_files) + '.')
    except cfg.ConfigDirNotFoundError as exc:
        raise exception.ConfigurationError(
            'Configuration directory %s not found (named by --config-dir).'
            % exc.config_dir)
    except IsADirectoryError as exc:
        raise exception.ConfigurationError(
            'Configuration file %s is a directory (--config-dir reads the '
            'files of one).' % exc.filename)
    except cfg.ConfigFileParseError as exc:
        detail = exc.msg.replace('at %s:' % exc.config_file, 'line ')
        raise exception.ConfigurationError(
            'Cannot parse the configuration file %s: %s.'
            % (exc.config_file, detail.rstrip('.')))
    except cfg.Error as exc:
        raise exception.ConfigurationError(str(exc))


def _unreadable(path):
    """Why this process may not read ``path``: who may."""
    try:
        status = os.stat(path)
        owner = '%s:%s, mode %o' % (_name(pwd.getpwuid, status.st_uid),
                                    _name(grp.getgrgid, status.st_gid),
                                    status.st_mode & 0o777)
    except OSError as exc:
        owner = exc.strerror
    return ('Cannot read the configuration file %s: permission denied to '
            'user %s (the file is %s)' % (
                path, _name(pwd.getpwuid, os.geteuid()), owner))


def _name(lookup, number):
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


_VALUE_ERRORS = (cfg.ConfigSourceValueError, cfg.TemplateSubstitutionError)


def _check_values():
    """Read every registered option now: a value its option refuses
    stops the process here, named, rather than at the first request or
    job that reads it, with a traceback.
    """
    problems = []
    for name in list(CONF):
        try:
            value = CONF[name]
        except _VALUE_ERRORS as exc:
            problems.append(_invalid(None, name, exc))
            continue
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            for option in list(value):
                try:
                    value[option]
                except _VALUE_ERRORS as exc:
                    problems.append(_invalid(name, option, exc))
    if problems:
        raise exception.ConfigurationError('\n'.join(problems))


def _invalid(group, name, error):
    """``[group] name = value in FILE is not valid: expected ...``.

    oslo.config's own text names neither the group nor the value, so
    both are read back from the option (private API, compat.py, hence
    the fallback to that text).
    """
    reason = str(error).rpartition(' is not valid: ')[2]
    try:
        opt = compat.registered_option(CONF, name, group)
        value, location = compat.given_value(CONF, name, group)
    except (cfg.Error, KeyError, AttributeError, TypeError,
            exception.UnsupportedLibrary):
        return '[%s] %s is not valid: %s.' % (group or 'DEFAULT', name,
                                               reason.rstrip('.'))
    expected = _expected(opt.type)
    return '[%s] %s = %s in %s is not valid: %s.' % (
        group or 'DEFAULT', name, value, location.detail,
        'expected %s' % expected if expected else reason.rstrip('.'))


def _expected(kind):
    """What an option of oslo.config type ``kind`` accepts, in words; None
    where oslo.config's own reason says it better."""
    if getattr(kind, 'choices', None):
        return 'one of %s' % ', '.join(str(choice) for choice in kind.choices)
    if isinstance(kind, types.Boolean):
        return 'true or false'
    if isinstance(kind, (types.Integer, types.Float)):
        noun = 'an integer' if isinstance(kind, types.Integer) else 'a number'
        if kind.min is not None and kind.max is not None:
            return '%s from %s to %s' % (noun, kind.min, kind.max)
        if kind.min is not None:
            return '%s of at least %s' % (noun, kind.min)
        if kind.max is not None:
            return '%s of at most %s' % (noun, kind.max)
        return noun
    if isinstance(kind, (types.HostAddress, types.HostDomain)):
        return 'an IP address or a host name'
    if isinstance(kind, types.IPAddress):
        return 'an IP address'
    return None


def _say_which_files():
    read = list(CONF.config_file) + [
        '%s/*.conf' % directory for directory in CONF.config_dir or ()]
    if read:
        LOG.info('Configuration: %s',
                 ', '.join(os.path.abspath(path) for path in read))
        return
    LOG.warning('No configuration file: none of %s exists, so every '
                'option has its default. Name one with --config-file.',
                ', '.join(os.path.join(os.path.expanduser(directory),
                                       CONFIG_FILE)
                          for directory in SEARCHED))


def _warn_of_unknown_names():
    """oslo.config ignores an option or a section it does not know,
    silently: warn of a misspelt one, naming the one meant when it is
    close. Only where every name is known here: the groups of our own
    options, but those a keystoneauth1 plugin adds to (``[ironic]``...);
    a section close to the name of one CONF knows."""
    groups = {name for name in CONF if isinstance(
        CONF[name], cfg.ConfigOpts.GroupAttr)}
    ours = {module.GROUP for module in opts.MODULES
            if getattr(module, 'GROUP', None) in groups
            and 'auth_type' not in CONF[module.GROUP]}
    parsed = list(_parsed_files())
    given = {(section, name) for _path, sections in parsed
             for section, options in sections.items() for name in options}
    for path, sections in parsed:
        for section, options in sections.items():
            if section in ours:
                known = _names(section)
                for name in sorted(set(options) - known):
                    _refuse_a_silent_default(section, name, path, known,
                                             given)
                    LOG.warning('[%s] %s in %s is no option, so it is '
                                'ignored%s.', section, name, path,
                                _meant(name, known))
            elif section != 'DEFAULT' and section not in groups:
                meant = _meant(section, groups, '[%s]')
                if meant:
                    LOG.warning('[%s] in %s is no section, so it is '
                                'ignored%s.', section, path, meant)


SILENT_DEFAULTS = frozenset({('database', 'connection')})
"""Options whose default a command would use without a word: unset
because misspelt, the database would be another one."""


def _refuse_a_silent_default(section, name, path, known, given):
    """``[section] name`` is no option: if it stands for one of
    ``SILENT_DEFAULTS`` that no file sets, refuse rather than run on its
    default (``[database] conection``: a stale SQLite file, synced as if
    it were the PostgreSQL meant).

    :raises: ConfigurationError
    """
    meant = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.8)
    if (meant and (section, meant[0]) in SILENT_DEFAULTS
            and (section, meant[0]) not in given):
        raise exception.ConfigurationError(
            '[%s] %s in %s is no option (did you mean %s?), and [%s] %s is '
            'not set: every command would use its default instead. Correct '
            'the name.' % (section, name, path, meant[0], section, meant[0]))


def _parsed_files():
    """``(path, {section: {option: [values]}})`` of every file read."""
    paths = list(CONF.config_file)
    for directory in CONF.config_dir or ():
        paths += sorted(glob.glob(os.path.join(directory, '*.conf')))
    for path in paths:
        sections = {}
        cfg.ConfigParser(path, sections).parse()
        yield os.path.abspath(path), sections


def _names(group):
    """The option names ``[group]`` takes, deprecated ones included
    where compat.py can read them (oslo.config keeps them to itself)."""
    names = set()
    for name in CONF[group]:
        names.add(name)
        try:
            opt = compat.registered_option(CONF, name, group)
        except exception.UnsupportedLibrary:
            continue
        names.update(deprecated.name for deprecated in opt.deprecated_opts
                     if deprecated.name and deprecated.group in (None, group))
    return names


def _meant(name, names, form='%s'):
    close = difflib.get_close_matches(name, sorted(names), n=1, cutoff=0.8)
    return ' (did you mean %s?)' % (form % close[0]) if close else ''


def console_script(main):
    """A console script's ``main(argv=None)``: a ConfigurationError is its
    one line on stderr and exit 2, any other error of ours (the database
    does not answer, another process is syncing) its one line and exit
    1; the traceback only with --debug. Anything else is a bug, and keeps
    its traceback.
    """

    @functools.wraps(main)
    def run(argv=None):
        try:
            return main(argv)
        except exception.ConfigurationError as exc:
            _fail(exc, USAGE_ERROR)
        except (exception.CommandError, exception.ReserveapiException) as exc:
            _fail(exc, RUNTIME_ERROR)

    return run


def debugging():
    """``--debug`` (or ``[DEFAULT] debug``), even when reading the
    configuration failed half-way."""
    try:
        return bool(CONF.debug)
    except cfg.Error:
        return bool({'--debug', '-d'} & set(sys.argv[1:]))


def _fail(error, code):
    if debugging():
        traceback.print_exc()
    cause = getattr(error, 'cause', None)
    print('%s (%s).' % (error.detail.rstrip('.'), cause) if cause
          else error.detail, file=sys.stderr)
    sys.exit(code)


def sub_commands(handler):
    """The ``command`` option of a command with sub-commands, which
    ``handler(subparsers)`` adds, each with a ``prog`` of its own (argparse
    would otherwise prefix its usage with the whole ``usage`` text).
    ``usage`` lists them, so argparse's own list is left out of --help.
    """
    return cfg.SubCommandOpt('command', handler=handler,
                             help=argparse.SUPPRESS)


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
