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

"""Every use of a library's private API, in one place.

A private name can change shape in any version, and a patch applied to
the wrong shape misbehaves without a word. So each patch names the
library it reaches into and the versions it was written and checked
for (``Library``), and applying it on any other version raises
``exception.UnsupportedLibrary``, which names the library, the installed
version and the expected range. ``tests/unit/test_compat.py`` checks the
installed versions too. To support a new version: read the patch
against it, then widen the range.

The callers keep what they mean (``api/app.py``, ``db/backends.py``,
``common/service.py``);
this module only reaches in. It imports none of the libraries it
patches at module level, so that loading it costs no process a library
it does not use (``reserveapi-worker`` never loads pecan), and it talks
no SQL: the callers hand it their SQLAlchemy objects.
"""

import dataclasses
import functools
import importlib.metadata

from packaging import specifiers

from reserveapi.common import exception


@dataclasses.dataclass(frozen=True)
class Library:
    """A distribution whose private API a patch below uses, and the
    versions (a PEP 440 specifier) the patch was written and checked
    for."""

    name: str
    written_for: str


PECAN = Library('pecan', '>=1.5.1,<2')
SQLALCHEMY = Library('SQLAlchemy', '>=2.0,<2.2')
OSLO_DB = Library('oslo.db', '>=15.0.0,<19')
OSLO_CONFIG = Library('oslo.config', '>=9.4.0,<11')
LIBRARIES = (PECAN, SQLALCHEMY, OSLO_DB, OSLO_CONFIG)

OSLO_DB_SQLITE_BEGIN = '_sqlite_emit_begin'
"""oslo.db's listener that emits SQLite's plain BEGIN
(``oslo_db.sqlalchemy.engines._init_events``)."""
OSLO_DB_IN_TRANSACTION = 'in_transaction'
"""The key of ``Connection.info`` by which that listener marks the
transaction it began, and oslo.db's commit and rollback listeners unmark
it."""


@functools.cache
def check(library):
    """The installed version of ``library``, once it is one the patches
    were written for.

    :raises: exception.UnsupportedLibrary
    """
    installed = importlib.metadata.version(library.name)
    if not specifiers.SpecifierSet(library.written_for).contains(
            installed, prereleases=True):
        raise exception.UnsupportedLibrary(
            '%s %s is installed, but reserveapi/compat.py uses private API '
            'of %s as it is in versions %s: install one of those, or check '
            'the patch against %s and widen its range.' % (
                library.name, installed, library.name, library.written_for,
                installed))
    return installed


def remember_pecan_argspecs():
    """Have pecan look at each controller's signature once, not per call.

    pecan routes every request through ``pecan.util.getargspec``
    several times, and the ``_getargspec`` it calls builds a new
    namedtuple class on every call: about 1.4 ms of CPU per POST. A
    function's signature never changes, so the answer is remembered per
    function (a bound method and its function have the same one). Safe
    to call again.

    :raises: exception.UnsupportedLibrary
    """
    check(PECAN)
    # Here, not at the top: only the API process loads pecan.
    from pecan import util as pecan_util

    original = pecan_util._getargspec
    if getattr(original, 'remembers', False):
        return

    @functools.cache
    def of_function(function):
        return original(function)

    def getargspec(method):
        return of_function(getattr(method, '__func__', method))

    getargspec.remembers = True
    pecan_util._getargspec = getargspec


def pool_like(pool, pool_class, **arguments):
    """A ``pool_class`` pool that connects as ``pool`` does: with its
    creator, dialect and event listeners, as SQLAlchemy's
    ``Pool.recreate()`` builds a pool of its own class.

    :raises: exception.UnsupportedLibrary
    """
    check(SQLALCHEMY)
    return pool_class(pool._creator, dialect=pool._dialect,
                      _dispatch=pool.dispatch, **arguments)


def wrap_rollback(dialect, wrapper):
    """Send the dialect's rollbacks (a transaction's and the pool's
    reset) through ``wrapper(rollback, dbapi_connection)``, which calls
    ``rollback(dbapi_connection)``: ``do_rollback`` is replaced on this
    dialect instance.

    :raises: exception.UnsupportedLibrary
    """
    check(SQLALCHEMY)
    rollback = dialect.do_rollback

    def do_rollback(dbapi_connection):
        return wrapper(rollback, dbapi_connection)

    dialect.do_rollback = do_rollback


def oslo_db_sqlite_begin_listeners(engine):
    """oslo.db's listeners that emit a plain BEGIN on an SQLite engine,
    for a caller that removes them to emit its own (marking the
    transaction as they do, ``OSLO_DB_IN_TRANSACTION``).

    :raises: exception.UnsupportedLibrary
    """
    check(OSLO_DB)
    check(SQLALCHEMY)
    return [listener for listener in engine.dispatch.begin
            if getattr(listener, '__name__', None) == OSLO_DB_SQLITE_BEGIN]


def registered_option(conf, name, group=None):
    """The option object registered as ``name`` in ``group``, whose
    ``deprecated_opts`` say the older names it also reads: oslo.config
    hands out values, not options.

    :raises: exception.UnsupportedLibrary; cfg.NoSuchOptError
    """
    check(OSLO_CONFIG)
    return conf._get_opt_info(name, group)['opt']


def given_value(conf, name, group=None):
    """``(value, location)``: what the configuration gave ``name``, as
    written, and where (``location.detail`` is the file), also when its
    option refuses it; oslo.config's own error names neither.

    :raises: exception.UnsupportedLibrary; cfg.Error
    """
    opt = registered_option(conf, name, group)
    return opt._get_from_namespace(conf._namespace, group)
