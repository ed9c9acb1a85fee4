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

"""Failures that last, logged for on-call: one line when they begin,
saying what failed and where, at most one a minute while they last, one
when they end.

A job that runs every ten seconds, or a load balancer polling the
healthcheck every two, would otherwise log the same failure, with its
traceback, hundreds of times a minute, and the cause would be lost in
the noise. Here a failure is described in one line (``cause``: the peer,
its address, the error's class and message), tracebacks go to DEBUG, and
``OutageLog`` keeps, per subject (a job, a route), the failure under
way.
"""

import re
import threading
import time

from reserveapi.common import exception

REPEAT_SECONDS = 60
"""A failure that lasts is logged again at most this often."""

MESSAGE_LENGTH = 300
"""Characters of an error's message kept in a log line."""

_ADDRESS = re.compile(r'\b[a-z][a-z0-9+]*://(?:[^@/\s]*@)?([^/\s?:]+(?::\d+)?)')
"""The host (and port) of the first URL in a peer's error message."""

# Our exception -> the peer that failed.
_PEERS = ((exception.DatabaseUnavailable, 'database'),
          (exception.DatabaseBusy, 'database'),
          (exception.DatabaseUnhealthy, 'database'),
          (exception.IronicUnavailable, 'ironic'),
          (exception.ClaimNotCleared, 'ironic'),
          (exception.PlacementError, 'placement'),
          (exception.HostHasNoProvider, 'placement'),
          (exception.NovaError, 'nova'))
_DATABASE_ERRORS = ('DBError', 'DBAPIError')
_SAY_WHAT_TO_DO = (exception.NoSchema, exception.NoDatabase)
"""Failures whose message says what the operator must do, which the
line adds."""
PEERS = ('database', 'ironic', 'placement', 'nova', 'other')
"""Every value ``peer`` answers."""


def peer(error):
    """The peer ``error`` says failed: database, ironic, placement, nova,
    or other (a bounded label value)."""
    for kind, name in _PEERS:
        if isinstance(error, kind):
            return name
    if any(cls.__name__ in _DATABASE_ERRORS for cls in type(error).__mro__):
        return 'database'
    return 'other'


def _innermost(error):
    """The first exception in ``error``'s chain, where it began."""
    seen = set()
    while id(error) not in seen:
        seen.add(id(error))
        inner = error.__cause__ or error.__context__
        if inner is None:
            break
        error = inner
    return error


def _one_line(text):
    text = ' '.join(str(text).split())
    if len(text) > MESSAGE_LENGTH:
        text = text[:MESSAGE_LENGTH - 3] + '...'
    return text


def cause(error):
    """``(key, text)``: what failed, in one line, and a key that is the
    same for every failure of one outage (the peer, its address, the
    error's class) whatever the message says.

    ``database postgresql 127.0.0.1:5432: OperationalError: connection to
    server ... refused``; ``ironic 10.0.0.5:6385: ConnectFailure: Unable
    to establish connection ...``.
    """
    name = peer(error)
    # A peer's reason, without "Ironic is unavailable: " before it.
    detail = (getattr(error, 'kwargs', {}).get('reason')
              or getattr(error, 'detail', None) or str(error))
    if name == 'other':
        error_class, where = type(error).__name__, None
        text = '%s: %s' % (error_class, _one_line(detail))
        return (name, where, error_class), text
    if name == 'database':
        where = getattr(error, 'kwargs', {}).get('server')
        # ``cause``: the driver's error class and message (db.base).
        described = getattr(error, 'cause', None)
        if described:
            error_class, _space, detail = described.partition(' ')
        else:
            error_class = type(_innermost(error)).__name__
    else:
        found = _ADDRESS.search(detail)
        where = found.group(1) if found else None
        error_class = type(_innermost(error)).__name__
    text = '%s%s: %s: %s' % (name, ' ' + where if where else '',
                             error_class, _one_line(detail))
    if isinstance(error, _SAY_WHAT_TO_DO):
        text += ': ' + str(error)
    return (name, where, error_class), text


def log_failure(logger, what, error):
    """``what`` (words) failed with ``error``, once: a peer's failure (the
    database's connection lost under a job, Ironic down) is one WARNING
    line naming the peer, its traceback at DEBUG; anything else can only
    be a bug of ours, and is logged at ERROR with its traceback."""
    if peer(error) == 'other':
        logger.error('%s', what, exc_info=error)
        return
    logger.warning('%s: %s', what, cause(error)[1])
    logger.debug('%s', what, exc_info=error)


def _duration(seconds):
    if seconds < 90:
        return '%d s' % seconds
    return '%d min' % round(seconds / 60)


class _Failure:

    def __init__(self, key, text, now):
        self.key = key
        self.text = text
        self.since = now
        self.logged = now
        self.count = 1


class OutageLog:
    """Logs the failures of subjects (``what % subject`` names one, e.g.
    ``Job %s``): a WARNING when one starts failing or fails for another
    cause, again at most every ``REPEAT_SECONDS`` while it lasts, and an
    INFO once it succeeds again. Thread-safe.
    """

    def __init__(self, logger, what, repeat=REPEAT_SECONDS,
                 clock=time.monotonic):
        self._log = logger
        self._what = what
        self._repeat = repeat
        self._clock = clock
        self._lock = threading.Lock()
        self._failing = {}

    def failed(self, subject, error):
        """``subject`` failed with ``error``; its traceback goes to DEBUG.
        """
        key, text = cause(error)
        name = self._what % subject
        now = self._clock()
        with self._lock:
            failure = self._failing.get(subject)
            if failure is None or failure.key != key:
                self._failing[subject] = _Failure(key, text, now)
                message, args = '%s failed: %s', (name, text)
            else:
                failure.count += 1
                failure.text = text
                if now - failure.logged < self._repeat:
                    message = None
                else:
                    failure.logged = now
                    message, args = (
                        '%s still failing after %s (%d failures): %s',
                        (name, _duration(now - failure.since),
                         failure.count, text))
        if message is not None:
            self._log.warning(message, *args)
        self._log.debug('%s failed', name, exc_info=error)

    @property
    def active(self):
        """Whether any subject is failing: a check cheap enough for every
        request."""
        return bool(self._failing)

    def succeeded(self, subject):
        """``subject`` worked: the end of its failure, if it had one."""
        if not self._failing:
            return
        with self._lock:
            failure = self._failing.pop(subject, None)
        if failure is not None:
            self._log.info('%s works again after %s (%d failures); it '
                           'failed with %s', self._what % subject,
                           _duration(self._clock() - failure.since),
                           failure.count, failure.text)
