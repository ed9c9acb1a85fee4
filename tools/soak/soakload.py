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

"""The load of a soak run: clients reserving, confirming and releasing
through ``reserveapi.client``, a client changing aggregates, and a
monitor reading the database for double holds.

Every HTTP answer any client receives, retries included, goes through a
``requests`` response hook into the ``Recorder``; keystoneauth1's own
retries (of failed connections and of 503s) are counted from its log.
"""

import collections
import functools
import logging
import random
import threading
import time
import uuid

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
import requests
import sqlalchemy as sa

from reserveapi import client

OPERATION_ATTEMPTS = 15
REQUEST_TIMEOUT = 60
ALLOWED_STATUSES = frozenset(range(200, 300)) | {404, 409, 503}
SPEC = {
    'memory_mb': 1024, 'vcpus': 8, 'vcpu_weight': None, 'root_gb': 20,
    'ephemeral_gb': 10, 'swap': 2, 'rxtx_factor': 1.0,
    'extra_specs': {'resources:CUSTOM_BAREMETAL_SOAK': '1',
                    'trait:CUSTOM_RAID': 'required'},
    'image': {'id': 'b5b2e7a3-4f0c-4c9e-9d1a-3e6f8a2c1d40',
              'properties': {'hw_architecture': 'x86_64'}},
}


class GaveUp(Exception):
    """An operation still failed after OPERATION_ATTEMPTS attempts."""


class Recorder(logging.Handler):
    """Thread-safe tallies of everything the clients saw."""

    def __init__(self):
        super().__init__(level=logging.WARNING)
        # Not ``lock``: logging.Handler holds that one while emit() runs.
        self.tally_lock = threading.Lock()
        self.statuses = collections.Counter()
        self.bad_answers = []
        self.counts = collections.Counter()
        self.holds = []  # (node_uuid, reservation_uuid, start, end)
        self.anomalies = []
        self.gave_up = []
        self.max_attempts = collections.Counter()

    def response_hook(self, response, *args, **kwargs):
        with self.tally_lock:
            self.statuses[response.status_code] += 1
            if response.status_code not in ALLOWED_STATUSES:
                self.bad_answers.append({
                    'method': response.request.method,
                    'url': response.request.url,
                    'status': response.status_code,
                    'request_id': response.headers.get(
                        'x-openstack-request-id'),
                    'body': response.text[:500]})

    def emit(self, record):
        """keystoneauth1's warnings about the retries it makes."""
        message = record.getMessage()
        if message.startswith('Failure:'):
            self.count('connection retries (keystoneauth1)')
        elif message.startswith('Retriable status code'):
            self.count('503 retries (keystoneauth1)')

    def count(self, name, amount=1):
        with self.tally_lock:
            self.counts[name] += amount

    def attempts(self, operation, attempts):
        with self.tally_lock:
            self.counts['operations: %s' % operation] += 1
            if attempts > 1:
                self.counts['operation retries'] += attempts - 1
            self.max_attempts[operation] = max(
                self.max_attempts[operation], attempts)

    def anomaly(self, text):
        with self.tally_lock:
            self.anomalies.append(text)

    def hold(self, node_uuid, reservation_uuid, start, end):
        with self.tally_lock:
            self.holds.append((node_uuid, reservation_uuid, start, end))


def make_session(recorder):
    """A keystoneauth1 session with no auth (the API runs noauth) whose
    every response reaches the recorder."""
    http = requests.Session()
    http.hooks['response'].append(recorder.response_hook)
    return ks_session.Session(session=http, timeout=REQUEST_TIMEOUT)


def attempt(recorder, operation, call):
    """``call()``, repeated while the service is unavailable (503 after
    the client's own retries, or no connection), as Nova would."""
    for number in range(1, OPERATION_ATTEMPTS + 1):
        try:
            result = call()
        except client.ClientError as exc:
            if exc.status != 503:
                recorder.attempts(operation, number)
                raise
        except ks_exc.ConnectionError:
            pass
        else:
            recorder.attempts(operation, number)
            return result
        time.sleep(min(0.25 * 2 ** number, 2.0))
    recorder.attempts(operation, OPERATION_ATTEMPTS)
    raise GaveUp(operation)


