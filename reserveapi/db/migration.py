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

"""Alembic driver behind reserveapi-dbsync: one chain of migrations, each
of one phase.

Every migration after version 1.0.0's schema declares ``phase``:
``expand`` only adds (tables, nullable columns, indexes, triggers that
keep an old and a new representation in step), so that the version
before keeps working on the expanded schema; ``contract`` only removes,
and declares ``oldest_version``, the oldest version series (``1.1``)
that may still run once it is applied. The migrations up to 1.0.0's
schema predate the rule: they are ``offline``, run only by ``upgrade``
with the services stopped (or on an empty database). One linear chain,
not alembic branches, so that a version reads the revision of a
database that a newer version expanded as one revision it does not
know, not as two heads it cannot read at all.

``expand`` runs the pending migrations up to the first contract one;
``contract`` the rest. Each migration commits on its own, and waits for
a table's lock at most ``LOCK_TIMEOUT`` seconds at a time (retried): a
migration queued behind a long transaction does not make every request
of the serving version queue behind it.
"""

import dataclasses
import time

from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
from alembic import util as alembic_util
from oslo_db import exception as db_exc
from oslo_log import log

from reserveapi.common import exception
from reserveapi.db import backends
from reserveapi.db import base as db_base

LOG = log.getLogger(__name__)

EXPAND, CONTRACT, OFFLINE = 'expand', 'contract', 'offline'

BASELINE = '0010_trait_triggers_by_index'
"""The schema of version 1.0.0, the oldest an online upgrade starts
from."""

LOCK_TIMEOUT = 5
"""Seconds a migration's statement waits for a lock before it gives up
and the migration is tried again."""
LOCK_RETRIES = 12

_LOCK_TIMEOUT_SQL = {
    'postgresql': "SET lock_timeout = '%ds'",
    'mysql': 'SET SESSION lock_wait_timeout = %d',
}
_LOCK_TIMEOUT_CODES = {'55P03', 1205}


@dataclasses.dataclass(frozen=True)
class Migration:
    """One migration script and the rules it declares."""

    revision: str
    phase: str
    doc: str
    oldest_version: str = None
    privileges: tuple = ()


def _alembic_config(connection=None):
    config = alembic_config.Config()
    config.set_main_option('script_location', 'reserveapi.db:migrations')
    config.attributes['connection'] = connection
    return config


def _scripts():
    return alembic_script.ScriptDirectory.from_config(_alembic_config())


def migrations():
    """Every migration, oldest first."""
    found = []
    for script in reversed(list(_scripts().walk_revisions())):
        module = script.module
        found.append(Migration(
            revision=script.revision,
            phase=getattr(module, 'phase', OFFLINE),
            doc=(script.doc or '').strip(),
            oldest_version=getattr(module, 'oldest_version', None),
            privileges=tuple(getattr(module, 'privileges', ()))))
    return found


def _current(connection):
    return alembic_migration.MigrationContext.configure(
        connection).get_current_revision()


def current(engine=None):
    """The revision the database is at, or None for an empty database
    (an SQLite file that does not exist is one).

    :raises: DatabaseUnavailable when the database cannot be read.
    """
    engine = engine or db_base.get_engine()
    try:
        with engine.connect() as connection:
            return _current(connection)
    except exception.NoSchema:
        return None
    except db_exc.DBNonExistentDatabase as exc:
        raise exception.NoDatabase(cause=db_base.describe(exc),
                                   server=db_base.server()) from exc
    except db_exc.DBError as exc:
        raise exception.DatabaseUnavailable(
            'Cannot read the database: %s' % (db_base.describe(exc) or exc)
        ) from exc


def head():
    """The newest revision this code's migrations know."""
    return _scripts().get_current_head()


def needed():
    """The newest revision this code needs the database to have reached:
    its head, less the contract migrations that end the chain. Those only
    remove what older versions read, so this code serves before them,
    beside the version they wait for."""
    every = migrations()
    while len(every) > 1 and every[-1].phase == CONTRACT:
        every.pop()
    return every[-1].revision


def knows(revision):
    """Whether ``revision`` is one of this code's migrations."""
    return revision is None or any(
        m.revision == revision for m in migrations())


def applied_and_pending(revision):
    """(applied, pending) migrations of a database at ``revision``, which
    this code must know."""
    every = migrations()
    if revision is None:
        return [], every
    index = [m.revision for m in every].index(revision) + 1
    return every[:index], every[index:]


