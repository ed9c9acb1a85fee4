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

"""Alembic driver behind reserveapi-dbsync."""

from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
from oslo_db import exception as db_exc

from reserveapi.common import exception
from reserveapi.db import base as db_base


def _alembic_config(connection=None):
    config = alembic_config.Config()
    config.set_main_option('script_location', 'reserveapi.db:migrations')
    config.attributes['connection'] = connection
    return config


def upgrade(revision='head', engine=None):
    """Migrate the schema up to ``revision``.

    :raises: DBError
    """
    engine = engine or db_base.get_engine()
    with engine.begin() as connection:
        alembic_command.upgrade(_alembic_config(connection), revision)


def current(engine=None):
    """The revision the database is at, or None for an empty database.

    :raises: DatabaseUnavailable when the database cannot be read.
    """
    engine = engine or db_base.get_engine()
    try:
        with engine.connect() as connection:
            return alembic_migration.MigrationContext.configure(
                connection).get_current_revision()
    except db_exc.DBError as exc:
        raise exception.DatabaseUnavailable(
            'Cannot read the database: %s' % exc) from exc


def head():
    """The newest revision this code's migrations know."""
    return alembic_script.ScriptDirectory.from_config(
        _alembic_config()).get_current_head()


def revision(message, autogenerate=False, engine=None):
    """Write a new migration script (for developers).

    :raises: DBError
    """
    engine = engine or db_base.get_engine()
    with engine.begin() as connection:
        alembic_command.revision(_alembic_config(connection), message=message,
                                 autogenerate=autogenerate)
