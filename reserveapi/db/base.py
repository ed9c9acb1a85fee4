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

"""What every database module shares: the enginefacade transactions,
the one retry policy (``retrying``), pagination and chunking.

The modules beside this one are the only code that talks SQL. Each
public function opens its own transaction, returns plain records
(``db/records.py``), never live ORM objects, and turns the database
errors its callers act on into ``reserveapi.common.exception`` types.
Writers retry lost races. ``:raises: DBError`` in a docstring means
oslo.db's ``DBError`` family: the database failed, and nothing of the
transaction was kept.
"""

import contextlib
import functools
import random
import threading
import time

from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
from oslo_log import log
import sqlalchemy as sa

from reserveapi.common import exception
from reserveapi.common import metrics
from reserveapi.db import backends

# Registers the connection failures oslo.db misses, before any engine runs.
from reserveapi.db import connection_errors  # noqa: F401
from reserveapi.db import sessions

LOG = log.getLogger(__name__)

main_context_manager = enginefacade.transaction_context()
# thread_checkin: oslo.db's sleep(0) at every connection checkin, which
# lets eventlet's green threads run; no reserveapi process runs eventlet,
# and on these machines a sleep(0) costs about 80 microseconds of wall
# time, twice per reservation.
main_context_manager.configure(sqlite_fk=True, thread_checkin=False)
main_context_manager.append_on_engine_create(backends.configure)
main_context_manager.append_on_engine_create(sessions.name_connections)
_CONTEXT = threading.local()

# Rows per statement for bulk writes: far below every backend's limit on
# bound parameters, and big enough that 100,000 nodes take few trips.
CHUNK = 1000

MAX_RETRIES = 5
"""Times a transaction that lost a race is run again before the caller
gets DatabaseBusy (a 503)."""
BACKOFF_FIRST = 0.02
BACKOFF_MAX = 0.2
"""Seconds: retry n waits a random time below ``BACKOFF_FIRST * 2**n``,
at most BACKOFF_MAX; five retries wait half a second at worst.

A lost race is a deadlock, or on Galera another node's transaction that
certified first (which surfaces as a deadlock at COMMIT). The winner has
already committed, so the loser may run again at once: the random wait
only keeps racers from colliding again in step. oslo.db's
``wrap_db_retry`` waits a full second before the first retry."""

PERSISTENT_RETRIES = 10
PERSISTENT_BACKOFF_FIRST = 0.05
PERSISTENT_BACKOFF_MAX = 1.0
"""The same waits for a write that must not be lost, stretched over a
few seconds (6.5 at worst): long enough for a database that failed over
or restarted to answer again."""

_PERSISTENT_ERRORS = (exception.DatabaseUnavailable, db_exc.DBError,
                      sa.exc.OperationalError)
"""What else a persistent write retries: the database unreachable, or
failing in any other way."""


def describe(error):
    """``OperationalError 1213: Deadlock found ...``: the database's own
    error class, number and message behind an oslo.db or SQLAlchemy
    exception, for the log (never for the client)."""
    driver_error = _driver_error(error)
    if driver_error is None:
        return None
    args = driver_error.args
    if len(args) == 2 and isinstance(args[0], int):
        text = '%d: %s' % args  # MySQL's (number, message)
    else:
        text = (str(driver_error).strip().splitlines() or [''])[0]
    return ('%s %s' % (type(driver_error).__name__, text)).strip()