def _set_lock_timeout(connection):
    statement = _LOCK_TIMEOUT_SQL.get(connection.dialect.name)
    if statement:
        connection.exec_driver_sql(statement % LOCK_TIMEOUT)
        connection.commit()


def _lock_timed_out(error):
    orig = getattr(error, 'orig', None)
    code = getattr(orig, 'pgcode', None)
    if code is None and getattr(orig, 'args', None):
        code = orig.args[0]
    return code in _LOCK_TIMEOUT_CODES


def upgrade(revision='head', engine=None):
    """Migrate the schema up to ``revision``, one migration per
    transaction, each tried again while it times out on a lock.

    Refused before any runs if the database user lacks a privilege one
    of them needs: on MariaDB/MySQL a schema change is not transactional,
    and a migration failing half-way (its tables made, its triggers
    refused) would leave tables the next attempt cannot create again.

    :raises: UpgradeRefused, DBError; ConfigurationError for a revision
        alembic does not know (``reserveapi-dbsync upgrade --revision``).
    """
    engine = engine or db_base.get_engine()
    _refuse_missing_privileges(engine, revision)
    for attempt in range(LOCK_RETRIES + 1):
        try:
            with backends.creating_file(), engine.connect() as connection:
                _set_lock_timeout(connection)
                alembic_command.upgrade(_alembic_config(connection),
                                        revision)
            return
        except alembic_util.CommandError as exc:
            raise exception.ConfigurationError(
                '%s: --revision takes head or a revision of '
                'reserveapi/db/migrations/versions/.' % exc) from exc
        except db_exc.DBError as exc:
            if attempt == LOCK_RETRIES or not _lock_timed_out(exc):
                raise
            LOG.warning('A migration waited %d s for a lock held by '
                        'another transaction; trying it again.',
                        LOCK_TIMEOUT)
            time.sleep(0.5)


def _refuse_missing_privileges(engine, revision):
    at = current(engine)
    if not knows(at):
        return  # alembic says why
    _applied, pending = applied_and_pending(at)
    names = [m.revision for m in pending]
    if revision in names:
        pending = pending[:names.index(revision) + 1]
    missing = missing_privileges(pending, engine=engine)
    if missing:
        raise exception.UpgradeRefused(
            'Nothing was migrated: %s' % ' '.join(missing))


def _refuse_offline(pending, at):
    offline = [m.revision for m in pending if m.phase == OFFLINE]
    if offline and at is not None:
        raise exception.UpgradeRefused(
            'The database is at %s, older than version 1.0.0\'s schema '
            '(%s): %s cannot run while a version serves. Stop every '
            'service and run "reserveapi-dbsync upgrade", or upgrade to '
            '1.0.0 first.' % (at, BASELINE, ', '.join(offline)))


def _at_known(engine):
    at = current(engine)
    if not knows(at):
        raise exception.UpgradeRefused(
            'The database is at %s, a revision newer than this version '
            'knows (%s): a newer version migrated it. Run that version\'s '
            'reserveapi-dbsync.' % (at, head()))
    return at


def expand(engine=None):
    """Apply the pending expand migrations, up to the first contract one.
    Returns the migrations applied.

    :raises: UpgradeRefused, DBError
    """
    engine = engine or db_base.get_engine()
    at = _at_known(engine)
    _applied, pending = applied_and_pending(at)
    _refuse_offline(pending, at)
    run = []
    for migration in pending:
        if migration.phase == CONTRACT:
            break
        run.append(migration)
    if run:
        upgrade(run[-1].revision, engine=engine)
    return run


def pending_contract(engine=None):
    """The contract migrations not applied yet, and whether an expand one
    is pending before them (then contract must wait for expand)."""
    at = _at_known(engine or db_base.get_engine())
    _applied, pending = applied_and_pending(at)
    contract = [m for m in pending if m.phase == CONTRACT]
    expand_first = bool(pending) and pending[0].phase != CONTRACT
    return contract, expand_first


def contract(engine=None):
    """Apply every pending migration once expand has run: the contract
    ones (and the expand ones of a later version that follow them).
    Returns the migrations applied.

    :raises: UpgradeRefused, DBError
    """
    engine = engine or db_base.get_engine()
    at = _at_known(engine)
    _applied, pending = applied_and_pending(at)
    if pending and pending[0].phase != CONTRACT:
        raise exception.UpgradeRefused(
            'Expand first: %s is an %s migration not applied yet. Run '
            '"reserveapi-dbsync expand" and "migrate".'
            % (pending[0].revision, pending[0].phase))
    if pending:
        upgrade(pending[-1].revision, engine=engine)
    return pending


