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

from reserveapi.api.controllers import link
from reserveapi.common import exception
import reserveapi.conf

CONF = reserveapi.conf.CONF


def page_args(limit, marker, sort_key, sort_dir, sort_keys, default_key):
    """Validated ``(limit, marker, sort_key, sort_dir)``; limit capped at
    [api] max_limit.
    """
    max_limit = CONF.api.max_limit
    if limit is None:
        limit = max_limit
    else:
        try:
            limit = int(limit)
        except ValueError:
            raise exception.Invalid(reason='limit must be an integer.')
        if limit < 1:
            raise exception.Invalid(reason='limit must be at least 1.')
        limit = min(limit, max_limit)
    sort_key = sort_key or default_key
    if sort_key not in sort_keys:
        raise exception.Invalid(reason='sort_key must be one of %s.'
                                % ', '.join(sort_keys))
    sort_dir = sort_dir or 'asc'
    if sort_dir not in ('asc', 'desc'):
        raise exception.Invalid(reason="sort_dir must be 'asc' or 'desc'.")
    return limit, marker, sort_key, sort_dir


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
