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

"""``systemctl`` and ``journalctl`` for the install guide's test, on a
machine that runs no systemd (a container)::

    python fake_systemd.py systemctl enable --now reserveapi-api
    python fake_systemd.py journalctl -u reserveapi-api

``systemctl enable --now`` (or ``start``) runs the unit installed in
``/etc/systemd/system`` as systemd would: its ``ExecStart``, as its
``User`` and ``Group``, with their home, systemd's ``PATH`` and the
unit's ``Environment``, in ``/``, detached; ``daemon-reload`` does
nothing. ``journalctl -u UNIT`` prints what the unit wrote. State (logs,
process ids) goes to the directory ``$RESERVEAPI_FAKE_SYSTEMD_DIR``.

It imports nothing of the project: it runs by file name, inside the
test's mount namespace.
"""

import configparser
import grp
import os
import pwd
import shlex
import subprocess
import sys

STATE_ENV = 'RESERVEAPI_FAKE_SYSTEMD_DIR'
UNIT_DIRS = ('/etc/systemd/system', '/usr/lib/systemd/system')
SYSTEMD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'


def _state(unit, suffix):
    return os.path.join(os.environ[STATE_ENV], unit + suffix)


def _unit_name(name):
    return name if name.endswith('.service') else name + '.service'


def _service(unit):
    for directory in UNIT_DIRS:
        path = os.path.join(directory, unit)
        if os.path.exists(path):
            parser = configparser.ConfigParser(interpolation=None,
                                               strict=False)
            parser.optionxform = str
            parser.read(path)
            return parser['Service']
    raise SystemExit('Unit %s not found.' % unit)


def start(unit):
    service = _service(unit)
    user = pwd.getpwnam(service.get('User', 'root'))
    group = (grp.getgrnam(service['Group']).gr_gid if 'Group' in service
             else user.pw_gid)
    env = {'PATH': SYSTEMD_PATH, 'LANG': 'C.UTF-8', 'HOME': user.pw_dir,
           'USER': user.pw_name, 'LOGNAME': user.pw_name,
           'SHELL': user.pw_shell}
    env.update(item.split('=', 1) for item in shlex.split(
        service.get('Environment', '')))
    with open(_state(unit, '.log'), 'ab') as log:
        process = subprocess.Popen(
            shlex.split(service['ExecStart']), env=env, cwd='/',
            user=user.pw_uid, group=group, extra_groups=[],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
    with open(_state(unit, '.pid'), 'w') as pid_file:
        pid_file.write('%d\n' % process.pid)


def systemctl(args):
    if args[:1] == ['daemon-reload']:
        return 0
    if args[:2] == ['enable', '--now'] or args[:1] == ['start']:
        names = args[2:] if args[0] == 'enable' else args[1:]
        for name in names:
            start(_unit_name(name))
        return 0
    raise SystemExit('fake systemctl: %s is not faked' % ' '.join(args))


def journalctl(args):
    units = [_unit_name(value) for option, value
             in zip(args, args[1:], strict=False) if option == '-u']
    if not units:
        raise SystemExit('fake journalctl: only -u UNIT is faked')
    for unit in units:
        with open(_state(unit, '.log'), errors='replace') as log:
            for line in log:
                sys.stdout.write('%s: %s' % (unit[:-len('.service')], line))
    return 0


if __name__ == '__main__':
    command = {'systemctl': systemctl, 'journalctl': journalctl}
    sys.exit(command[sys.argv[1]](sys.argv[2:]))