class ReservationClient(threading.Thread):
    """One compute host spawning and deleting instances in a loop."""

    def __init__(self, url, host, recorder, stop):
        super().__init__(name='client-%s' % host, daemon=True)
        self.host = host
        self.recorder = recorder
        self.stop = stop
        self.client = client.ReservationClient(
            make_session(recorder), endpoint_override=url)
        self.lost_instances = []

    def run(self):
        while not self.stop.is_set():
            try:
                self.cycle(str(uuid.uuid4()))
            except GaveUp as exc:
                self.recorder.gave_up.append('%s: %s' % (self.name, exc))
            except Exception as exc:  # noqa: BLE001 - reported, not hidden
                self.recorder.anomaly('%s: %r' % (self.name, exc))
                time.sleep(0.5)

    def cycle(self, instance_uuid):
        try:
            reservation = attempt(self.recorder, 'reserve', lambda: (
                self.client.reserve(instance_uuid, self.host, SPEC)))
        except GaveUp:
            self.lost_instances.append(instance_uuid)
            raise
        except client.Conflict as exc:
            self.recorder.count('409 %s' % exc.code)
            time.sleep(0.05)
            return
        start = time.monotonic()
        uuid_ = reservation['uuid']
        if random.random() < 0.3:
            again = attempt(self.recorder, 'reserve again', lambda: (
                self.client.reserve(instance_uuid, self.host, SPEC)))
            if again['uuid'] != uuid_:
                self.recorder.anomaly('instance %s got reservations %s and '
                                      '%s' % (instance_uuid, uuid_,
                                              again['uuid']))
        try:
            confirmed = attempt(self.recorder, 'confirm',
                                lambda: self.client.confirm(uuid_))
            if confirmed['state'] != 'active':
                self.recorder.anomaly('confirmed %s is %s'
                                      % (uuid_, confirmed['state']))
            time.sleep(random.random() * 0.02)
        finally:
            end = time.monotonic()
            self.recorder.hold(reservation['node_uuid'], uuid_, start, end)
            released = attempt(self.recorder, 'release',
                               lambda: self.client.release(uuid_))
            if not released:
                self.recorder.count('release found it gone (retried)')

    def _listed(self, instance_uuid):
        return list(self.client.list(instance_uuid=instance_uuid))

    def forget_lost(self):
        """Release what a reserve that gave up may have left; the count
        of reservations found that way."""
        found = 0
        for instance_uuid in self.lost_instances:
            listed = attempt(self.recorder, 'cleanup', functools.partial(
                self._listed, instance_uuid))
            for item in listed:
                attempt(self.recorder, 'cleanup', functools.partial(
                    self.client.release, item['uuid']))
                found += 1
        return found


class AggregateClient(threading.Thread):
    """Hosts joining and leaving aggregates, now and then an aggregate
    deleted (and never used again), as nova-api's hooks would."""

    def __init__(self, url, hosts, recorder, stop, aggregates=4):
        super().__init__(name='aggregates', daemon=True)
        self.hosts = list(hosts)
        self.recorder = recorder
        self.stop = stop
        self.client = client.AggregateMirrorClient(
            make_session(recorder), endpoint_override=url)
        self.aggregates = [str(uuid.uuid4()) for _ in range(aggregates)]
        self.used = set(self.aggregates)

    def run(self):
        while not self.stop.wait(0.1):
            try:
                self.change()
            except GaveUp as exc:
                self.recorder.gave_up.append('aggregates: %s' % exc)
            except Exception as exc:  # noqa: BLE001 - reported, not hidden
                self.recorder.anomaly('aggregates: %r' % exc)

    def change(self):
        aggregate = random.choice(self.aggregates)
        if random.random() < 0.02:
            attempt(self.recorder, 'aggregate delete',
                    lambda: self.client.delete_aggregate(aggregate))
            self.aggregates.remove(aggregate)
            self.aggregates.append(str(uuid.uuid4()))
            self.used.add(self.aggregates[-1])
            return
        host = random.choice(self.hosts)
        if random.random() < 0.6:
            attempt(self.recorder, 'aggregate join',
                    lambda: self.client.add_host(aggregate, host))
        else:
            attempt(self.recorder, 'aggregate leave',
                    lambda: self.client.remove_host(aggregate, host))


class Monitor(threading.Thread):
    """Reads the database every ``interval`` for a node or an instance
    held by two live reservations (its own connection, outside the API).
    """

    QUERIES = {
        'node': 'SELECT node_id FROM reservations WHERE state IN '
                "('reserved', 'active') GROUP BY node_id "
                'HAVING COUNT(*) > 1',
        'instance': 'SELECT instance_uuid FROM reservations WHERE state IN '
                    "('reserved', 'active') GROUP BY instance_uuid "
                    'HAVING COUNT(*) > 1',
    }

    def __init__(self, url, recorder, stop, interval=0.2):
        super().__init__(name='monitor', daemon=True)
        self.engine = sa.create_engine(url, pool_pre_ping=True)
        self.recorder = recorder
        self.stop = stop
        self.interval = interval
        self.doubles = []

    def run(self):
        while not self.stop.wait(self.interval):
            try:
                with self.engine.connect() as connection:
                    for kind, query in self.QUERIES.items():
                        rows = connection.execute(sa.text(query)).all()
                        if rows:
                            self.doubles.append((kind, rows))
                self.recorder.count('monitor reads')
            except sa.exc.DBAPIError:
                self.recorder.count('monitor reads missed (database down)')
        self.engine.dispose()


def overlapping_holds(holds):
    """Pairs of reservations whose holds of one node overlap in time, as
    the clients saw them: from the reserve's answer to the release's
    request."""
    by_node = collections.defaultdict(list)
    for node_uuid, reservation_uuid, start, end in holds:
        by_node[node_uuid].append((start, end, reservation_uuid))
    overlaps = []
    for node_uuid, spans in by_node.items():
        spans.sort()
        for (_s1, end1, first), (start2, _e2, second) in zip(
                spans, spans[1:], strict=False):
            if start2 < end1 and first != second:
                overlaps.append((node_uuid, first, second))
    return overlaps