_BASE_PRIVILEGES = {EXPAND: ('CREATE', 'ALTER', 'INDEX'),
                    CONTRACT: ('ALTER', 'DROP', 'INDEX'),
                    OFFLINE: ('CREATE', 'ALTER', 'INDEX', 'DROP')}


def needed_privileges(pending):
    """The privileges the ``pending`` migrations need, by MySQL's names."""
    needed = set()
    for migration in pending:
        needed.update(_BASE_PRIVILEGES[migration.phase])
        needed.update(migration.privileges)
    return needed


def _mysql_grants(connection):
    """The privileges this user holds on this database (and globally),
    and whether globally."""
    database = connection.exec_driver_sql('SELECT DATABASE()').scalar()
    held, held_globally = set(), set()
    for (grant,) in connection.exec_driver_sql('SHOW GRANTS'):
        privileges, _on, target = grant[len('GRANT '):].partition(' ON ')
        target = target.split(' TO ')[0].strip()
        names = {name.strip().upper() for name in privileges.split(',')}
        if 'ALL PRIVILEGES' in names or 'ALL' in names:
            names |= {'CREATE', 'ALTER', 'INDEX', 'DROP', 'TRIGGER'}
        schema = target.split('.')[0].strip('`').replace('\\_', '_')
        if target == '*.*':
            held_globally |= names
            held |= names
        elif schema == database:
            held |= names
    return held, held_globally


def missing_privileges(pending, engine=None):
    """What the database user lacks to apply ``pending``, each said in a
    line that names the fix; empty when nothing is missing.

    :raises: DatabaseUnavailable
    """
    needed = needed_privileges(pending)
    engine = engine or db_base.get_engine()
    if not needed or engine.dialect.name not in ('mysql', 'postgresql'):
        return []
    try:
        with engine.connect() as connection:
            if connection.dialect.name == 'mysql':
                return _mysql_missing(connection, needed)
            if connection.dialect.name == 'postgresql':
                return _postgresql_missing(connection)
    except db_exc.DBError as exc:
        raise exception.DatabaseUnavailable(
            'Cannot read the database: %s' % exc) from exc
    return []


def _mysql_missing(connection, needed):
    held, held_globally = _mysql_grants(connection)
    missing = sorted(needed - held)
    problems = []
    if missing:
        problems.append('The database user lacks %s on this database: '
                        'GRANT them (or ALL PRIVILEGES) on it.'
                        % ', '.join(missing))
    if 'TRIGGER' in needed:
        log_bin, trusted = connection.exec_driver_sql(
            'SELECT @@log_bin, @@log_bin_trust_function_creators').one()
        if int(log_bin) and not int(trusted) and not (
                held_globally & {'SUPER', 'ALL PRIVILEGES', 'ALL'}):
            problems.append(
                'Binary logging is on and the database user has no SUPER '
                'privilege: creating the summary triggers fails. Set '
                'log_bin_trust_function_creators = 1 in the server\'s '
                'configuration (or GRANT SUPER).')
    return problems


def _postgresql_missing(connection):
    create = connection.exec_driver_sql(
        "SELECT has_schema_privilege(current_schema(), 'CREATE')").scalar()
    foreign = connection.exec_driver_sql(
        'SELECT count(*) FROM pg_tables WHERE schemaname = '
        'current_schema() AND tableowner <> current_user').scalar()
    problems = []
    if not create:
        problems.append('The database user may not CREATE in the schema: '
                        'GRANT CREATE ON SCHEMA to it.')
    if foreign:
        problems.append('%d tables belong to another role: only their '
                        'owner may alter them. Run reserveapi-dbsync as '
                        'the owner, or ALTER TABLE ... OWNER TO this user.'
                        % foreign)
    return problems


def revision(message, autogenerate=False, engine=None):
    """Write a new migration script (for developers).

    :raises: DBError
    """
    engine = engine or db_base.get_engine()
    with engine.begin() as connection:
        alembic_command.revision(_alembic_config(connection), message=message,
                                 autogenerate=autogenerate)
