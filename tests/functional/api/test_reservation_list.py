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

"""Listing reservations: filters, pages, sorting and who sees what."""

import datetime
import uuid

from oslo_utils import timeutils

from reserveapi import reservations
from reserveapi_testing import inventory
from tests.functional import base
from tests.functional.api import reservation_base as rbase

HOST = rbase.HOST
SAMPLE_PROJECT = rbase.SAMPLE_PROJECT
OTHER_PROJECT = rbase.OTHER_PROJECT


class TestListReservations(rbase.ReservationTestCase):
    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        # Sizes differ so that best fit makes the choice deterministic.
        self.nodes(*[inventory.node('node-%d' % index, memory_mb=8192 + index)
                     for index in range(8)])
        self.config(subset_size=1, group='matcher')
        self.made = []
        for index in range(6):
            response = self.reserve(
                host=(HOST, 'compute-4')[index % 2],
                project_id=SAMPLE_PROJECT if index < 4 else OTHER_PROJECT)
            self.assertReserved(response, 'node-%d' % index)
            self.made.append(response.json)

    def walk(self, query, page_size):
        """Follow ``next`` from the first page to the last."""
        items = []
        url = '/v1/reservations?%slimit=%d' % (query, page_size)
        pages = 0
        while url:
            response = self.request('GET', url)
            self.assertEqual(200, response.status_int, response.text)
            page = response.json['reservations']
            self.assertLessEqual(len(page), page_size)
            items.extend(page)
            pages += 1
            self.assertLess(pages, 20, 'next links never end')
            url = response.json.get('next')
            if url:
                self.assertEqual(page_size, len(page))
                self.assertTrue(url.startswith('http://localhost/v1/'))
                self.assertIn('marker=' + page[-1]['uuid'], url)
                url = url[len('http://localhost'):]
            else:
                self.assertNotIn('next', response.json)
        return items

    def test_list_sample(self):
        response = self.request('GET', '/v1/reservations?host=compute-3'
                                       '&limit=1')
        self.assertEqual(200, response.status_int)
        self.assertMatchesSample(response.json,
                                 'reservations/list-response.json')
        self.assertEqual([self.made[0]], response.json['reservations'])

    def test_filters(self):
        def listed(query):
            return [item['uuid'] for item in self.list_reservations(query)]

        def made(*indexes):
            return [self.made[index]['uuid'] for index in indexes]

        self.assertEqual(made(0, 1, 2, 3, 4, 5), listed(''))
        self.assertEqual(made(1, 3, 5), listed('?host=compute-4'))
        self.assertEqual(made(3), listed(
            '?instance_uuid=' + self.made[3]['instance_uuid']))
        self.assertEqual(made(2), listed(
            '?node_uuid=' + inventory.node_uuid('node-2')))
        self.assertEqual(made(4, 5), listed('?project_id=' + OTHER_PROJECT))
        self.assertEqual(made(4), listed(
            '?project_id=%s&host=%s' % (OTHER_PROJECT, HOST)))
        self.assertEqual([], listed('?host=compute-9'))
        self.assertEqual([], listed('?node_uuid=' + inventory.node_uuid(
            'node-7')))
        patched = self.request('PATCH', '/v1/reservations/' +
                               self.made[5]['uuid'],
                               [{'op': 'replace', 'path': '/state',
                                 'value': 'active'}])
        self.assertEqual(200, patched.status_int)
        self.assertEqual(made(5), listed('?state=active'))
        self.assertEqual(made(0, 1, 2, 3, 4), listed('?state=reserved'))
        self.assertEqual([], listed('?state=expired'))
        error = self.assertError(
            self.request('GET', '/v1/reservations?state=deployed'), 400,
            'reserveapi.invalid')
        self.assertIn('state must be "reserved", "active" or "expired", '
                      'got "deployed"', error['detail'])

    def test_next_link_only_when_more(self):
        response = self.request('GET', '/v1/reservations?limit=6')
        self.assertEqual(6, len(response.json['reservations']))
        self.assertNotIn('next', response.json)
        response = self.request('GET', '/v1/reservations?limit=5')
        self.assertIn('next', response.json)
        self.config(max_limit=4, group='api')
        response = self.request('GET', '/v1/reservations')
        self.assertEqual(4, len(response.json['reservations']))
        self.assertIn('limit=4', response.json['next'])

    def test_pages_keep_filters(self):
        expected = [item['uuid'] for item in self.made[1::2]]
        walked = self.walk('host=compute-4&', 1)
        self.assertEqual(expected, [item['uuid'] for item in walked])

    def _vary_nullable_columns(self):
        """Leave updated_at and expires_at NULL on some rows only."""
        for item in self.made[:2]:
            response = self.request('PATCH', '/v1/reservations/' +
                                    item['uuid'],
                                    [{'op': 'replace', 'path': '/state',
                                      'value': 'active'}])
            self.assertEqual(200, response.status_int, response.text)
        self.config(reserved_ttl=60, group='reservations')
        later = timeutils.utcnow() + datetime.timedelta(minutes=2)
        self.assertEqual(4, reservations.expire(now=later))
        self.config(reserved_ttl=0, group='reservations')
        for _index in range(2):
            self.made.append(self.reserve().json)

    def test_sort_and_walk_every_key(self):
        self._vary_nullable_columns()
        everything = {item['uuid'] for item in self.made}
        self.assertEqual(8, len(everything))
        for sort_key in reservations.SORT_KEYS:
            ascending = self.list_reservations(
                '?sort_key=%s&sort_dir=asc' % sort_key)
            descending = self.list_reservations(
                '?sort_key=%s&sort_dir=desc' % sort_key)
            values = [item[sort_key] for item in ascending]
            present = [value for value in values if value is not None]
            if sort_key.endswith('_at'):
                present = [datetime.datetime.fromisoformat(value)
                           for value in present]
            self.assertEqual(sorted(present), present, sort_key)
            if sort_key.endswith('_at'):
                values = [value and datetime.datetime.fromisoformat(value)
                          for value in values]
            # NULL sorts after every value, so desc reverses asc exactly.
            self.assertEqual(present + [None] * (len(values) - len(present)),
                             values, sort_key)
            self.assertEqual(list(reversed(ascending)), descending, sort_key)
            for sort_dir, listed in (('asc', ascending),
                                     ('desc', descending)):
                for page_size in (1, 3):
                    walked = self.walk('sort_key=%s&sort_dir=%s&'
                                       % (sort_key, sort_dir), page_size)
                    self.assertEqual(
                        [item['uuid'] for item in listed],
                        [item['uuid'] for item in walked],
                        (sort_key, sort_dir, page_size))
                    self.assertEqual(everything,
                                     {item['uuid'] for item in walked})

    def test_bad_paging_is_400(self):
        for query in ('limit=0', 'limit=-1', 'limit=ten', 'sort_key=node',
                      'sort_key=project_id', 'sort_dir=up',
                      'marker=%s' % uuid.uuid4(), 'colour=red'):
            error = self.assertError(
                self.request('GET', '/v1/reservations?' + query), 400,
                'reserveapi.invalid')
            self.assertIn(query.split('=')[0], error['detail'])

    def test_project_reader_sees_own_project_only(self):
        reader = self.headers_for(['reader'], project_id=SAMPLE_PROJECT)
        response = self.request('GET', '/v1/reservations', headers=reader)
        self.assertEqual(200, response.status_int)
        self.assertEqual([item['uuid'] for item in self.made[:4]],
                         [item['uuid'] for item in
                          response.json['reservations']])
        # Asking for another project's changes nothing.
        response = self.request(
            'GET', '/v1/reservations?project_id=' + OTHER_PROJECT,
            headers=reader)
        self.assertEqual(4, len(response.json['reservations']))
        self.assertEqual({SAMPLE_PROJECT}, {
            item['project_id'] for item in response.json['reservations']})
        mine = self.request('GET', '/v1/reservations/' + self.made[0]['uuid'],
                            headers=reader)
        self.assertEqual(self.made[0], mine.json)
        theirs = self.request('GET', '/v1/reservations/' +
                              self.made[4]['uuid'], headers=reader)
        self.assertError(theirs, 404, 'reserveapi.reservation_not_found')
        outsider = self.headers_for(['reader'], project_id='nobody')
        response = self.request('GET', '/v1/reservations', headers=outsider)
        self.assertEqual([], response.json['reservations'])
