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

"""Test bases for the aggregate mirror: the real Placement service on
loopback, our API in front of it, a fake Nova where one is needed.
"""

import datetime
import uuid

import fixtures
from oslo_config import fixture as config_fixture
from oslo_utils import fixture as utils_fixture
from oslo_utils import timeutils

from reserveapi import conf
from reserveapi.cmd import worker
from reserveapi.mirror import placement
from reserveapi.mirror import state as mirror_state
from reserveapi_testing import placement as placement_fixture
from tests import base
from tests.functional import base as functional_base
from tests.functional.fixtures import nova as nova_fixture


class MirrorTestCase(base.TestCase):
    """Real Placement on loopback, our ``[placement]`` group pointing at it.

    ``conf_fixture`` is the oslo.config fixture the peer fixtures configure.
    """

    def setUp(self):
        super().setUp()
        self.conf_fixture = self.useFixture(config_fixture.Config(conf.CONF))
        self.placement = self.useFixture(placement_fixture.PlacementFixture())
        self.placement.configure(self.conf_fixture)
        self.client = placement.PlacementClient()


def new_uuid():
    return str(uuid.uuid4())


def parse_timestamp(value):
    """An API timestamp as the naive UTC datetime our database keeps."""
    return datetime.datetime.fromisoformat(value).replace(tzinfo=None)


class MirrorAPITestCase(functional_base.APITestCase):
    """Our API on SQLite (or a scenario's backend) mirroring into real
    Placement; ``conf_fixture`` is what the peer fixtures configure.

    Time stands still (``self.time``) unless a test moves it, so that
    back-off is tested without waiting.
    """

    def setUp(self):
        super().setUp()
        self.conf_fixture = self.useFixture(config_fixture.Config(conf.CONF))
        self.placement = self.useFixture(placement_fixture.PlacementFixture())
        self.placement.configure(self.conf_fixture)
        # keystoneauth's retry back-off would only slow outages down.
        self.useFixture(fixtures.MockPatch(
            'keystoneauth1.session.time.sleep'))
        # The shared clients are built from this test's configuration.
        self.useFixture(fixtures.MockPatchObject(mirror_state, '_resolvers',
                                                 {}))
        # Frozen at a whole second, so tests can compare timestamps.
        self.time = self.useFixture(utils_fixture.TimeFixture(
            timeutils.utcnow().replace(microsecond=0)))
        self.aggregate = new_uuid()

    def now(self):
        return timeutils.utcnow()

    def use_nova(self):
        """Fake Nova, and hosts resolved through its hypervisor list."""
        self.nova = self.useFixture(nova_fixture.NovaFixture())
        self.nova.configure(self.conf_fixture)
        self.config(group='mirror', resolve_hosts_via_nova=True)
        return self.nova

    def ironic_node(self, host):
        """A node Nova reports for ``host``, with its provider named after
        the node, as the Ironic driver creates it."""
        node = self.nova.add_compute_node(host)
        return self.placement.create_provider(name=node, uuid=node)

    def add_host(self, host, aggregate=None, **kwargs):
        return self.request('PUT', '/v1/aggregates/%s/hosts/%s'
                            % (aggregate or self.aggregate, host), **kwargs)

    def remove_host(self, host, aggregate=None, **kwargs):
        return self.request('DELETE', '/v1/aggregates/%s/hosts/%s'
                            % (aggregate or self.aggregate, host), **kwargs)

    def delete_aggregate(self, aggregate=None, **kwargs):
        return self.request('DELETE', '/v1/aggregates/%s'
                            % (aggregate or self.aggregate), **kwargs)

    def show(self, aggregate=None):
        response = self.request('GET', '/v1/aggregates/%s'
                                % (aggregate or self.aggregate))
        self.assertEqual(200, response.status_int, response.text)
        return response.json

    def host_states(self, aggregate=None):
        """``{host: (member, state)}`` as our API reports them."""
        return {host['host']: (host['member'], host['state'])
                for host in self.show(aggregate)['hosts']}

    def sync(self, aggregates, dry_run=False, prune=False, **kwargs):
        return self.request('POST', '/v1/aggregates/sync',
                            {'aggregates': aggregates, 'dry_run': dry_run,
                             'prune': prune}, **kwargs)

    def run_job(self, name):
        """One run of a ``reserveapi-worker`` job, as the worker has it."""
        jobs = {job_name: job
                for job_name, _interval, job in worker.jobs()}
        return jobs[name]()

    def run_worker(self):
        """One pass of the retry job, once every back-off has run out."""
        self.time.advance_time_seconds(conf.CONF.mirror.backoff_max + 1)
        return self.run_job('mirror-retry')