def _driver_error(error):
    """The DB-API driver's own exception behind ``error`` (an oslo.db or
    SQLAlchemy exception, or ours raised from one), or None."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        driver_error = getattr(error, 'orig', None)
        if driver_error is not None:
            return driver_error
        error = (getattr(error, 'inner_exception', None)
                 or error.__cause__ or error.__context__)
    return None


def retrying(duplicates=False, persistent=False, patient=False):
    """Run the decorated transaction again when it loses a race: a
    deadlock (an AUTO-INC lock's included), a Galera certification
    failure, or SQLite's lock still held after backends.BUSY_TIMEOUT,
    each of which rolled it back (writer() turns each into
    DatabaseBusy).

    ``duplicates``: two requests for a row that does not exist yet both
    insert it (DBDuplicateEntry); the loser starts over and finds it.
    ``persistent``: a write that must not be lost (a reservation whose
    claim in Ironic failed must go) is also run again whatever else the
    database answers, for a few seconds rather than half a second.
    ``patient``: a transaction that takes its turn on one row every
    writer of its kind writes (a hold's admission) runs again after a
    lost race for those few seconds too: on Galera, writers on the other
    nodes make it lose several in a row.

    A retry is counted, and logged at DEBUG; the last failure is raised
    as it was.
    """
    retry_on = (exception.DatabaseBusy,)
    if duplicates:
        retry_on += (db_exc.DBDuplicateEntry,)
    if persistent:
        retry_on += _PERSISTENT_ERRORS
    if persistent or patient:
        retries, first, longest = (PERSISTENT_RETRIES,
                                   PERSISTENT_BACKOFF_FIRST,
                                   PERSISTENT_BACKOFF_MAX)
    else:
        retries, first, longest = MAX_RETRIES, BACKOFF_FIRST, BACKOFF_MAX

    def decorator(function):
        name = function.__qualname__

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            for attempt in range(retries + 1):
                try:
                    return function(*args, **kwargs)
                except retry_on as error:
                    if attempt == retries:
                        LOG.warning('%s %s, giving up: %s', name,
                                    _failed_times(error, attempt + 1),
                                    describe(error) or error)
                        raise
                    _count_retry(error)
                    pause = random.uniform(  # noqa: S311 (not crypto)
                        0, min(longest, first * 2 ** attempt))
                    LOG.debug('%s %s (%s); retry %d of %d in %.0f ms',
                              name, _failed_once(error),
                              describe(error) or error, attempt + 1,
                              retries, 1000 * pause)
                    time.sleep(pause)
        return wrapper
    return decorator


def _lost_race(error):
    return isinstance(error, (exception.DatabaseBusy,
                              db_exc.DBDuplicateEntry))


def _failed_once(error):
    return 'lost a race' if _lost_race(error) else 'failed'


def _failed_times(error, times):
    if _lost_race(error):
        return 'lost %d races in a row' % times
    return 'failed %d times in a row' % times


def _count_retry(error):
    """Lost races are counted, by kind (``reserveapi_database_retries``);
    a database that fails otherwise is counted where it fails."""
    if isinstance(error, exception.DatabaseBusy):
        metrics.DATABASE_RETRIES.labels(error='deadlock').inc()
    elif isinstance(error, db_exc.DBDuplicateEntry):
        metrics.DATABASE_RETRIES.labels(error='duplicate').inc()


AUTOINC_LOCK_LOST = 1467
"""MySQL's and MariaDB's ER_AUTOINC_READ_FAILED: what a deadlock (or a
lock wait timeout) on a table's AUTO-INC lock surfaces as, rather than
1213. An ``INSERT ... SELECT``, such as the one that reserves a node,
holds that lock to the end of the statement, so concurrent reservations
on MariaDB can lose a race this way; oslo.db leaves it a plain
DBError."""


def _mysql_errno(error):
    """The MySQL error number behind an oslo.db DBError or a SQLAlchemy
    DBAPIError (the reserving statement reaches us as the latter), or
    None."""
    args = getattr(_driver_error(error), 'args', ())
    return args[0] if args and isinstance(args[0], int) else None


@contextlib.contextmanager
def _unavailable_as_503(transaction):
    """A lost or refused connection is ``DatabaseUnavailable``, a
    deadlock that outlived its retries ``DatabaseBusy``: the transaction
    did not commit, so the caller may simply retry. Both carry the
    database's error (``describe``) as ``cause`` and where the database
    is as ``server``, for the log.
    """
    try:
        with transaction as session:
            yield session
    except db_exc.DBNonExistentDatabase as exc:
        raise exception.NoDatabase(cause=describe(exc),
                                   server=server()) from exc
    except db_exc.DBConnectionError as exc:
        metrics.DATABASE_CONNECTION_ERRORS.inc()
        raise exception.DatabaseUnavailable(
            cause=describe(exc), server=server()) from exc
    except db_exc.DBDeadlock as exc:
        metrics.DATABASE_DEADLOCKS.inc()
        raise exception.DatabaseBusy(
            cause=describe(exc), server=server()) from exc
    except (db_exc.DBError, sa.exc.DBAPIError) as exc:
        if _mysql_errno(exc) != AUTOINC_LOCK_LOST:
            raise
        metrics.DATABASE_DEADLOCKS.inc()
        raise exception.DatabaseBusy(
            cause=describe(exc), server=server()) from exc


_DEFAULT_PORTS = {'postgresql': 5432, 'mysql': 3306}


def server():
    """``postgresql 127.0.0.1:5432``: the database's kind and address,
    never its credentials, for the log; None before the engine exists.
    """
    try:
        url = main_context_manager.writer.get_engine().url
    except Exception:  # no engine: nothing to name
        return None
    backend = url.get_backend_name()
    if not url.host:
        return '%s %s' % (backend, url.database or 'in memory')
    return '%s %s:%s' % (backend, url.host,
                         url.port or _DEFAULT_PORTS.get(backend, '?'))


def reader():
    """A read transaction, joined by any reader already open here.

    :raises: DatabaseUnavailable, DatabaseBusy
    """
    return _unavailable_as_503(main_context_manager.reader.using(_CONTEXT))


@contextlib.contextmanager
def writer():
    """A write transaction, committed when the block ends; on SQLite it
    takes the write lock first (``backends``).

    :raises: DatabaseUnavailable, DatabaseBusy
    """
    with backends.writing(), _unavailable_as_503(
            main_context_manager.writer.using(_CONTEXT)) as session:
        yield session


_PSYCOPG2_IDLE = 0
"""psycopg2's TRANSACTION_STATUS_IDLE: connected, no transaction open."""


@contextlib.contextmanager
def one_statement(session):
    """The session's connection, for a block that runs one statement.

    On PostgreSQL the statement runs in autocommit, as its own
    transaction (as atomic as it was): psycopg2 then sends no BEGIN
    before it and no ROLLBACK or COMMIT after it, two round trips of the
    four such a transaction took. psycopg2 keeps the switch on the
    client, so it costs no round trip either, where SQLAlchemy's
    AUTOCOMMIT isolation level sends a SET before and after. Elsewhere,
    or once the connection has a transaction open, nothing changes.
    """
    connection = session.connection()
    driver = connection.connection.driver_connection
    if (connection.dialect.name != 'postgresql' or driver.autocommit
            or driver.get_transaction_status() != _PSYCOPG2_IDLE):
        yield connection
        return
    driver.autocommit = True
    try:
        yield connection
    finally:
        # A connection the statement lost is closed: nothing to restore.
        if not driver.closed:
            driver.autocommit = False


def get_engine():
    return main_context_manager.writer.get_engine()


def chunks(items, size=CHUNK):
    """``items`` (a sequence) in slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def paginate(session, query, model, limit, sort_key, sort_dir, marker):
    """``query`` ordered by ``(sort_key, id)``, starting after the row
    whose uuid is ``marker``.

    The marker must be a row of this very listing: a row the filters
    exclude (another project's reservation, say) is as unknown as one
    that does not exist, so a marker never tells that a row exists.
    NULL sorts after every value (before, with desc: desc is asc
    reversed) on every backend. oslo.db's paginate_query leaves NULL order
    to the backend and skips rows when the marker's sort key is NULL.

    :raises: Invalid if the listing has no row with the uuid ``marker``.
    """
    column = getattr(model, sort_key)
    nullable = model.__table__.c[sort_key].nullable
    ascending = sort_dir == 'asc'
    direction = sa.asc if ascending else sa.desc
    order = [direction(column), direction(model.id)]
    if nullable:
        order.insert(0, direction(sa.case((column.is_(None), 1), else_=0)))
    if marker is not None:
        row = session.execute(query.with_only_columns(
            model.id, column, maintain_column_froms=True).where(
            model.uuid == marker)).first()
        if row is None:
            raise exception.Invalid(
                reason='marker %s is not in this list.' % marker)
        query = query.where(_after(model, column, nullable, ascending,
                                   row.id, row[1]))
    query = query.order_by(*order)
    return query.limit(limit) if limit is not None else query


def _after(model, column, nullable, ascending, marker_id, value):
    """The clause that keeps the rows sorting after the marker's row."""

    def after(attribute, bound):
        return attribute > bound if ascending else attribute < bound

    if value is None:
        later = sa.and_(column.is_(None), after(model.id, marker_id))
        if not ascending:
            later = sa.or_(later, column.is_not(None))
        return later
    later = sa.or_(after(column, value), sa.and_(
        column == value, after(model.id, marker_id)))
    if nullable and ascending:
        later = sa.or_(later, column.is_(None))
    return later
