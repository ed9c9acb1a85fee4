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

"""A pending hold inside real Nova: its free nodes are reported to
Placement as reserved, the service refuses them to the boots the
scheduler still sends, and once every host has reported the rest taken
the scheduler sends none; cancelled, they are Nova's again."""

import collections
import datetime

import fixtures
from keystoneauth1 import session as ks_session
from nova.tests import fixtures as nova_fixtures

from reserveapi import client
from reserveapi.client import base as client_base
from reserveapi.client import request_spec
from reserveapi_testing.nova import base

HOLD_PROJECT = 'a-project-with-a-workshop'


class TestPendingHold(base.IronicTestCase):

    NODES = 4
    HELD = 3

    def setUp(self):
        super().setUp()
        session = ks_session.Session()
        self.holds = client.HoldClient(
            session, endpoint_override=self.reserveapi.endpoint)
        self.service = client.ReservationClient(
            session, endpoint_override=self.reserveapi.endpoint)
        # Every report reads the service now, not a summary cached before
        # the hold changed.
        self.flags(group='reserveapi', inventory_cache_time=0)
        # Every reservation a driver asks for, and what it got.
        self.asked = []
        real_reserve = client.ReservationClient.reserve

        def reserve(reservations, instance_uuid, *args, **kwargs):
            try:
                reservation = real_reserve(reservations, instance_uuid,
                                           *args, **kwargs)
            except client.ClientError as error:
                self.asked.append((instance_uuid, error.code, error.detail))
                raise
            self.asked.append((instance_uuid, reservation['node_uuid'],
                               None))
            return reservation

        self.useFixture(fixtures.MockPatchObject(
            client.ReservationClient, 'reserve', reserve))

    def report_every_host(self):
        self._run_periodics()

    def capacity(self):
        """This class's row of GET /v1/capacity at the newest microversion
        (from 1.5: with ``promised``)."""
        (row,) = [row for row in self.service.capacity()
                  if row['resource_class'] == base.RESOURCE_CLASS]
        return row

    def test_pending_hold_is_reserved_in_placement_until_cancelled(self):
        for compute in self.computes.values():
            self.assertEqual(client_base.PINS_VERSION,
                             compute.manager.driver._reservations.api_version)

        # 1. Three of the four nodes held for another project, from two
        # hours on.
        flavor = self.api.get_flavor(self.flavor_id)
        spec = request_spec.build(
            request_spec.flavor_from_compute(flavor),
            {'id': nova_fixtures.GlanceFixture.image1['id'],
             'properties': {}})
        start = (datetime.datetime.now(datetime.timezone.utc)
                 .replace(microsecond=0) + datetime.timedelta(hours=2))
        hold = self.holds.create(HOLD_PROJECT, self.HELD, spec, start,
                                 start + datetime.timedelta(hours=2))
        self.assertEqual(('pending', base.RESOURCE_CLASS),
                         (hold['state'], hold['resource_class']))
        row = self.capacity()
        self.assertEqual((self.NODES, self.NODES, self.HELD),
                         (row['total'], row['available'], row['promised']))

        # 2. Every host reports the held nodes as reserved.
        self.report_every_host()
        providers = [node.uuid for node in self.compute_nodes()]
        self.assertEqual(len(self.HOSTS), len(providers))
        for provider in providers:
            inventory = self.provider_inventory(provider)[
                base.RESOURCE_CLASS]
            self.assertEqual((self.NODES, self.HELD),
                             (inventory['total'], inventory['reserved']))

        # 3. Three boots of the boots' own project at once. Every host
        # reports the whole cloud, so each host's provider offers the one
        # node neither held nor promised: the scheduler may send a boot
        # to each host (doc/source/nova.rst, "What a host's provider
        # reports"). One takes the node; the service refuses the others
        # a held node, and they end in ERROR (rescheduled until no
        # alternate host is left, or no valid host at all once the
        # hosts' claims reported the class full).
        servers = self.wait_for_status(self.boot(3))
        by_status = collections.defaultdict(list)
        for server in servers:
            by_status[server['status']].append(server)
        outcome = ('servers: %s; reservations asked: %s' % (
            [(server['status'], server.get('fault', {}).get('message'))
             for server in servers], self.asked))
        self.assertEqual((1, 2), (len(by_status['ACTIVE']),
                                  len(by_status['ERROR'])), outcome)
        for server in by_status['ERROR']:
            message = server['fault']['message']
            self.assertTrue(
                'No valid host' in message
                or 'Exceeded maximum number of retries' in message, outcome)
        (active,) = by_status['ACTIVE']
        granted = [(instance, answer) for instance, answer, _ in self.asked
                   if answer != client_base.NO_VALID_NODE]
        self.assertEqual([active['id']], [instance for instance, _ in
                                          granted], outcome)
        for instance, answer, detail in self.asked:
            if answer == client_base.NO_VALID_NODE:
                self.assertNotEqual(active['id'], instance)
                self.assertIn('kept for holds', detail)

        # The hold still has its three nodes, free.
        row = self.capacity()
        self.assertEqual(
            {'total': self.NODES, 'available': self.HELD, 'reserved': 1,
             'promised': self.HELD},
            {key: row[key] for key in ('total', 'available', 'reserved',
                                       'promised')})
        self.assertEqual('pending', self.holds.get(hold['uuid'])['state'])
        (reservation,) = self.assert_placement_matches_reservations(
            [active])
        self.assertEqual(granted[0][1], reservation['node_uuid'])
        used = [node['uuid'] for node in self.ironic.list_nodes(
            associated=True)]
        self.assertEqual([reservation['node_uuid']], used)

        # Once every host reports again, none offers a node: the next boot
        # finds no valid host and reaches no driver.
        self.report_every_host()
        consumers = self.allocated_consumers()
        for provider in providers:
            inventory = self.provider_inventory(provider)[
                base.RESOURCE_CLASS]
            allocated = sum(1 for held_on in consumers.values()
                            if provider in held_on)
            self.assertEqual(allocated,
                             inventory['total'] - inventory['reserved'])
        asked = len(self.asked)
        (refused,) = self.wait_for_status(self.boot(1, name='refused'))
        self.assertEqual('ERROR', refused['status'])
        self.assertIn('No valid host', refused['fault']['message'])
        self.assertEqual(asked, len(self.asked))
        self.assertEqual(self.HELD, self.capacity()['available'])

        # 4. Cancelled, the hold keeps nothing: once the hosts report
        # again, a boot gets a node.
        self.holds.cancel(hold['uuid'])
        self.assertEqual('cancelled', self.holds.get(hold['uuid'])['state'])
        row = self.capacity()
        self.assertEqual((self.HELD, 0), (row['available'], row['promised']))
        self.report_every_host()
        for provider in providers:
            inventory = self.provider_inventory(provider)[
                base.RESOURCE_CLASS]
            self.assertEqual((self.NODES, 0),
                             (inventory['total'], inventory['reserved']))
        (last,) = self.wait_for_status(self.boot(1, name='after'))
        self.assertEqual('ACTIVE', last['status'], last.get('fault'))
        self.assertEqual(last['id'], self.asked[-1][0])
        self.assert_placement_matches_reservations([active, last])
        self.assertEqual(self.HELD - 1, self.capacity()['available'])
