"""The only module that talks SQL.

Every public function opens its own transaction through the oslo.db
enginefacade, returns plain values or detached model objects, and turns
database errors into ``reserveapi.common.exception`` types.
"""

import threading

from oslo_db.sqlalchemy import enginefacade

main_context_manager = enginefacade.transaction_context()
main_context_manager.configure(sqlite_fk=True)
_CONTEXT = threading.local()


def _reader():
    return main_context_manager.reader.using(_CONTEXT)


def _writer():
    return main_context_manager.writer.using(_CONTEXT)


def get_engine():
    return main_context_manager.writer.get_engine()

