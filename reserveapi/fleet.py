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

"""The versions serving one database: each process's heartbeat, and
whether the schema's next step may run.

During a rolling upgrade two versions serve the same database. Every
API worker and every ``reserveapi-worker`` records itself in
``services`` (kind, host, pid, version, the newest schema revision its
code knows) and renews the row every ``[DEFAULT]
service_heartbeat_interval`` seconds; a row not renewed for three
intervals counts as gone, so a killed process drops out by itself and a
stopped one removes its row at once. ``reserveapi-dbsync contract`` and
``reserveapi-status upgrade check`` read them, beside the database's own
list of sessions (``connected``): every process names its connections
(``reserveapi.db.sessions``), so one that records no heartbeat is seen
too, and a session that names no process at all (version 1.0.0 names
none) is reported as unknown.
"""

import atexit
import dataclasses
import os
import socket
import threading

from oslo_log import log
from oslo_utils import timeutils

from reserveapi import version
from reserveapi.common import heartbeat
from reserveapi.common import outages
import reserveapi.conf
from reserveapi.db import migration
from reserveapi.db import records
from reserveapi.db import services as db_services
from reserveapi.db import sessions as db_sessions

LOG = log.getLogger(__name__)
CONF = reserveapi.conf.CONF

MISSED_BEATS = 3
"""Intervals without a heartbeat after which a process counts as gone."""

STOP_WAIT = 5
"""Seconds a stopping process waits for a heartbeat under way."""

NAMED_SINCE = '1.1'
"""The first version series whose processes name their connections."""

LISTED = 5
"""Unknown sessions a message lists one by one; it counts the rest."""


class Heartbeat:
    """This process's row in ``services``, renewed by a daemon thread.

    Started once per process (a gunicorn worker forked from a master
    that started one starts its own); a heartbeat that cannot reach the
    database tries again at the next interval: the process serves on.
    """

    def __init__(self, kind):
        self.kind = kind
        self.pid = os.getpid()
        self.holder = heartbeat.holder().rpartition(':')[0]
        self.started_at = timeutils.utcnow()
        # What this code needs does not change while it runs: the
        # migration scripts are read once, not at every beat.
        self.schema_head = migration.needed()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, daemon=True, name='service-heartbeat')

    def beat(self):
        interval = CONF.service_heartbeat_interval
        db_services.beat(
            self.holder, self.kind, socket.gethostname(), self.pid,
            version.version_string(), self.schema_head, self.started_at,
            interval * MISSED_BEATS)

    def _run(self):
        while True:
            try:
                self.beat()
            except Exception as exc:  # the service must serve on
                if outages.peer(exc) == 'other':  # a bug
                    LOG.exception('Could not record this process\'s '
                                  'heartbeat')
                else:  # the database's outage, which its users log
                    LOG.debug('Could not record this process\'s heartbeat: '
                              '%s', outages.cause(exc)[1])
            if self._stop.wait(CONF.service_heartbeat_interval):
                return

    def start(self):
        self._thread.start()
        atexit.register(self.stop)
        return self

    def stop(self):
        """Stop beating and remove the row: the process is gone now."""
        if self._stop.is_set():
            return
        self._stop.set()
        # A beat under way would write the row again after its removal.
        if self._thread.is_alive():
            self._thread.join(STOP_WAIT)
        try:
            db_services.remove(self.holder)
        except Exception:  # the row expires by itself
            LOG.debug('Could not remove this process\'s heartbeat',
                      exc_info=True)


_heartbeat = None
_heartbeat_lock = threading.Lock()


def start_heartbeat(kind):
    """This process's heartbeat (``kind``: ``api`` or ``worker``), and
    that of every process forked from it (a gunicorn worker of a
    ``--preload`` master); 0 seconds turns it off."""
    global _heartbeat
    db_sessions.set_kind(kind)
    if not CONF.service_heartbeat_interval:
        return None
    with _heartbeat_lock:
        if _heartbeat is None:
            os.register_at_fork(
                after_in_child=lambda: _restart_in_child(kind))
        if _heartbeat is None or _heartbeat.pid != os.getpid():
            _heartbeat = Heartbeat(kind).start()
        return _heartbeat


def _restart_in_child(kind):
    """A forked child has no thread of its parent's: a heartbeat of its
    own, under its own name."""
    global _heartbeat, _heartbeat_lock
    _heartbeat_lock = threading.Lock()
    _heartbeat = Heartbeat(kind).start()


def stop_heartbeat():
    """This process is stopping: its row goes now."""
    if _heartbeat is not None and _heartbeat.pid == os.getpid():
        _heartbeat.stop()


