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
import functools
import hashlib
import threading

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from reserveapi.common import exception

# Registers the connection failures oslo.db misses, before any engine runs.
from reserveapi.db import connection_errors  # noqa: F401

main_context_manager = enginefacade.transaction_context()
main_context_manager.configure(sqlite_fk=True)
_CONTEXT = threading.local()

# The statements a PostgreSQL connection has prepared (execute_prepared),
# kept in the pool's info of that connection: a new connection starts
# with none.
_PREPARED = 'reserveapi_prepared'

# Rows per statement for bulk writes: far below every backend's limit on
# bound parameters, and big enough that 100,000 nodes take few trips.
CHUNK = 1000

retry_on_deadlock = oslo_db_api.wrap_db_retry(max_retries=5,
                                              retry_on_deadlock=True)

# Two requests for a row that does not exist yet both insert it; the
# loser starts over and finds it.
retry_on_duplicate = oslo_db_api.wrap_db_retry(
    max_retries=5, retry_on_deadlock=True,
    exception_checker=lambda exc: isinstance(exc, db_exc.DBDuplicateEntry))


@contextlib.contextmanager
def _unavailable_as_503(transaction):
    """A lost or refused connection is ``DatabaseUnavailable``: the
    transaction did not commit, so the caller may simply retry.
    """
    try:
        with transaction as session:
            yield session
    except db_exc.DBConnectionError as exc:
        raise exception.DatabaseUnavailable() from exc


def reader():
    """A read transaction, joined by any reader already open here.

    :raises: DatabaseUnavailable
    """
    return _unavailable_as_503(main_context_manager.reader.using(_CONTEXT))


def writer():
    """A write transaction, committed when the block ends.

    :raises: DatabaseUnavailable
    """
    return _unavailable_as_503(main_context_manager.writer.using(_CONTEXT))


def get_engine():
    return main_context_manager.writer.get_engine()


def _generic_plans(engine):
    """On PostgreSQL, have every connection plan its prepared statements
    once (execute_prepared): planning the candidate query costs several
    times what running it does, and PostgreSQL would go on planning it
    for each execution, judging a plan per value cheaper. The plan is
    the same index walk whatever the values. Only statements prepared
    by execute_prepared are concerned: nothing else is prepared.
    """
    if engine.dialect.name != 'postgresql':
        return

    @sa.event.listens_for(engine, 'connect')
    def plan_once(dbapi_connection, _record):
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute('SET plan_cache_mode = force_generic_plan')
        finally:
            cursor.close()
        dbapi_connection.commit()


main_context_manager.append_on_engine_create(_generic_plans)


@functools.lru_cache(maxsize=256)
def _prepared_form(statement):
    """``(name, PREPARE statement, parameter names in $n order, compiled
    form)`` of a statement built once (a cached statement object is its
    key); None when it has IN lists, whose length changes the SQL.

    Parameters are typed as their columns are: PostgreSQL would take one
    it cannot infer (a value INSERTed from a SELECT list) for text.
    """
    dialect = postgresql.dialect(paramstyle='numeric_dollar')
    compiled = statement.compile(dialect=dialect)
    if compiled.post_compile_params:
        return None
    names = tuple(compiled.positiontup)
    types = ['unknown' if isinstance(bind.type, sa.types.NullType)
             else dialect.type_compiler_instance.process(bind.type)
             for bind in (compiled.binds[key] for key in names)]
    text = compiled.string
    name = 'reserveapi_%s' % hashlib.sha256(text.encode()).hexdigest()[:16]
    prepare = 'PREPARE %s (%s) AS %s' % (name, ', '.join(types), text)
    return name, prepare, names, compiled


def execute_prepared(connection, statement, params):
    """The result of ``statement``, built once, executed with ``params``
    on the Core ``connection``; on PostgreSQL through psycopg2, as a
    statement the connection prepared once and plans once (see
    _generic_plans): psycopg2 never prepares by itself. Elsewhere an
    ordinary execution, as for a statement with an IN list.
    """
    dialect = connection.dialect
    form = (_prepared_form(statement) if dialect.name == 'postgresql'
            and dialect.driver == 'psycopg2' else None)
    if form is None:
        return connection.execute(statement, params)
    name, prepare, names, compiled = form
    prepared = connection.connection.info.setdefault(_PREPARED, set())
    if name not in prepared:
        # Not transactional: the statement outlives a rollback.
        connection.exec_driver_sql(prepare)
        prepared.add(name)
    # The statement's own constants are parameters too.
    values = compiled.construct_params(params)
    placeholders = ', '.join(['%s'] * len(names))
    return connection.exec_driver_sql(
        'EXECUTE %s (%s)' % (name, placeholders),
        tuple(values[key] for key in names))


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
