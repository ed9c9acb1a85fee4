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

"""The manifests of ``deploy/kubernetes/``: valid for the Kubernetes API
(``kubernetes-validate``, strict), shaped as a deployment needs them,
and played by ``podman kube play`` against the machine's PostgreSQL and
MariaDB:
the expand Job's pod, the API and worker Deployments, reservations
through the API, the contract Job's pod.

What podman 4.3 cannot play is changed in the played copy only, each
change named below: host networking (the database listens on loopback)
and so no ports and one replica per API Deployment, a ConfigMap for the
Secret (its secret volumes crash it), and this test's configuration in
them (no Keystone, the image's sample inventory, two gunicorn workers).
"""

import os
import shutil
import subprocess
import uuid

import fixtures
from keystoneauth1 import session as ks_session
import requests
import sqlalchemy as sa
import testtools
from testtools import content
import yaml

from reserveapi import client
from reserveapi_testing import containers
from reserveapi_testing import loopback
from tests.containers import test_roles

MANIFESTS = containers.ROOT / 'deploy' / 'kubernetes'
RESOURCES = ('configmap.yaml', 'secret.yaml', 'api.yaml', 'worker.yaml')
JOBS = ('schema/expand/job.yaml', 'schema/contract/job.yaml')
VALIDATE_ENV = 'RESERVEAPI_KUBERNETES_VALIDATE'
START_TIMEOUT = 180
"""Seconds for a played pod to answer, on a loaded two-core machine."""
JOB_TIMEOUT = 180
"""Seconds for a played schema Job to exit."""
MACHINE_DB = 'postgresql+psycopg2://openstack_citest@127.0.0.1:5432/'
"""The machine's PostgreSQL (tools/ensure-test-databases.sh)."""
MACHINE_MARIADB = ('mysql+pymysql://openstack_citest:openstack_citest@'
                   '127.0.0.1:3306/')
"""The machine's MariaDB (tools/ensure-test-databases.sh)."""


def load(name):
    with open(MANIFESTS / name) as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc]


def every_manifest():
    return [doc for name in RESOURCES + JOBS for doc in load(name)]


def pod_specs(docs):
    for doc in docs:
        if doc['kind'] in ('Deployment', 'Job'):
            yield doc['metadata']['name'], doc['spec']['template']['spec']


class TestManifests(testtools.TestCase):

    def test_valid_for_kubernetes(self):
        tool = os.environ.get(VALIDATE_ENV) or shutil.which(
            'kubernetes-validate')
        if not tool:
            self.skipTest('kubernetes-validate not installed (pip install '
                          'kubernetes-validate, or name it in %s)'
                          % VALIDATE_ENV)
        result = subprocess.run(
            [tool, '--strict', '--quiet']
            + [str(MANIFESTS / name) for name in RESOURCES + JOBS],
            capture_output=True, text=True, timeout=120, check=False)
        self.assertEqual(0, result.returncode,
                         result.stdout + result.stderr)

    def test_shape(self):
        docs = every_manifest()
        by_kind = {}
        for doc in docs:
            by_kind.setdefault(doc['kind'], []).append(doc)
        api = next(doc for doc in by_kind['Deployment']
                   if doc['metadata']['name'] == 'reserveapi-api')
        self.assertGreaterEqual(api['spec']['replicas'], 2)
        self.assertEqual(0, api['spec']['strategy']['rollingUpdate'][
            'maxUnavailable'])
        template = api['spec']['template']
        self.assertEqual('true', template['metadata']['annotations'][
            'prometheus.io/scrape'])
        container = template['spec']['containers'][0]
        self.assertEqual(['api'], container['args'])
        for probe in ('readinessProbe', 'livenessProbe'):
            self.assertEqual('/healthcheck',
                             container[probe]['httpGet']['path'])
        labels = template['metadata']['labels']
        for selector in [by_kind['PodDisruptionBudget'][0]['spec'][
                'selector']['matchLabels'],
                by_kind['Service'][0]['spec']['selector']]:
            self.assertLessEqual(selector.items(), labels.items())
        self.assertEqual({'reserveapi-dbsync-expand',
                          'reserveapi-dbsync-contract'},
                         {doc['metadata']['name']
                          for doc in by_kind['Job']})
        # Every pod: the image's user, the ConfigMap and the Secret.
        for name, spec in pod_specs(docs):
            self.assertTrue(spec['securityContext']['runAsNonRoot'], name)
            volumes = {volume['name']: volume for volume in spec['volumes']}
            self.assertEqual('reserveapi-config',
                             volumes['config']['configMap']['name'], name)
            self.assertEqual('reserveapi-secrets',
                             volumes['secrets']['secret']['secretName'],
                             name)


