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

"""The API's metrics (``[metrics] enabled``): served at ``/metrics``
without a token, every request counted under its route template, every
reservation under its outcome; and the database's gauges the worker
serves, read on every backend."""

import datetime
import uuid

import fixtures
from oslo_context import context
from oslo_utils import timeutils
from prometheus_client import parser
import webtest

from reserveapi import reservations
from reserveapi.api import app
from reserveapi.db import inventory as db_inventory
from reserveapi.db import mirror as db_mirror
from reserveapi.monitoring import database
from reserveapi.monitoring import exposition
from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.functional import base
from tests.functional.api import reservation_base

HISTOGRAM = 'reserveapi_api_request_duration_seconds'


def samples(text):
    """``{(name, ((label, value), ...)): value}`` of a scrape."""
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in parser.text_string_to_metric_families(text)
            for sample in family.samples}


def family_samples(families):
    """As ``samples``, from collected metric families."""
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in families for sample in family.samples}


class MetricsTestCase(reservation_base.ReservationTestCase):

    def setUp(self):
        super().setUp()
        self.config(enabled=True, group='metrics')
        self.app = webtest.TestApp(app.setup_app())

    def scrape(self, status=200, **environ):
        response = self.app.get('/metrics', status=status,
                                extra_environ=environ)
        return samples(response.text) if status == 200 else response

    def requests_of(self, scrape, route, method, status):
        return scrape.get((HISTOGRAM + '_count', (
            ('method', method), ('route', route), ('status', status))), 0)

    def reservations_of(self, scrape, outcome, cause=''):
        return scrape.get(('reserveapi_reservations_total', (
            ('cause', cause), ('outcome', outcome))), 0)


class TestRequests(MetricsTestCase):

    def test_served_without_a_token_in_the_text_format(self):
        response = self.app.get('/metrics')
        self.assertEqual('text/plain; version=0.0.4; charset=utf-8',
                         response.headers['Content-Type'])
        self.assertIn('# TYPE %s histogram' % HISTOGRAM, response.text)

    def test_each_request_counted_under_its_route_template(self):
        self.nodes(inventory.node('node-1'))
        before = self.scrape()
        created = self.reserve()
        self.assertEqual(201, created.status_int, created.text)
        reservation = created.json['uuid']
        for _ in range(2):
            self.request('GET', '/v1/reservations/' + reservation)
        self.request('GET', '/v1/reservations/' + str(uuid.uuid4()))
        self.request('PUT', '/v1/reservations')
        self.request('GET', '/v1/no/such/' + str(uuid.uuid4()))
        self.app.request('/v1/reservations', method='BREW', status='*')
        self.app.get('/healthcheck')
        after = self.scrape()
        expected = {
            ('/v1/reservations', 'POST', '201'): 1,
            ('/v1/reservations/{reservation_uuid}', 'GET', '200'): 2,
            ('/v1/reservations/{reservation_uuid}', 'GET', '404'): 1,
            ('/v1/reservations', 'PUT', '405'): 1,
            ('unmatched', 'GET', '404'): 1,
            ('/v1/reservations', 'other', '405'): 1,
            ('/healthcheck', 'GET', '200'): 1,
        }
        self.assertEqual(expected, {
            labels: self.requests_of(after, *labels)
            - self.requests_of(before, *labels) for labels in expected})
        # A scrape is not a request of the API.
        self.assertEqual(0, self.requests_of(after, '/metrics', 'GET', '200'))
        self.assertNotIn(reservation, str(after))

    def test_allowed_networks(self):
        self.config(allowed_networks=['10.0.0.0/8', '::1/128'],
                    group='metrics')
        self.app = webtest.TestApp(app.setup_app())
        self.scrape(REMOTE_ADDR='10.1.2.3')
        self.scrape(REMOTE_ADDR='::1')
        refused = self.scrape(status=403, REMOTE_ADDR='192.0.2.1')
        self.assertIn('allowed_networks', refused.text)

    def test_several_processes_without_their_directory_are_warned_of(self):
        log = self.useFixture(fixtures.FakeLogger(
            name='reserveapi.api.metrics'))
        self.useFixture(fixtures.EnvironmentVariable(
            exposition.MULTIPROCESS_ENV))
        for _ in range(2):
            self.app.get('/metrics',
                         extra_environ={'wsgi.multiprocess': True})
        self.assertEqual(1, log.output.count(
            '%s is not set' % exposition.MULTIPROCESS_ENV))

    def test_off_by_default(self):
        self.config(enabled=False, group='metrics')
        self.app = webtest.TestApp(app.setup_app())
        self.assertError(self.app.get('/metrics', status=404), 404,
                         'reserveapi.not_found')

    def test_every_line_a_request_logs_carries_its_own_request_id(self):
        # The healthcheck runs without the hooks that build a context;
        # its lines must not carry the previous request's id.
        first = self.request('GET', '/v1/capacity')
        health = self.app.get('/healthcheck')
        self.assertNotEqual(first.headers['x-openstack-request-id'],
                            health.headers['x-openstack-request-id'])
        self.assertEqual(health.headers['x-openstack-request-id'],
                         context.get_current().request_id)


