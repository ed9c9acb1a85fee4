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

"""The image in every role, as a deployment runs it: the schema created
by a one-off ``dbsync`` container, the inventory loaded by a one-off
``manage``, two API containers and a worker container on the file
inventory, against a private PostgreSQL and a private MariaDB; and what
the image is (its user, labels, size, what it leaves out).
"""

import json
import uuid

from keystoneauth1 import session as ks_session
import requests
import testtools
from testtools import content

from reserveapi import client
from reserveapi_testing import containers
from reserveapi_testing import dbservers
from reserveapi_testing import loopback

MAX_IMAGE_BYTES = 350 * 10**6
"""What issue 45 allows the image (as podman counts it)."""
RESERVATIONS = 12
SPEC = {'memory_mb': 1024, 'vcpus': 8, 'root_gb': 20,
        'extra_specs': {'resources:CUSTOM_BAREMETAL_GOLD': '1',
                        'capabilities:boot_mode': 'uefi',
                        'trait:CUSTOM_RAID': 'required'},
        'image': {'id': '0b6f3c1e-2d4a-4f5b-8c7d-9e0f1a2b3c4d',
                  'properties': {'hw_architecture': 'x86_64'}}}
"""The README's request: several of the sample inventory's nodes
match it."""


class ContainerTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        reason = containers.available()
        if reason:
            self.skipTest(reason)
        self.image = containers.image()

    def attach(self, name, container):
        self.addDetail(name, content.text_content(container.log()))


class TestImage(ContainerTestCase):

    def inspect(self, template):
        return containers.podman('image', 'inspect', '--format', template,
                                 self.image).stdout.strip()

    def run_in(self, *command):
        result = containers.podman(
            'run', '--rm', '--label', '%s=1' % containers.LABEL,
            '--health-interval', 'disable', '--entrypoint', '',
            self.image, *command, check=False)
        self.assertEqual(0, result.returncode, result.stderr)
        return result.stdout

    def test_what_the_image_is(self):
        from reserveapi import version

        self.assertLessEqual(int(self.inspect('{{.Size}}')),
                             MAX_IMAGE_BYTES)
        labels = json.loads(self.inspect('{{json .Labels}}'))
        self.assertEqual(version.version_string(),
                         labels['org.opencontainers.image.version'])
        self.assertRegex(labels['org.opencontainers.image.revision'],
                         '^[0-9a-f]{40}(-dirty)?$')
        self.assertEqual('Apache-2.0',
                         labels['org.opencontainers.image.licenses'])
        self.assertIn('org.opencontainers.image.source', labels)
        self.assertEqual('reserveapi', self.inspect('{{.Config.User}}'))
        self.assertIn('healthcheck',
                      self.inspect('{{json .Config.Healthcheck}}'))
        # Not root; no pip, compiler, cache or the build's secret.
        self.assertEqual('reserveapi\n', self.run_in('id', '-un'))
        missing = self.run_in('sh', '-c', (
            'for p in /opt/reserveapi/bin/pip /usr/bin/gcc /usr/bin/cc '
            '/opt/build-tools /build /root/.cache/pip /run/secrets/ca; '
            'do [ -e "$p" ] && echo "$p"; done; true'))
        self.assertEqual('', missing)
        self.assertEqual(version.version_string() + '\n', self.run_in(
            'python', '-c', 'from reserveapi import version; '
            'print(version.version_string())'))


class TestRoles(ContainerTestCase):

    def test_postgresql(self):
        server = self.useFixture(dbservers.PostgreSQLServer())
        self.check_deployment(server.create_database('reserveapi'))

    def test_mysql(self):
        server = self.useFixture(dbservers.MariaDBServer())
        self.check_deployment(server.create_database('reserveapi'))

    def one_off(self, config, *command, allowed=(0,)):
        result = containers.run_once(self.image, config.path, *command)
        self.addDetail(' '.join(command), content.text_content(
            result.stdout + result.stderr))
        self.assertIn(result.returncode, allowed,
                      '%s: %s' % (' '.join(command), result.stderr[-3000:]))
        return result

    def check_deployment(self, database_url):
        config = self.useFixture(containers.Configuration(database_url))
        self.one_off(config, 'dbsync', 'upgrade')
        current = self.one_off(config, 'dbsync', 'current')
        self.assertTrue((current.stdout + current.stderr).strip())
        self.one_off(config, 'manage', 'sync-nodes')

        apis = [self.useFixture(containers.Container(
            self.image, config.path, 'api', port=loopback.free_port(),
            name='api%d-' % number)) for number in (1, 2)]
        worker = self.useFixture(containers.Container(
            self.image, config.path, 'worker', name='worker-'))
        for number, api in enumerate(apis, 1):
            self.addCleanup(self.attach, 'api%d' % number, api)
        self.addCleanup(self.attach, 'worker', worker)
        for api in apis:
            api.wait_ready()

        self.check_health(apis)
        self.check_reservations(apis)
        self.check_metrics(apis, config)
        self.one_off(config, 'status', 'upgrade', 'check', allowed=(0, 1))
        self.assertTrue(worker.running(), worker.log()[-3000:])
        self.assertIn('Jobs:', worker.log())
        # gunicorn and the worker stop cleanly on podman stop (SIGTERM).
        for container in apis + [worker]:
            self.assertEqual(0, container.stop(), container.log()[-3000:])

    def check_health(self, apis):
        for api in apis:
            answer = requests.get(api.url + '/healthcheck', timeout=10)
            self.assertEqual(200, answer.status_code, answer.text)
            code, output = api.healthcheck()
            self.assertEqual(0, code, output)

    def check_reservations(self, apis):
        clients = [client.ReservationClient(
            ks_session.Session(), endpoint_override=api.url)
            for api in apis]
        made = []
        for number in range(RESERVATIONS):
            instance = str(uuid.uuid4())
            here = clients[number % 2]
            there = clients[(number + 1) % 2]
            host = 'compute-%d' % (number % 3)
            reservation = here.reserve(instance, host, SPEC)
            # Asked again through the other API: the same reservation.
            again = there.reserve(instance, host, SPEC)
            self.assertEqual(reservation['uuid'], again['uuid'])
            there.confirm(reservation['uuid'])
            made.append(reservation)
        nodes = [reservation['node_uuid'] for reservation in made]
        self.assertEqual(len(nodes), len(set(nodes)),
                         'a node reserved twice')
        for api_client in clients:
            for reservation in made:
                read = api_client.get(reservation['uuid'])
                self.assertEqual(
                    ('active', reservation['node_uuid']),
                    (read['state'], read['node_uuid']))
        for number, reservation in enumerate(made):
            clients[number % 2].release(reservation['uuid'])

    def check_metrics(self, apis, config):
        for url in [api.url + '/metrics' for api in apis] + [
                'http://127.0.0.1:%d/metrics' % config.worker_port]:
            answer = requests.get(url, timeout=30)
            self.assertEqual(200, answer.status_code, url)
            self.assertIn('reserveapi_', answer.text, url)
        text = requests.get(apis[0].url + '/metrics', timeout=30).text
        self.assertIn('reserveapi_api_request_duration_seconds', text)