class TestKubePlay(testtools.TestCase):
    """On the machine's PostgreSQL; TestKubePlayMariaDB on its MariaDB."""

    server = MACHINE_DB

    def setUp(self):
        super().setUp()
        reason = containers.available()
        if reason:
            self.skipTest(reason)
        try:
            engine = sa.create_engine(self.server + 'openstack_citest',
                                      isolation_level='AUTOCOMMIT')
            with engine.connect():
                pass
        except sa.exc.OperationalError as exc:
            self.skipTest("the machine's database server: %s" % exc)
        # podman kube play looks an image up by name.
        self.image = containers.image(by_id=False)
        self.suffix = uuid.uuid4().hex[:8]
        database = 'reserveapi_kube_%s' % self.suffix
        with engine.connect() as connection:
            connection.execute(sa.text('CREATE DATABASE %s' % database))
        self.addCleanup(self.drop, engine, database)
        self.database_url = self.server + database
        self.worker_port = loopback.free_port()
        self.volumes = set()
        self.addCleanup(self.tear_down)
        self.addCleanup(self.attach_logs)  # before they go

    def drop(self, engine, database):
        force = ' WITH (FORCE)' if engine.dialect.name == 'postgresql' else ''
        with engine.connect() as connection:
            connection.execute(sa.text(
                'DROP DATABASE IF EXISTS %s%s' % (database, force)))
        engine.dispose()

    def attach_logs(self):
        out = containers.podman('ps', '--all', '--filter',
                                'name=%s' % self.suffix, '--format',
                                '{{.Names}}', check=False).stdout
        for name in out.split():
            if name.endswith('-infra'):
                continue
            result = containers.podman('logs', name, check=False)
            self.addDetail(name, content.text_content(
                (result.stdout + result.stderr)[-20000:]))

    def tear_down(self):
        # podman 4.3's kube down leaves exited pods: every pod named for
        # this test goes.
        out = containers.podman('pod', 'ps', '--quiet', '--filter',
                                'name=%s' % self.suffix, check=False).stdout
        for pod in out.split():
            containers.podman('pod', 'rm', '--force', pod, check=False)
        for volume in sorted(self.volumes):
            containers.podman('volume', 'rm', '--force', volume,
                              check=False)

    def configuration(self):
        """The ConfigMap and the Secret (as a ConfigMap) of the played
        copy, with this test's configuration."""
        configmap, secret = load('configmap.yaml') + load('secret.yaml')
        configmap['data']['reserveapi.conf'] = (
            '[api]\nauth_strategy = noauth\n'
            '[inventory]\nsource = file\n'
            'file = /opt/reserveapi/etc/reserveapi/nodes.yaml\n'
            'sync_interval = 2\n'
            '[metrics]\nenabled = true\nworker_host = 127.0.0.1\n'
            'worker_port = %d\n' % self.worker_port)
        secrets = {'apiVersion': 'v1', 'kind': 'ConfigMap',
                   'metadata': secret['metadata'],
                   'data': {'secrets.conf': '[database]\nconnection = %s\n'
                            % self.database_url}}
        for doc in (configmap, secrets):
            doc['metadata']['name'] += '-' + self.suffix
        return [configmap, secrets]

    def playable(self, doc, port=None):
        """``doc`` (a Deployment, or a Job made a Pod) as podman 4.3 can
        play it on the host's network, named for this test."""
        if doc['kind'] == 'Job':
            doc = {'apiVersion': 'v1', 'kind': 'Pod',
                   'metadata': doc['metadata'],
                   'spec': doc['spec']['template']['spec']}
            spec = doc['spec']
        else:
            doc['spec']['replicas'] = 1  # one port per played API
            spec = doc['spec']['template']['spec']
        doc['metadata']['name'] += '-' + self.suffix
        for volume in spec['volumes']:
            if 'secret' in volume:
                volume['configMap'] = {
                    'name': volume.pop('secret')['secretName']}
            if 'configMap' in volume:
                # podman keeps a ConfigMap as a named volume.
                volume['configMap']['name'] += '-' + self.suffix
                self.volumes.add(volume['configMap']['name'])
            else:
                # ... and an emptyDir too, shared by name.
                volume['name'] += '-' + self.suffix
                self.volumes.add(volume['name'])
        for container in (spec.get('initContainers', [])
                          + spec['containers']):
            container['image'] = self.image
            container.pop('ports', None)  # no port mappings on the host
            for mount in container['volumeMounts']:
                # Lists shared by YAML anchors are seen twice.
                if (mount['name'] not in ('config', 'secrets')
                        and not mount['name'].endswith(self.suffix)):
                    mount['name'] += '-' + self.suffix
            for probe in ('readinessProbe', 'livenessProbe'):
                action = container.get(probe, {})
                if 'httpGet' in action:
                    action['httpGet']['port'] = port
                if 'tcpSocket' in action:
                    action['tcpSocket']['port'] = self.worker_port
            for variable in container.get('env', []):
                if variable['name'] == 'RESERVEAPI_BIND':
                    variable['value'] = '127.0.0.1:%d' % port
                if variable['name'] == 'RESERVEAPI_API_WORKERS':
                    variable['value'] = '2'  # two cores, shared
        return doc

    def play(self, docs, name):
        path = os.path.join(self.useFixture(
            fixtures.TempDir()).path, name + '.yaml')
        with open(path, 'w') as stream:
            yaml.safe_dump_all(self.configuration() + docs, stream)
        result = containers.podman('kube', 'play', '--network', 'host',
                                   path, check=False)
        self.assertEqual(0, result.returncode, result.stderr)
        return path

    def container_names(self, pod_name):
        out = containers.podman(
            'ps', '--all', '--filter', 'pod=%s' % pod_name,
            '--format', '{{.Names}}', check=False).stdout
        return [name for name in out.split() if not name.endswith('infra')]

    def pod_logs(self, pod_name):
        """What the pod's containers wrote so far, one after the other."""
        return '\n'.join(
            '--- %s\n%s' % (container, containers.podman(
                'logs', container, check=False).stderr)
            for container in self.container_names(pod_name))

    def wait_for(self, url, seconds, pod):
        """``url`` answers within ``seconds``; if not, the test fails with
        the end of ``pod``'s logs, read only then."""
        if not loopback.wait_until(lambda: loopback.answers(url), seconds):
            self.fail('%s did not answer in %d s: %s' % (
                url, seconds,
                self.pod_logs(pod['metadata']['name'])[-3000:]))

    def run_job(self, name):
        """The Job's pod, played until its last container exits: its
        containers' output."""
        [job] = load(name)
        pod = self.playable(job)
        self.play([pod], job['metadata']['name'])
        pod_name = pod['metadata']['name']
        last = '%s-%s' % (pod_name, pod['spec']['containers'][-1]['name'])

        def exited():
            out = containers.podman(
                'inspect', '--format', '{{.State.Status}}', last,
                check=False).stdout.strip()
            return out in ('exited', 'stopped')
        finished = containers.wait(exited, JOB_TIMEOUT, interval=1)
        logs = self.pod_logs(pod_name)
        self.addDetail(name, content.text_content(logs))
        self.assertTrue(finished, '%s still runs after %d s: %s' % (
            name, JOB_TIMEOUT, logs[-3000:]))
        code = containers.podman('inspect', '--format',
                                 '{{.State.ExitCode}}', last).stdout.strip()
        self.assertEqual('0', code, logs[-3000:])

    def test_expand_serve_contract(self):
        self.run_job('schema/expand/job.yaml')

        deployments = {doc['metadata']['name']: doc
                       for doc in load('api.yaml') + load('worker.yaml')
                       if doc['kind'] == 'Deployment'}
        ports = [loopback.free_port(), loopback.free_port()]
        apis = []
        for number, port in enumerate(ports):
            api = self.playable(yaml.safe_load(yaml.safe_dump(
                deployments['reserveapi-api'])), port)
            api['metadata']['name'] += '-%d' % number
            apis.append(api)
        worker = self.playable(deployments['reserveapi-worker'])
        self.play(apis + [worker], 'app')
        urls = ['http://127.0.0.1:%d' % port for port in ports]
        for url, api in zip(urls, apis, strict=True):
            self.wait_for(url + '/healthcheck', START_TIMEOUT, api)
        self.wait_for('http://127.0.0.1:%d/metrics' % self.worker_port, 60,
                      worker)

        made = []
        for number in range(6):
            api_client = client.ReservationClient(
                ks_session.Session(), endpoint_override=urls[number % 2])
            reservation = api_client.reserve(
                str(uuid.uuid4()), 'compute-%d' % number, test_roles.SPEC)
            api_client.confirm(reservation['uuid'])
            made.append(reservation['node_uuid'])
        self.assertEqual(len(made), len(set(made)))
        metrics = requests.get(urls[1] + '/metrics', timeout=30).text
        self.assertIn('reserveapi_api_request_duration_seconds', metrics)

        # The previous version is gone (there was none): contract.
        self.run_job('schema/contract/job.yaml')
        self.assertTrue(loopback.answers(urls[0] + '/healthcheck'))


class TestKubePlayMariaDB(TestKubePlay):

    server = MACHINE_MARIADB
