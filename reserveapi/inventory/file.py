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

"""Node inventory read from a file shaped like Ironic's node list.

The document is what ``GET /v1/nodes?detail=True`` answers, saved as JSON
or YAML, so an operator can dump a real Ironic into it.  :func:`load`
validates every entry before returning any, so a sync never applies half
of a bad document. A ``.json`` document is read as a stream, an entry at
a time, so that a million nodes never sit in memory at once.
"""

import codecs
import hashlib
import json
import os
import re

import yaml

from reserveapi.common import exception
from reserveapi.common import node_fields
from reserveapi.common import validators
from reserveapi.matcher import spec

_SIZES = node_fields.named(node_fields.SIZE)
_FLAGS = node_fields.named(node_fields.FLAG)
# Texts read as they are: resource_class and cpu_arch have rules of their
# own (_resource_class, _arch).
_TEXTS = tuple(name for name in node_fields.named(node_fields.TEXT)
               if name not in ('resource_class', 'cpu_arch'))
_YAML_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)
CHUNK = 10000
"""Nodes per chunk a document gives its reader (see Document.chunks):
the sync writes a chunk in a statement per table on PostgreSQL."""
READ_SIZE = 1 << 20
"""Bytes read at a time."""
MAX_VALUE = 16 << 20
"""Characters of one entry (or other value) a stream reads before it
reports the entry's syntax error: a value not complete by then is
broken, not cut by the end of a block."""


class _FieldError(ValueError):
    """One bad field; :func:`load` adds which entry it belongs to."""

    def __init__(self, field, reason):
        super().__init__('%s: %s' % (field, reason))


class Document:
    """An inventory document: its digest tells that it did not change
    without parsing it, and what is parsed is what was digested (the
    bytes parsed are digested again as they are read; a document that
    changed meanwhile is refused).

    :raises: OSError when it cannot be read.
    """

    def __init__(self, path):
        self.path = path
        digest = hashlib.sha256()
        with open(path, 'rb') as stream:
            for _block in _blocks(stream, digest):
                pass
        self.digest = digest.hexdigest()

    def nodes(self):
        """The nodes it describes, normalized (see :func:`load`).

        :raises: Invalid naming the entry and the field when the document
            cannot be used as a whole.
        """
        return [node for chunk in self.chunks() for node in chunk]

    def chunks(self, size=CHUNK):
        """The nodes, normalized, ``size`` at a time, each chunk checked
        before it is given: a consumer that writes them as they come
        must undo everything when this raises.

        :raises: Invalid naming the entry and the field when the document
            cannot be used as a whole; OSError when it cannot be read.
        """
        digest = hashlib.sha256()
        with open(self.path, 'rb') as stream:
            first_seen = {}
            chunk = []
            for index, entry in enumerate(self._entries(stream, digest)):
                try:
                    node = normalize(entry)
                    _check_unique(node, index, first_seen)
                except _FieldError as error:
                    raise _invalid(self.path,
                                   '%s: %s' % (_label(index, entry), error))
                chunk.append(node)
                if len(chunk) == size:
                    yield chunk
                    chunk = []
        if digest.hexdigest() != self.digest:
            raise _invalid(self.path, 'changed while it was being read; '
                           'sync again')
        if chunk:
            yield chunk

    def _entries(self, stream, digest):
        """The entries of the document's "nodes" list, one at a time."""
        extension = os.path.splitext(os.fspath(self.path))[1].lower()
        try:
            if extension == '.json':
                yield from _JsonStream(stream, digest).nodes()
                return
            document = _parse(extension, b''.join(_blocks(stream, digest)))
        except _NoNodes:
            raise _invalid(self.path, _NO_NODES)
        except ValueError as error:
            raise _invalid(self.path, 'cannot be parsed: %s' % error)
        entries = (document.get('nodes') if isinstance(document, dict)
                   else None)
        if not isinstance(entries, list):
            raise _invalid(self.path, _NO_NODES)
        yield from entries


_NO_NODES = 'expected an object with a "nodes" list'


class _NoNodes(ValueError):
    """Valid so far, but not a document of nodes."""


def _blocks(stream, digest):
    """The rest of ``stream`` a block at a time, each fed to ``digest``;
    a last empty block ends it."""
    while True:
        block = stream.read(READ_SIZE)
        digest.update(block)
        if not block:
            return
        yield block


def _after(line, column, text):
    """The line and column just after ``text``, which starts at
    ``line`` and ``column``."""
    newlines = text.count('\n')
    if not newlines:
        return line, column + len(text)
    return line + newlines, len(text) - text.rfind('\n')


_SPACE = re.compile(r'[ \t\n\r]*')
_DECODER = json.JSONDecoder()


