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

"""The query string, read once for every route.

Each route declares its parameters and their types (``expose.expose``);
anything else is a 400 that names the parameter: an unknown one, one
given twice (``?limit=1&limit=2``), one whose value its type refuses.
"""

import collections
import urllib.parse

from reserveapi.common import exception
from reserveapi.common import validators


def parse(query_string, declared):
    """``{name: value}`` for the parameters given, each validated by its
    type in ``declared`` (``{name: type}``).

    :raises: Invalid naming the parameter.
    """
    try:
        pairs = urllib.parse.parse_qsl(query_string, keep_blank_values=True,
                                       encoding='utf-8', errors='strict')
    except UnicodeDecodeError:
        raise exception.Invalid(reason='the query string is not valid '
                                'UTF-8.')
    counts = collections.Counter(name for name, _value in pairs)
    unknown = sorted(set(counts) - set(declared))
    if unknown:
        raise exception.Invalid(reason='unknown query parameter%s %s; %s.' % (
            's' if len(unknown) > 1 else '',
            ', '.join(validators.describe(name) for name in unknown),
            'this request takes ' + ', '.join(sorted(declared))
            if declared else 'this request takes none'))
    repeated = sorted(name for name, count in counts.items() if count > 1)
    if repeated:
        raise exception.Invalid(
            reason='query parameter %s is given %d times; give it once.'
            % (repeated[0], counts[repeated[0]]))
    values = {}
    for name, value in pairs:
        try:
            values[name] = declared[name].validate(value)
        except ValueError as exc:
            raise exception.Invalid(reason='query parameter %s %s.'
                                    % (name, exc))
    return values
