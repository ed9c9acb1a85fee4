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

"""The test base: leases through python-blazarclient against a real
Blazar whose plugin holds nodes in a real reservation service.

Keystone, the reservation service (three nodes matching
``REQUEST_SPEC``) and Blazar take about twenty seconds to start: one
stack serves the whole test process and stops at its exit. Each test
keeps to a day of its own (its windows are on the N-th day from now,
more than the cleaning padding apart from any other test's), so that
tests never compete for the stack's nodes.

The base is testtools' rather than oslotest's: oslotest points tempfile
at each test's own directory, removed with the test, and the stack
outlives the test that starts it.
"""

import atexit
import datetime
import itertools
import os
import tempfile
import threading
import time

from blazarclient import client as blazar_client
from blazarclient import exception as blazar_exception
import fixtures
from keystoneauth1 import session as ks_session
import testtools
from testtools import content

from reserveapi import client
from reserveapi_testing import blazar as blazar_fixture
from reserveapi_testing import examples
from reserveapi_testing import inventory
from reserveapi_testing import keystone as keystone_fixture

# Read at import, before anything points tempfile elsewhere.
PROCESS_TEMP_DIR = tempfile.gettempdir()
NODES = [inventory.node('blazar-node-%d' % index) for index in range(3)]
REQUEST_SPEC = examples.REQUEST_SPEC
LEASE_DATE_FORMAT = '%Y-%m-%d %H:%M'
REQUEST_TIMEOUT = 60

_stack = None
_stack_lock = threading.Lock()
_days = itertools.count(1)


def shared_stack():
    """This process's stack, started on first use, stopped at exit."""
    global _stack
    with _stack_lock:
        if _stack is None:
            stack = blazar_fixture.BlazarStack(NODES, PROCESS_TEMP_DIR)
            stack.setUp()
            atexit.register(stack.cleanUp)
            _stack = stack
    return _stack


def utc(text):
    """A time as Blazar or the service shows it, aware, in UTC."""
    value = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value


class BlazarTestCase(testtools.TestCase):
    """``self.blazar``: python-blazarclient as a member of project-a;
    ``self.holds``: our HoldClient as the cloud's admin; ``self.day``:
    midnight (UTC) of this test's own day."""

    def setUp(self):
        super().setUp()
        timeout = int(os.environ.get('OS_TEST_TIMEOUT', 0))
        if timeout > 0:
            self.useFixture(fixtures.Timeout(timeout, gentle=True))
        self.stack = shared_stack()
        self.keystone = self.stack.keystone
        self.addOnException(self._attach_logs)
        self.project_a = self.keystone.project_ids['project-a']
        self.blazar = blazar_client.Client(
            session=self.session('member_a'), service_type='reservation',
            interface='public', region_name=keystone_fixture.REGION)
        self.holds = client.HoldClient(self.session('admin'),
                                       interface='public')
        today = datetime.datetime.now(datetime.timezone.utc).replace(
            hour=0, minute=0, second=0, microsecond=0)
        self.day = today + datetime.timedelta(days=next(_days))

    def _attach_logs(self, exc_info):
        self.addDetail('blazar', content.text_content(
            self.stack.blazar.logs(6000)))
        self.addDetail('reserveapi', content.text_content(
            self.stack.service.log_tail(4000)))

    def session(self, persona):
        """A keystoneauth session with ``persona``'s password, scoped as
        the persona is."""
        session = ks_session.Session(
            auth=self.keystone.password_auth(persona),
            timeout=REQUEST_TIMEOUT)
        self.addCleanup(session.session.close)
        return session

    def at(self, hour, minute=0):
        """This test's day at ``hour``:``minute`` UTC."""
        return self.day + datetime.timedelta(hours=hour, minutes=minute)

    def create_lease(self, amount, start, end, name=None, **reservation):
        """A lease of one ``baremetal:hold`` reservation; ``start`` and
        ``end`` are datetimes, or ``start`` the text ``now``."""
        reservation.setdefault('request_spec', REQUEST_SPEC)
        reservation.update(resource_type='baremetal:hold', amount=amount)
        lease = self.blazar.lease.create(
            name or self.getUniqueString('lease'),
            start if isinstance(start, str) else start.strftime(
                LEASE_DATE_FORMAT),
            end.strftime(LEASE_DATE_FORMAT), [reservation], [])
        self.addCleanup(self._delete_quietly, lease['id'])
        return lease

    def _delete_quietly(self, lease_id):
        try:
            self.blazar.lease.delete(lease_id)
        except blazar_exception.BlazarClientException as exc:
            if exc.kwargs.get('code') != 404:
                raise

    def hold_of(self, lease):
        """The hold behind the lease's only reservation."""
        (reservation,) = lease['reservations']
        return self.holds.get(reservation['resource_id'])

    def lease_names(self):
        return {lease['name'] for lease in self.blazar.lease.list()}

    def holds_of_today(self):
        """The project's holds whose window lies on this test's day."""
        return [hold for hold in self.holds.list(project_id=self.project_a)
                if self.day <= utc(hold['start'])
                < self.day + datetime.timedelta(days=1)]

    def wait_for(self, predicate, timeout=60, what='condition'):
        """Blazar runs its events every ten seconds."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                self.fail('No %s within %d s' % (what, timeout))
            time.sleep(1)

    def assertRefused(self, call, *reasons):
        """Blazar refuses the call with each of ``reasons`` in its
        message; the client's exception."""
        exc = self.assertRaises(blazar_exception.BlazarClientException,
                                call)
        for reason in reasons:
            self.assertIn(reason, str(exc))
        return exc
