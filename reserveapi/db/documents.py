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

"""Many rows sent to the database as one JSON document: on PostgreSQL and
MariaDB/MySQL a bulk write is then one statement, whatever its length,
for the cost of ``json.dumps`` (see rows_source)."""

import json

import sqlalchemy as sa
from sqlalchemy.dialects import mysql


def insert(session, table, rows):
    """Insert ``rows`` (dicts of the same columns) into ``table``."""
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    if dialect in DIALECTS:
        source, parameters = rows_source(dialect, table, rows)
        session.execute(table.insert().from_select(list(rows[0]), source),
                        parameters)
    else:
        session.execute(table.insert(), rows)


DIALECTS = ('postgresql', 'mysql')
"""The dialects that read rows from one JSON document."""


class _HexDocument(sa.types.TypeDecorator):
    """MariaDB/MySQL: a text written into the statement as a hexadecimal
    literal, each time it runs (the statement cached without it)."""

    impl = sa.Text
    cache_ok = True

    def literal_processor(self, dialect):
        return lambda value: "CONVERT(X'%s' USING utf8mb4)" % (
            value.encode().hex())


def rows_source(dialect, table, rows, same=None, derived=None):
    """PostgreSQL and MariaDB/MySQL: a SELECT of ``rows`` (dicts of the
    same columns of ``table``) sent as one JSON document, typed as those
    columns, with the values of ``same`` on every row and, for each name
    of ``derived``, a column computed by its function from the row's
    values by column name; and the statement's parameters. A chunk is
    then one statement, whatever its length: json.dumps and the server's
    JSON parser are C, where a multi-row VALUES costs the client's CPU
    per value (three times on PostgreSQL; on MariaDB, PyMySQL escaping
    each value in Python was four fifths of a sync's CPU) and the server
    parses a constant per value.

    PostgreSQL reads the document from a parameter. PyMySQL would escape
    a parameter character by character in Python (0.1 s per 5,000
    nodes), so MariaDB/MySQL reads it from a hexadecimal literal, which
    needs no escaping (``bytes.hex``: 0.008 s).
    """
    columns = list(rows[0])
    typed = [sa.column(column, table.c[column].type) for column in columns]
    parameters = {'rows': json.dumps(rows)}
    if dialect == 'postgresql':
        source = sa.func.json_to_recordset(
            sa.bindparam('rows', type_=sa.Text())).table_valued(
                *typed).render_derived(with_types=True)
    else:
        compiler = mysql.dialect()
        # The table's own column names and types: nothing from the input.
        source = sa.text(
            "SELECT * FROM JSON_TABLE(:rows, '$[*]' COLUMNS (%s)) "  # noqa: S608
            "AS json_rows" % ', '.join(
                "%s %s PATH '$.%s'" % (
                    compiler.identifier_preparer.quote(column),
                    table.c[column].type.compile(dialect=compiler),
                    column) for column in columns)
        ).bindparams(sa.bindparam('rows', type_=_HexDocument(),
                                  literal_execute=True)
                     ).columns(*typed).subquery('rows')
    values = {column: source.c[column] for column in columns}
    values.update(
        (column, sa.bindparam('same_' + column, value,
                              type_=table.c[column].type))
        for column, value in (same or {}).items())
    computed = {name: make(values) for name, make in (derived or {}).items()}
    return sa.select(*[value.label(name) for name, value
                       in dict(values, **computed).items()]), parameters
