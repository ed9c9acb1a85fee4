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

"""A node's traits and capabilities as one text each, kept in its row.

The candidate query reads nodes along the best-fit index; with these
texts it tests traits and capabilities in the row it already reads and
gets them back with it, instead of a sub-query per trait and capability
(which PostgreSQL plans anew for every request, at several times the
cost of running it) and a second statement for the children of the rows.
``node_traits`` and ``node_capabilities`` stay the tables of record:
the sync writes both in the same statement chain, and the summary's
triggers and the explanation of an empty match read the tables.

Each item is hex of its UTF-8 text, so a text holds only ``0-9a-f``,
``:`` and ``,``: a LIKE pattern built from items has no wildcard to
escape, and LIKE's case folding on SQLite and MariaDB cannot make two
different items equal. ``,`` opens and closes every item, so
``%,item,%`` matches exactly the rows that hold the item.
"""

import functools

EMPTY = ','


@functools.lru_cache(maxsize=65536)
def _hex(text):
    """Cached: a cloud's nodes share a few trait names, capability keys
    and values, and a sync of a million nodes encodes millions of them."""
    return text.encode('utf-8').hex()


def _unhex(item):
    return bytes.fromhex(item).decode('utf-8')


def traits_text(names):
    """``names`` (an iterable of trait names) as the row's text."""
    return _traits_text(tuple(sorted(names)))


def capabilities_text(capabilities):
    """A ``{key: value}`` dict as the row's text."""
    return _capabilities_text(tuple(sorted(capabilities.items())))


# Cached whole, as _hex: nodes of one hardware model share their traits
# and capabilities, and a sync builds a text for every node it writes.
@functools.lru_cache(maxsize=4096)
def _traits_text(names):
    return EMPTY + ''.join(_hex(name) + ',' for name in names)


@functools.lru_cache(maxsize=4096)
def _capabilities_text(items):
    return EMPTY + ''.join('%s:%s,' % (_hex(key), _hex(value))
                           for key, value in items)


def trait_pattern(name):
    """The LIKE pattern of the nodes that have trait ``name``."""
    return '%,' + _hex(name) + ',%'


def capability_pattern(key, value):
    """The LIKE pattern of the nodes whose capability ``key`` is exactly
    ``value``."""
    return '%%,%s:%s,%%' % (_hex(key), _hex(value))


def parse_traits(text):
    return frozenset(_unhex(item) for item in text.split(',') if item)


def parse_capabilities(text):
    return dict((_unhex(key), _unhex(value)) for key, _, value in (
        item.partition(':') for item in text.split(',') if item))
