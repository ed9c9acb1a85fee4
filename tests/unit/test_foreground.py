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

"""tools/foreground.py in a terminal of its own: Ctrl-C stops the command
and not the process that started it, as tox -e demo needs."""

import os
import pathlib
import pty
import select
import sys
import time

from oslotest import base

ROOT = pathlib.Path(__file__).resolve().parents[2]

SERVER = '''
import signal, sys, time
signal.signal(signal.SIGINT, lambda *args: sys.exit(0))
print('ready', flush=True)
time.sleep(60)
sys.exit(1)
'''

TOX = '''
import signal, subprocess, sys
interrupted = []
signal.signal(signal.SIGINT, lambda *args: interrupted.append(True))
command = [sys.executable, '-c', sys.argv[2]]
if sys.argv[1] == 'foreground':
    command = [sys.executable, '-m', 'tools.foreground'] + command
code = subprocess.call(command)
print('exit %d, interrupted %s' % (code, bool(interrupted)), flush=True)
'''
"""A stand-in for tox: runs the server, says whether Ctrl-C reached it."""


def in_a_terminal(how):
    """Run the stand-in for tox in a new terminal, type Ctrl-C once the
    server is ready; what the terminal showed."""
    pid, terminal = pty.fork()
    if pid == 0:
        os.chdir(ROOT)
        os.execv(sys.executable,  # noqa: S606 - our own interpreter
                 [sys.executable, '-c', TOX, how, SERVER])
    shown = b''
    deadline = time.monotonic() + 60
    typed = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([terminal], [], [], 1)
        if ready:
            try:
                chunk = os.read(terminal, 1024)
            except OSError:  # the terminal closed: all is shown
                break
            if not chunk:
                break
            shown += chunk
        if not typed and b'ready' in shown:
            os.write(terminal, b'\x03')
            typed = True
    os.waitpid(pid, 0)
    os.close(terminal)
    return shown.decode(errors='replace')


class TestForeground(base.BaseTestCase):

    def test_ctrl_c_stops_the_command_alone(self):
        self.assertIn('exit 0, interrupted False', in_a_terminal(
            'foreground'))

    def test_without_it_ctrl_c_reaches_the_caller_too(self):
        self.assertIn('exit 0, interrupted True', in_a_terminal('direct'))