def _series(text):
    """(major, minor): the versions a rolling upgrade steps between."""
    return version.version_tuple(text)[:2]


def older_than_this(processes):
    """The live processes of a version series before this code's."""
    mine = version.version_tuple()[:2]
    return [process for process in processes
            if _series(process.version) < mine]


def newer_than_schema(processes, applied):
    """The live processes whose code needs a schema revision the
    database has not reached: they run on a schema behind their code."""
    revisions = {migration.revision for migration in applied}
    return [process for process in processes
            if process.schema_head is not None
            and process.schema_head not in revisions]


def blocking_contract(processes, pending):
    """The live processes that a pending contract migration would break:
    of a version series before the oldest it allows (``oldest_version``
    names a series, ``1.1``: its development builds count as it)."""
    oldest = [m.oldest_version for m in pending if m.oldest_version]
    if not oldest:
        return []
    floor = max(_series(text) for text in oldest)
    return [process for process in processes
            if _series(process.version) < floor]


def describe(processes, pids=False):
    """``2 api on ctl-1, 1 worker on ctl-2 (version 1.0.0)`` and so on;
    with ``pids``, ``api pid 7 on ctl-1, ...``: one by one, to be found.
    """
    by_version = {}
    for process in processes:
        by_version.setdefault(process.version, []).append(process)
    parts = []
    for text, group in sorted(by_version.items(),
                              key=lambda item: version.version_tuple(
                                  item[0])):
        if pids:
            listed = ', '.join(
                '%s pid %d on %s' % (process.kind, process.pid, process.host)
                for process in sorted(group, key=lambda process: (
                    process.host, process.kind, process.pid)))
        else:
            counts = {}
            for process in group:
                key = (process.kind, process.host)
                counts[key] = counts.get(key, 0) + 1
            listed = ', '.join(
                '%d %s on %s' % (count, kind, host)
                for (kind, host), count in sorted(counts.items()))
        parts.append('%s (version %s)' % (listed, text))
    return '; '.join(parts)


@dataclasses.dataclass(frozen=True)
class Connected:
    """What serves the database: ``processes``, those with a live
    heartbeat and then ``unheard``, those known only by their
    connections' names; ``unknown``, the sessions that name no process
    (SessionRecords), and ``unnamed``, why the server could not say
    names (then every session is unknown), or None."""

    processes: list
    unheard: list
    unknown: list
    unnamed: str | None


def connected():
    """The live heartbeats, against the database's own sessions. A
    session another program named (psql, pg_dump) is none of ours and
    left out; this process's own are never listed.

    :raises: DatabaseUnavailable, DatabaseBusy
    """
    processes = live_processes()
    found, unnamed = db_services.sessions()
    unheard, unknown = {}, []
    for session in found:
        if not session.name:
            unknown.append(session)
            continue
        named = db_sessions.parse(session.name)
        if named is None or any(
                process.pid == named.pid
                and process.host.startswith(named.host)
                for process in processes):
            continue
        unheard.setdefault((named.host, named.pid), records.ServiceRecord(
            kind=named.kind, host=named.host, pid=named.pid,
            version=named.version, schema_head=None, started_at=None,
            seen_at=None))
    unheard = sorted(unheard.values(),
                     key=lambda process: (process.host, process.pid))
    return Connected(processes + unheard, unheard, unknown, unnamed)


def describe_unknown(connected_):
    """The sentence that reports ``connected_.unknown``, or ''."""
    unknown = connected_.unknown
    if not unknown:
        return ''
    listed = ', '.join(
        '%s (%s%s)' % (session.client or 'a client hidden from this '
                       'database user',
                       'client pid %d, ' % session.client_pid
                       if session.client_pid else '', session.label)
        for session in unknown[:LISTED])
    if len(unknown) > LISTED:
        listed += ' and %d more' % (len(unknown) - LISTED)
    if connected_.unnamed:
        return ('The server\'s %s, so its %d other sessions on this '
                'database cannot be told apart: %s. A process of a version '
                'before %s names no connection and records no heartbeat: '
                'it would be among them, unseen. Turn performance_schema '
                'on in the server\'s configuration (a restart) to tell '
                'them apart.' % (connected_.unnamed, len(unknown), listed,
                                 NAMED_SINCE))
    return ('%d sessions on this database name no process: %s. Each is a '
            'process of a version before %s (which names none), or a '
            'program that does not name its connections.'
            % (len(unknown), listed, NAMED_SINCE))


def live_processes():
    """Every process whose heartbeat has not expired.

    :raises: DatabaseUnavailable, DatabaseBusy
    """
    return db_services.live()