class TestReservationOutcomes(MetricsTestCase):

    def test_created_existing_and_refused_by_first_criterion(self):
        self.nodes(inventory.node('node-1'),
                   inventory.node('silver-1', resource_class='silver'))
        before = self.scrape()
        instance = str(uuid.uuid4())
        self.assertEqual(201, self.reserve(instance_uuid=instance).status_int)
        self.assertEqual(200, self.reserve(instance_uuid=instance).status_int)
        # node-1 is taken: what the refusal names first is "reserved"
        # (1 node) beside "wrong resource class" (1 node), criterion
        # order breaking the tie.
        self.assertNoValidNode(self.reserve(),
                               '2 nodes: 1 reserved, 1 wrong resource class')
        self.assertEqual(409, self.reserve(
            instance_uuid=instance, host=reservation_base.NEW_HOST
        ).status_int)
        after = self.scrape()
        for (outcome, cause), count in {
                ('created', ''): 1, ('existing', ''): 1,
                ('no_valid_node', 'reserved'): 1,
                ('conflict', 'instance_reserved'): 1}.items():
            self.assertEqual(count, self.reservations_of(
                after, outcome, cause) - self.reservations_of(
                before, outcome, cause), (outcome, cause))


class TestRefusalCauses(MetricsTestCase):
    """Each refusal is counted by why *it* was refused, in an inventory
    where another class outnumbers the requested one: the criterion that
    kept the most of the requested class's nodes (as the 409 counts
    them), ``reserved`` when its held nodes would have matched,
    ``resource_class`` only for a class without nodes, and a bad body as
    ``invalid``."""

    def setUp(self):
        super().setUp()
        self.nodes(
            inventory.node('gold-1'),
            inventory.node('gold-2', traits=('HW_CPU_X86_AVX2',)),
            inventory.node('gold-3', traits=('HW_CPU_X86_AVX2',)),
            inventory.node('gold-4', maintenance=True),
            *[inventory.node('silver-%d' % index, resource_class='silver')
              for index in range(6)])

    def refused(self, spec, detail, *more):
        before = self.scrape()
        self.assertNoValidNode(self.reserve(spec), detail)
        after = self.scrape()
        return {cause for (name, labels), count in after.items()
                if name == 'reserveapi_reservations_total'
                and dict(labels)['outcome'] == 'no_valid_node'
                and count != before.get((name, labels), 0)
                for cause in [dict(labels)['cause']]}

    def test_each_criterion_against_its_409(self):
        raid = reservation_base.spec()
        bronze = reservation_base.spec(extra_specs={
            'resources:CUSTOM_BAREMETAL_GOLD': None,
            'resources:CUSTOM_BAREMETAL_BRONZE': '1'})
        bios = reservation_base.spec(extra_specs={
            'capabilities:boot_mode': 'bios', 'trait:CUSTOM_RAID': None})
        self.assertEqual({'required_traits'}, self.refused(
            reservation_base.spec(extra_specs={
                'trait:CUSTOM_RAID': None, 'trait:CUSTOM_NVME': 'required'}),
            '10 nodes: 6 wrong resource class, 3 lack trait CUSTOM_NVME, 1 '
            'in maintenance'))
        self.assertEqual({'resource_class'}, self.refused(
            bronze, '10 nodes: 9 wrong resource class, 1 in maintenance'))
        self.assertEqual({'capabilities'}, self.refused(
            bios, '10 nodes: 6 wrong resource class, 3 fail capability '
            'boot_mode, 1 in maintenance; capability boot_mode: closest '
            'nodes have uefi (3)'))
        self.assertEqual(201, self.reserve(raid).status_int)
        self.assertEqual({'reserved'}, self.refused(
            raid, '10 nodes: 6 wrong resource class, 2 lack trait '
            'CUSTOM_RAID, 1 in maintenance, 1 reserved'))

    def test_a_bad_body_is_invalid(self):
        before = self.scrape()
        response = self.request('POST', '/v1/reservations', {
            'host': 'compute-1', 'request_spec': examples.REQUEST_SPEC})
        self.assertEqual(400, response.status_int, response.text)
        code = response.json['errors'][0]['code'].rpartition('.')[2]
        self.assertEqual(1, self.reservations_of(
            self.scrape(), 'invalid', code) - self.reservations_of(
            before, 'invalid', code))


