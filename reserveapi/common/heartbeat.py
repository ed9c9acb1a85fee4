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

"""The heartbeat that keeps a lease alive while its holder works, and
the holder's name: leases in the database die with their process.

A lease (the inventory sync's, a claim being cleared in Ironic) is short
and kept alive by a heartbeat thread while its holder works: a process
that is killed stops renewing it, and another takes over within
``SECONDS``, not after the longest a job could ever take. The SQL that
takes, renews and drops a lease is ``reserveapi.db.leases``.
"""

import os
import socket
import threading
import time

from oslo_log import log
from oslo_utils import uuidutils

LOG = log.getLogger(__name__)

SECONDS = 10
"""How long a lease lasts without being renewed."""

HEARTBEAT = 3
"""Seconds between two renewals while the holder works."""

_process = None
_process_pid = None


def holder():
    """The calling thread's name in lease rows: host, process id, a
    random part (a forked child, such as a gunicorn worker, gets its
    own), thread. Two threads of one process never share a lease."""
    global _process, _process_pid
    if _process_pid != os.getpid():
        _process_pid = os.getpid()
        _process = '%s:%d:%s' % (socket.gethostname(), _process_pid,
                                 uuidutils.generate_uuid()[:8])
    return '%s:%d' % (_process, threading.get_ident())


class Heartbeat:
    """Renews a lease of ``seconds`` every ``HEARTBEAT`` seconds (or a
    third of ``seconds``, if shorter) while the ``with`` block runs.

    ``renew`` returns False once the lease is no longer ours (another
    process took it over). ``held()`` says whether the lease is surely
    still ours: never lost, and renewed less than ``seconds`` less one
    interval ago; a holder checks it before each step another holder
    must not repeat.
    """

    def __init__(self, renew, seconds=None, name='lease'):
        self._renew = renew
        self._seconds = seconds
        self._stop = threading.Event()
        self._lost = False
        self._renewed = time.monotonic()
        self._thread = threading.Thread(target=self._beat, daemon=True,
                                        name='heartbeat-%s' % name)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()

    def _times(self):
        """(lease length, interval), read when used: tests shorten them."""
        seconds = self._seconds or SECONDS
        return seconds, min(HEARTBEAT, seconds / 3)

    def held(self):
        seconds, interval = self._times()
        return (not self._lost and time.monotonic() - self._renewed
                < seconds - interval)

    def _beat(self):
        while not self._stop.wait(self._times()[1]):
            try:
                renewed = self._renew()
            except Exception:  # a database blip: the next beat tries again
                LOG.debug('Could not renew a lease', exc_info=True)
                continue
            if not renewed:
                self._lost = True
                return
            self._renewed = time.monotonic()
