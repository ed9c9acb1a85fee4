"""Alembic driver behind reserveapi-dbsync."""

from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script

from reserveapi.db import api as db_api


def _alembic_config(connection=None):
    config = alembic_config.Config()
    config.set_main_option('script_location', 'reserveapi.db:migrations')
    config.attributes['connection'] = connection
    return config


def upgrade(revision='head', engine=None):
    engine = engine or db_api.get_engine()
    with engine.begin() as connection:
        alembic_command.upgrade(_alembic_config(connection), revision)


def current(engine=None):
    """The revision the database is at, or None for an empty database."""
    engine = engine or db_api.get_engine()
    with engine.connect() as connection:
        return alembic_migration.MigrationContext.configure(
            connection).get_current_revision()


def head():
    """The newest revision this code's migrations know."""
    return alembic_script.ScriptDirectory.from_config(
        _alembic_config()).get_current_head()


def revision(message, autogenerate=False, engine=None):
    engine = engine or db_api.get_engine()
    with engine.begin() as connection:
        alembic_command.revision(_alembic_config(connection), message=message,
                                 autogenerate=autogenerate)
