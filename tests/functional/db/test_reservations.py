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

"""Reservations in the database: the unique live columns decide races."""

import datetime
import uuid

import fixtures
from oslo_utils import timeutils
import sqlalchemy as sa

from reserveapi import reservations
from reserveapi.common import exception
from reserveapi.db import base as db_base
from reserveapi.db import models
from reserveapi.db import nodes as db_nodes
from reserveapi.db import reservations as db_reservations
from reserveapi.inventory import lifecycle
from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.functional import base


class TestInstanceRace(base.DBTestCase):
    """The same instance reserved twice at once: one claim wins."""

    def setUp(self):
        super().setUp()
        inventory.sync(self, [inventory.node('node-1'),
                              inventory.node('node-2')])
        self.node_1, self.node_2 = db_nodes.list_nodes(sort_key='name')
        self.instance_uuid = str(uuid.uuid4())

    def values(self, host='compute-1'):
        return {'uuid': str(uuid.uuid4()), 'host': host,
                'instance_uuid': self.instance_uuid, 'project_id': None}

    def test_loser_names_the_instance_not_placeholders(self):
        winner = db_reservations.create_reservation(self.values(),
                                                    self.node_1)

        error = self.assertRaises(exception.InstanceReserved,
                                  db_reservations.create_reservation,
                                  self.values('compute-2'), self.node_2)

        self.assertIn(self.instance_uuid, error.detail)
        self.assertNotIn('?', error.detail)
        self.assertEqual([winner.uuid], [
            item.uuid for item in db_reservations.list_reservations()])

    def test_winner_gone_before_it_is_read(self):
        # The winner ended between the refusal and the read of it: the
        # answer is still a conflict, worded without it.
        db_reservations.create_reservation(self.values('compute-2'),
                                           self.node_1)
        self.useFixture(fixtures.MockPatchObject(
            db_reservations, 'get_live_reservation_for_instance',
            return_value=None))

        error = self.assertRaises(
            exception.InstanceReserved, reservations.reserve,
            self.instance_uuid, 'compute-1', None, examples.REQUEST_SPEC,
            candidate_nodes=['node-2'])

        self.assertIn(self.instance_uuid, error.detail)
        self.assertNotIn('?', error.detail)


class TestRelease(base.DBTestCase):
    """Releasing a reservation (through the lifecycle, as every end)
    clears its node's derived ``reserved`` flag, unless another live
    reservation holds the node.
    """

    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        inventory.sync(self, [inventory.node('node-1')])
        self.node, = db_nodes.list_nodes()

    def reserve(self):
        instance_uuid = str(uuid.uuid4())
        return db_reservations.create_reservation(
            {'uuid': str(uuid.uuid4()), 'host': 'compute-1',
             'instance_uuid': instance_uuid, 'project_id': None},
            self.node)

    @staticmethod
    def release(reservation):
        lifecycle.release_record(reservation, lambda record: None)

    @staticmethod
    def expire_all():
        lifecycle.expire(timeutils.utcnow() + datetime.timedelta(seconds=1))

    def reserved_flag(self):
        with db_base.reader() as session:
            return session.scalar(sa.select(models.Node.reserved).where(
                models.Node.id == self.node.id))

    def test_release_frees_the_node(self):
        reservation = self.reserve()
        self.assertTrue(self.reserved_flag())

        self.release(reservation)

        self.assertFalse(self.reserved_flag())
        self.assertEqual(self.node.id, self.reserve().node_id)

    def test_released_twice_is_not_found(self):
        reservation = self.reserve()
        self.release(reservation)

        self.assertRaises(exception.ReservationNotFound,
                          self.release, reservation)

    def test_expired_release_leaves_the_new_holder(self):
        expired = self.reserve()
        self.expire_all()
        holder = self.reserve()

        self.release(expired)

        self.assertTrue(self.reserved_flag())
        self.assertEqual([holder.uuid], [
            item.uuid for item in db_reservations.list_reservations()])

    def test_release_by_uuid_frees_the_node_and_returns_it(self):
        reservation = self.reserve()
        checked, announced = [], []

        lifecycle.release(reservation.uuid, checked.append,
                          announced.append)
        released, = announced

        self.assertEqual([reservation], checked)
        self.assertEqual(reservation.uuid, released.uuid)
        self.assertEqual(self.node.uuid, released.node_uuid)
        self.assertEqual(self.node.name, released.node_name)
        self.assertEqual('reserved', released.state)
        self.assertFalse(self.reserved_flag())
        self.assertEqual([], db_reservations.list_reservations())

    def test_expired_release_by_uuid_leaves_the_new_holder(self):
        expired = self.reserve()
        self.expire_all()
        holder = self.reserve()

        lifecycle.release(expired.uuid, lambda reservation: None,
                          lambda reservation: None)

        self.assertTrue(self.reserved_flag())
        self.assertEqual([holder.uuid], [
            item.uuid for item in db_reservations.list_reservations()])

    def test_release_by_uuid_the_check_refuses_deletes_nothing(self):
        reservation = self.reserve()

        def refuse(reservation):
            raise exception.Forbidden(action='release')

        self.assertRaises(exception.Forbidden, lifecycle.release,
                          reservation.uuid, refuse, self.fail)

        self.assertTrue(self.reserved_flag())
        self.assertEqual([reservation.uuid], [
            item.uuid for item in db_reservations.list_reservations()])

    def test_release_by_unknown_uuid_is_not_found(self):
        self.assertRaises(exception.ReservationNotFound, lifecycle.release,
                          str(uuid.uuid4()), lambda reservation: None,
                          self.fail)
