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

"""Pagination: limit/marker/sort query parameters and the ``next`` link."""

import urllib.parse

import pecan

from reserveapi.api import types
from reserveapi.api.controllers import link
import reserveapi.conf

CONF = reserveapi.conf.CONF


def page_query(sort_keys):
    """The query parameters of a list: ``limit``, ``marker`` (a UUID of
    the list), ``sort_key`` (one of ``sort_keys``) and ``sort_dir``.
    """
    return {'limit': types.limit, 'marker': types.uuid,
            'sort_key': types.OneOf(sort_keys), 'sort_dir': types.sort_dir}


def page_args(limit, marker, sort_key, sort_dir, default_key):
    """``(limit, marker, sort_key, sort_dir)`` with their defaults; limit
    capped at [api] max_limit. The values are already validated.
    """
    max_limit = CONF.api.max_limit
    limit = max_limit if limit is None else min(limit, max_limit)
    return limit, marker, sort_key or default_key, sort_dir or 'asc'


def render(name, items, limit, path, marker_of):
    """``{name: items, "next": url}``; ``next`` only when there is more.

    Callers fetch ``limit + 1`` items: the extra one, never shown, tells
    whether another page exists. The next link repeats every query
    parameter of this request but the marker, so filters and sorting
    carry over.
    """
    more = len(items) > limit
    items = items[:limit]
    body = {name: items}
    if more:
        params = [(key, value) for key, value in pecan.request.GET.items()
                  if key not in ('marker', 'limit')]
        params += [('limit', limit), ('marker', marker_of(items[-1]))]
        body['next'] = link.make(
            '%s?%s' % (path, urllib.parse.urlencode(params)))['href']
    return body