class _JsonStream:
    """A JSON document ``{"nodes": [entry, ...], ...}`` read from a
    binary stream a block at a time; each byte read is fed to
    ``digest``. Only one entry (or other value) is held at a time.
    Errors are json's own, placed in the whole document.
    """

    def __init__(self, stream, digest):
        self._blocks = _blocks(stream, digest)
        self._utf8 = codecs.getincrementaldecoder('utf-8')()
        self._text = ''
        self._at = 0
        self._ended = False
        # Where self._text starts in the document, for error messages.
        self._offset = 0
        self._line = 1
        self._column = 1

    def nodes(self):
        """The entries of "nodes", then the rest is checked."""
        if self._peek() not in ('{', ''):
            raise _NoNodes()
        self._expect('{')
        found = False
        while self._peek() != '}':
            key = self._value()
            self._expect(':')
            if key == 'nodes':
                if found or self._peek() != '[':
                    raise _NoNodes()
                found = True
                yield from self._list()
            else:
                self._value()
            if self._peek() != ',':
                break
            self._at += 1
        self._expect('}')
        if self._peek():
            self._fail('Extra data')
        if not found:
            raise _NoNodes()

    def _list(self):
        self._expect('[')
        if self._peek() == ']':
            self._at += 1
            return
        while True:
            yield self._value()
            following = self._peek()
            self._at += 1
            if following == ']':
                return
            if following != ',':
                self._at -= 1
                self._fail("Expecting ',' delimiter")

    def _read(self):
        """Append the next block; False at the end of the stream."""
        if self._ended:
            return False
        block = next(self._blocks, b'')
        self._ended = not block
        self._line, self._column = _after(self._line, self._column,
                                          self._text[:self._at])
        self._offset += self._at
        self._text = self._text[self._at:] + self._utf8.decode(
            block, final=self._ended)
        self._at = 0
        return True

    def _peek(self):
        """The next character that is not white space ('' at the end)."""
        while True:
            self._at = _SPACE.match(self._text, self._at).end()
            if self._at < len(self._text) or not self._read():
                return self._text[self._at:self._at + 1]

    def _expect(self, character):
        if self._peek() != character:
            self._fail('Expecting value' if not self._peek()
                       else 'Expecting %r' % character)
        self._at += 1

    def _value(self):
        self._peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self._text, self._at)
            except json.JSONDecodeError as error:
                # Cut by the end of what was read: read on and retry.
                if len(self._text) - self._at < MAX_VALUE and self._read():
                    continue
                self._fail(error.msg, error.pos)
            # A number may go on in the next block.
            if end < len(self._text) or not self._read():
                self._at = end
                return value

    def _fail(self, message, at=None):
        at = self._at if at is None else at
        line, column = _after(self._line, self._column, self._text[:at])
        raise ValueError('%s: line %d column %d (char %d)' % (
            message, line, column, self._offset + at))


def load(path):
    """The nodes described by the document at ``path``, normalized.

    Returns one flat dict per node with the keys ``uuid``, ``name``,
    ``resource_class`` (normalized as Nova does), ``memory_mb``, ``cpus``,
    ``local_gb`` (ints), ``cpu_arch`` (canonical), ``capabilities`` (a
    dict), ``traits`` (a sorted list), ``provision_state``,
    ``power_state``, ``maintenance``, ``retired``, ``instance_uuid``,
    ``conductor_group``, ``shard``, ``owner`` and ``lessee``.
    PyYAML builds a whole node graph first, so at 100,000 nodes JSON loads
    in seconds where YAML takes a minute and gigabytes.

    :raises: Invalid naming the entry and the field when the document
        cannot be used as a whole; OSError when it cannot be read.
    """
    return Document(path).nodes()


def _check_unique(node, index, first_seen):
    """Uuids are unique; so are names, as Ironic (and candidate_nodes) want."""
    for field in ('uuid', 'name'):
        if node[field] is not None:
            first = first_seen.setdefault((field, node[field]), index)
            if first != index:
                raise _FieldError(field, 'duplicate of nodes[%d]' % first)


def _parse(extension, data):
    """A document that is not read as a stream: YAML, or JSON under
    another name.

    :raises: ValueError
    """
    text = data.decode('utf-8')
    try:
        if extension in ('.yaml', '.yml'):
            return _load_yaml(text)
        try:
            return json.loads(text)
        except ValueError:
            return _load_yaml(text)
    except yaml.YAMLError as error:
        raise ValueError(str(error))


def _load_yaml(text):
    # A SafeLoader, in C when libyaml is there: ten times faster.
    return yaml.load(text, Loader=_YAML_LOADER)  # noqa: S506


def _invalid(path, reason):
    return exception.Invalid(reason='%s: %s' % (os.fspath(path), reason))


