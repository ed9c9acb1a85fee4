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
the retry decorators, pagination and chunking.

The modules beside this one are the only code that talks SQL. Each
public function opens its own transaction, returns plain records
(``db/records.py``), never live ORM objects, and turns the database
errors its callers act on into ``reserveapi.common.exception`` types.
Writers retry deadlocks. ``:raises: DBError`` in a docstring means
oslo.db's ``DBError`` family: the database failed, and nothing of the
transaction was kept.
"""

import contextlib
import threading

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa

from reserveapi.common import exception
from reserveapi.db import backends

# Registers the connection failures oslo.db misses, before any engine runs.
from reserveapi.db import connection_errors  # noqa: F401

main_context_manager = enginefacade.transaction_context()
main_context_manager.configure(sqlite_fk=True)
main_context_manager.append_on_engine_create(backends.configure)
_CONTEXT = threading.local()

# Rows per statement for bulk writes: far below every backend's limit on
# bound parameters, and big enough that 100,000 nodes take few trips.
CHUNK = 1000

# A deadlock (or SQLite's lock still held after backends.BUSY_TIMEOUT)
# rolled the transaction back; it is run again from the start.
retry_on_deadlock = oslo_db_api.wrap_db_retry(
    max_retries=5, retry_on_deadlock=True,
    exception_checker=lambda exc: isinstance(exc, exception.DatabaseBusy))

# Two requests for a row that does not exist yet both insert it; the
# loser starts over and finds it.
retry_on_duplicate = oslo_db_api.wrap_db_retry(
    max_retries=5, retry_on_deadlock=True,
    exception_checker=lambda exc: isinstance(
        exc, (db_exc.DBDuplicateEntry, exception.DatabaseBusy)))


# A write another writer got in the way of: a deadlock or SQLite's lock
# (DatabaseBusy, see writer()), or the duplicate insert of a row it just
# made; run again from the start after a short, growing wait.
retry_on_busy = oslo_db_api.wrap_db_retry(
    max_retries=5, retry_interval=0.05, inc_retry_interval=True,
    exception_checker=lambda exc: isinstance(
        exc, (exception.DatabaseBusy, db_exc.DBDuplicateEntry)))


@contextlib.contextmanager
def _unavailable_as_503(transaction):
    """A lost or refused connection is ``DatabaseUnavailable``, a
    deadlock that outlived its retries ``DatabaseBusy``: the transaction
    did not commit, so the caller may simply retry.
    """
    try:
        with transaction as session:
            yield session
    except db_exc.DBConnectionError as exc:
        raise exception.DatabaseUnavailable() from exc
    except db_exc.DBDeadlock as exc:
        raise exception.DatabaseBusy() from exc


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
