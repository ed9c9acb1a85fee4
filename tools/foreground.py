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

"""Run a command as the terminal's foreground job, alone, so that Ctrl-C
stops the command and nothing else; exit with its status::

    python -m tools.foreground reserveapi-api --config-file F

``tox -e demo`` serves this way. A terminal's Ctrl-C interrupts its
whole foreground process group: tox as well as the server. tox then
tears the environment down, and unless the server's exit reached it
first it reports the environment as skipped and the run as failed
("demo: SKIP", "evaluation failed :("). In a process group of its own
that the terminal sends Ctrl-C to, the server exits 0 and tox sees a
command that ended well.

Without a controlling terminal (CI, a pipe) the command just runs.
"""

import os
import signal
import subprocess
import sys

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _terminal():
    """A descriptor of the controlling terminal, if this process is in
    its foreground process group; else None."""
    try:
        descriptor = os.open('/dev/tty', os.O_RDWR)
    except OSError:
        return None
    try:
        if os.tcgetpgrp(descriptor) == os.getpgrp():
            return descriptor
    except OSError:
        pass
    os.close(descriptor)
    return None


def _hand_over(terminal, group):
    """Make ``group`` the terminal's foreground process group; from a
    background group that takes ignoring SIGTTOU."""
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(terminal, group)
    finally:
        signal.signal(signal.SIGTTOU, previous)


def run(command):
    terminal = _terminal()
    if terminal is None:
        return subprocess.call(command)
    ours = os.getpgrp()
    child = subprocess.Popen(command, preexec_fn=os.setpgrp)
    for number in FORWARDED:
        # A signal for us (tox stopping the run) is passed on.
        signal.signal(number, lambda signum, frame: os.killpg(
            child.pid, signum))
    try:
        _hand_over(terminal, child.pid)
        return child.wait()
    finally:
        _hand_over(terminal, ours)
        os.close(terminal)


if __name__ == '__main__':
    sys.exit(run(sys.argv[1:]))