class TestDatabaseGauges(base.DBTestCase):
    """What reserveapi-worker's scrape reads from the database, on every
    backend."""

    scenarios = base.EVERY_BACKEND

    def gauges(self):
        families = list(database.DatabaseCollector().collect())
        return family_samples(families)

    def test_capacity_live_reservations_sync_mirror_and_leases(self):
        inventory.sync(self, [
            inventory.node('gold-1'), inventory.node('gold-2'),
            inventory.node('gold-3', shard='s2'),
            inventory.node('gold-4', shard='s2', maintenance=True)])
        reservations.reserve(str(uuid.uuid4()), 'compute-1', None,
                             examples.REQUEST_SPEC, shard='s2')
        for _ in range(2):
            reservations.reserve(str(uuid.uuid4()), 'compute-2', None,
                                 examples.REQUEST_SPEC)
        db_mirror.set_membership(str(uuid.uuid4()), 'compute-1', True)
        long_ago = timeutils.utcnow() - datetime.timedelta(minutes=5)
        db_inventory.take_sync_lease('file', 'dead-worker', 1, now=long_ago)
        self.config(max_host_series=1, group='metrics')

        found = self.gauges()
        gold = 'CUSTOM_BAREMETAL_GOLD'

        def capacity(name, shard):
            return found[('reserveapi_' + name, (
                ('conductor_group', ''), ('resource_class', gold),
                ('shard', shard)))]

        self.assertEqual((2, 0, 2), tuple(
            capacity(name, '') for name in ('nodes', 'nodes_available',
                                            'nodes_reserved')))
        self.assertEqual((2, 0, 1), tuple(
            capacity(name, 's2') for name in ('nodes', 'nodes_available',
                                              'nodes_reserved')))
        self.assertEqual(2, found[('reserveapi_reservations_live',
                                   (('host', 'compute-2'),))])
        self.assertEqual(1, found[('reserveapi_reservations_live',
                                   (('host', database.OTHER_HOSTS),))])
        synced = found[('reserveapi_inventory_last_sync_timestamp_seconds',
                        (('source', 'file'),))]
        self.assertLess(abs(synced - timeutils.utcnow().replace(
            tzinfo=datetime.timezone.utc).timestamp()), 120)
        self.assertEqual(1, found[('reserveapi_inventory_source_up',
                                   (('source', 'file'),))])
        self.assertEqual(1, found[('reserveapi_mirror_pending_changes', ())])
        self.assertEqual(0, found[('reserveapi_mirror_oldest_pending_attempts',
                                   ())])
        self.assertEqual(1, found[('reserveapi_leases', (
            ('holder', 'dead'), ('lease', 'inventory_sync')))])
        self.assertEqual(0, found[('reserveapi_leases', (
            ('holder', 'alive'), ('lease', 'inventory_sync')))])
        self.assertEqual(1, found[('reserveapi_database_up', ())])

    def test_an_outage_of_the_source_is_seen(self):
        db_inventory.note_outage('file', 'gone')
        found = self.gauges()
        self.assertEqual(0, found[('reserveapi_inventory_source_up',
                                   (('source', 'file'),))])
        self.assertGreater(found[(
            'reserveapi_inventory_source_down_since_timestamp_seconds',
            (('source', 'file'),))], 0)