def _label(index, entry):
    """``nodes[3] (uuid ..., name ...)``: enough to find the entry."""
    label = 'nodes[%d]' % index
    if isinstance(entry, dict):
        known = ['%s %s' % (field, _shorten(entry[field]))
                 for field in ('uuid', 'name')
                 if isinstance(entry.get(field), str) and entry[field]]
        if known:
            label += ' (%s)' % ', '.join(known)
    return label


def _shorten(text, limit=64):
    return text if len(text) <= limit else text[:limit - 3] + '...'


def normalize(entry):
    """One node of Ironic's shape as the flat dict :func:`load` returns.

    The Ironic source normalizes each node it lists with this too, so both
    sources store exactly the same thing. A ``ValueError`` names the field
    that cannot be used.
    """
    if not isinstance(entry, dict):
        raise _FieldError('entry', 'must be an object, not %r' % (entry,))
    properties = entry.get('properties')
    if properties is None:
        properties = {}
    elif not isinstance(properties, dict):
        raise _FieldError('properties', 'must be an object')
    node = {
        'uuid': _uuid(entry.get('uuid'), 'uuid', required=True),
        'resource_class': _resource_class(entry.get('resource_class')),
        'cpu_arch': _arch(properties.get('cpu_arch')),
        'capabilities': _capabilities(properties.get('capabilities')),
        'traits': _traits(entry.get('traits')),
        'instance_uuid': _uuid(entry.get('instance_uuid'), 'instance_uuid'),
    }
    for field in _SIZES:
        node[field] = _size(properties.get(field), 'properties.' + field)
    for field in _FLAGS:
        node[field] = _flag(entry.get(field), field)
    for field in _TEXTS:
        node[field] = _text(entry.get(field), field,
                            node_fields.max_length(field))
    if node['conductor_group'] is not None:
        # Ironic's groups are case-insensitive, stored lower-case.
        node['conductor_group'] = node['conductor_group'].lower()
    return node


def _text(value, field, max_length):
    """A string or None; empty means unset (Ironic's default group is '')."""
    if value is None or value == '':
        return None
    if not isinstance(value, str):
        raise _FieldError(field, 'must be a string or null')
    return _printable(value, field, max_length)


def _printable(value, field, max_length=node_fields.ITEM_LENGTH):
    """The API's rule for text: what a database stores, printable."""
    try:
        return validators.text(value, max_length)
    except ValueError as exc:
        raise _FieldError(field, str(exc))


def _uuid(value, field, required=False):
    if value is None or value == '':
        if required:
            raise _FieldError(field, 'is required')
        return None
    try:
        return validators.canonical_uuid(value)
    except ValueError as exc:
        raise _FieldError(field, str(exc))


def _size(value, field):
    """A whole number ≥ 0; Ironic stores properties loosely, often as text."""
    if value is None:
        return 0
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            raise _FieldError(field, 'is not a whole number: %r'
                              % _shorten(value))
    if isinstance(value, bool) or not isinstance(value, int):
        raise _FieldError(field, 'must be a whole number, not %r' % (value,))
    if value < 0:
        raise _FieldError(field, 'must not be negative, got %d' % value)
    if value > node_fields.MAX_SIZE:
        raise _FieldError(field, 'must be at most %d, got %d'
                          % (node_fields.MAX_SIZE, value))
    return value


def _flag(value, field):
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _FieldError(field, 'must be true or false, not %r' % (value,))
    return value


def _resource_class(value):
    field = 'resource_class'
    max_length = node_fields.max_length(field)
    name = _text(value, field, max_length)
    normalized = spec.normalize_resource_class(name)
    if normalized is not None and len(normalized) > max_length:
        raise _FieldError(field, 'is longer than %d characters once '
                          'normalized to %s' % (max_length, normalized))
    return normalized


def _arch(value):
    field = 'properties.cpu_arch'
    name = _text(value, field, node_fields.max_length('cpu_arch'))
    try:
        return spec.canonicalize_arch(name)
    except ValueError as error:
        raise _FieldError(field, str(error))


def _capabilities(value):
    field = 'properties.capabilities'
    try:
        capabilities = spec.parse_capabilities(value)
    except TypeError:
        raise _FieldError(field, 'must be a "key:value,..." string or an '
                          'object, not %r' % (value,))
    for key, text in capabilities.items():
        _printable(key, '%s key' % field)
        _printable(text, '%s value of %s' % (field, _shorten(key)))
    return capabilities


def _traits(value):
    """Sorted unique names from ``["T"]`` or Ironic's ``[{"trait": "T"}]``."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _FieldError('traits', 'must be a list')
    names = set()
    for index, item in enumerate(value):
        name = item.get('trait') if isinstance(item, dict) else item
        field = 'traits[%d]' % index
        if not isinstance(name, str) or not name:
            raise _FieldError(field, 'must be a trait name or '
                              '{"trait": name}, not %r' % (item,))
        names.add(_printable(name, field))
    return sorted(names)
