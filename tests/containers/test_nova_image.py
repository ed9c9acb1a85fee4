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

"""The Containerfile's Nova side: nova-compute of Nova 34 with our
driver, nova-api with our aggregate hook in its paste pipeline, and the
Kolla template override whose lines the build runs. The images' first
build takes about three more minutes, so they are built only with
``RESERVEAPI_CONTAINERS_NOVA=1``; the override's check always runs."""

import fcntl
import json
import os
import re

import jinja2
import testtools

from reserveapi_testing import containers
from reserveapi_testing import loopback
from tools.containers import build

ENABLE = 'RESERVEAPI_CONTAINERS_NOVA'
TAG = build.TARGETS['nova-compute'] + ':checkout'
API_TAG = build.TARGETS['nova-api'] + ':checkout'
OVERRIDE = build.HERE / 'kolla' / 'template-overrides.j2'
FOOTERS = ('nova_api_footer', 'nova_compute_ironic_footer')
"""The blocks of Kolla's nova-api and nova-compute-ironic images (empty
by design) that the override fills."""
LOADS = '''
from reserveapi.nova import cmd
cmd.register()
import nova.version
from nova.virt import driver
loaded = driver.load_compute_driver(None, 'reserveapi.IronicDriver')
print(nova.version.version_string(), type(loaded).__module__)
'''


def build_target(tag, target):
    """Build ``target`` of this checkout as ``tag``, or skip the test."""
    reason = containers.available()
    if reason:
        raise testtools.TestCase.skipException(reason)
    if os.environ.get(ENABLE) != '1':
        raise testtools.TestCase.skipException(
            '%s=1 builds and checks it' % ENABLE)
    with open(containers.LOCK, 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        build.ensure_base(log=lambda message: None)
        build.build_image(tags=[tag], target=target,
                          log=lambda message: None)


class TestNovaComputeImage(testtools.TestCase):

    def setUp(self):
        super().setUp()
        build_target(TAG, 'nova-compute')

    def run_in(self, *command, entrypoint=None):
        args = ['run', '--rm', '--label', '%s=1' % containers.LABEL]
        if entrypoint is not None:
            args += ['--entrypoint', entrypoint]
        result = containers.podman(*args, TAG, *command, check=False)
        self.assertEqual(0, result.returncode, result.stderr[-3000:])
        return result.stdout

    def test_nova_loads_our_driver(self):
        self.assertIn('usage: reserveapi-nova-compute',
                      self.run_in('--help'))
        out = self.run_in('-c', LOADS, entrypoint='python')
        self.assertRegex(out, r'^34\.\d+\.\d+ reserveapi\.nova\.driver\n$')
        self.assertEqual('nova\n', self.run_in('-un', entrypoint='id'))


# In the nova-api image: a nova.conf on SQLite databases (nova-api
# records its service row at start), the image's own command serving,
# then nova-api's application loaded as that server loads it, and the
# classes of each v2.1 pipeline printed, Nova's own api-paste.ini's too.
SERVE = r"""
set -e
cat > /tmp/nova.conf <<'CONF'
[api_database]
connection = sqlite:////tmp/nova_api.sqlite
[database]
connection = sqlite:////tmp/nova.sqlite
CONF
for database in api_db db; do
    nova-manage --config-file /tmp/nova.conf $database sync \
        > /tmp/sync.log 2>&1 || { cat /tmp/sync.log >&2; exit 1; }
done
export OS_NOVA_CONFIG_FILES='api-paste.ini;/tmp/nova.conf'
gunicorn > /tmp/gunicorn.log 2>&1 &
python -c "$PROBE" || { cat /tmp/gunicorn.log >&2; exit 1; }
"""
PROBE = """
import json, os, time, urllib.request
from paste import deploy
from nova.api.openstack import wsgi_app

deadline = time.monotonic() + 120
while True:
    try:
        url = 'http://%s/' % os.environ['NOVA_API_BIND']
        with urllib.request.urlopen(url, timeout=10) as answer:
            served = json.load(answer)['versions'][0]['id']
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.5)

def chain(app):
    names = []
    while app is not None:
        names.append('%s.%s' % (type(app).__module__, type(app).__name__))
        app = next((getattr(app, name) for name in ('application', '_app')
                    if getattr(app, name, None) is not None), None)
    return names

def pipelines(urlmap):
    return {path: chain(app) for (_domain, path), app in urlmap.items()
            if path.endswith('/+')}

served_app = wsgi_app.init_application('osapi_compute', 'nova-api-os-compute')
novas = deploy.loadapp('config:/opt/nova/etc/nova/api-paste.ini',
                       name='osapi_compute')
print(json.dumps({'served': served, 'image': pipelines(served_app),
                  'nova': pipelines(novas)}))
"""
CONTEXT = 'nova.api.auth.NovaKeystoneContext'
LEGACY = 'nova.api.openstack.LegacyV2CompatibleWrapper'
HOOK = 'reserveapi.nova.aggregates.AggregateMirror'
ROUTER = 'nova.api.openstack.compute.routes.APIRouterV21'


class TestNovaApiImage(testtools.TestCase):
    """nova-api serves from the image, and its compute pipelines run our
    hook right after keystonecontext (after legacy_v2_compatible in the
    legacy one), as doc/source/nova.rst says."""

    def setUp(self):
        super().setUp()
        build_target(API_TAG, 'nova-api')

    def test_serves_with_our_hook_in_both_pipelines(self):
        bind = '127.0.0.1:%d' % loopback.free_port()
        result = containers.podman(
            'run', '--rm', '--network', 'host', '--label',
            '%s=1' % containers.LABEL, '--env', 'NOVA_API_BIND=' + bind,
            '--env', 'NOVA_API_WORKERS=1', '--env', 'PROBE=' + PROBE,
            '--entrypoint', 'sh', API_TAG, '-c', SERVE, check=False)
        self.assertEqual(0, result.returncode, result.stderr[-5000:])
        found = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual('v2.0', found['served'])
        self.assertEqual([CONTEXT, HOOK, ROUTER],
                         found['image']['/v2.1/+'][-3:])
        self.assertEqual([CONTEXT, LEGACY, HOOK, ROUTER],
                         found['image']['/v2/+'][-4:])
        for chain in found['image'].values():
            self.assertEqual(1, chain.count(HOOK), chain)
        # The same probe on Nova's own file finds no hook: a missing one
        # would fail the test.
        self.assertEqual({'/v2.1/+', '/v2/+'}, set(found['nova']))
        for chain in found['nova'].values():
            self.assertNotIn(HOOK, chain)
            self.assertEqual(ROUTER, chain[-1])


def instructions(text):
    """A Dockerfile's instructions, each on one line: ``[(word, rest)]``."""
    joined = re.sub(r'\\\n\s*', ' ', text)
    found = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith('#'):
            word, _, rest = line.partition(' ')
            found.append((word.upper(), ' '.join(rest.split())))
    return found


def commands(run):
    return [command.strip() for command in run.split(' && ')]


class TestKollaOverride(testtools.TestCase):
    """The template override doc/source/nova.rst gives a Kolla operator
    renders, and each RUN line of its footers is one the Containerfile's
    nova-kolla stage runs as written (in Kolla's layout), so the lines a
    reader copies are the lines the nova-api image was built with."""

    def render(self):
        parent = ''.join('{%% block %s %%}{%% endblock %%}\n' % block
                         for block in FOOTERS)
        # A Dockerfile, not HTML: nothing to escape, as in kolla-build.
        env = jinja2.Environment(
            loader=jinja2.DictLoader({'parent.j2': parent,
                                      'override.j2': OVERRIDE.read_text()}),
            undefined=jinja2.StrictUndefined,
            autoescape=False)  # noqa: S701
        return env.get_template('override.j2').render(
            parent_template='parent.j2')

    def kolla_stage(self):
        text = build.CONTAINERFILE.read_text()
        stage = text.split(' AS nova-kolla\n', 1)[1].split('\nFROM ', 1)[0]
        return [rest for word, rest in instructions(stage) if word == 'RUN']

    def test_footers_are_the_builds_lines(self):
        rendered = self.render()
        source = OVERRIDE.read_text()
        for block in FOOTERS:
            self.assertIn('{%% block %s %%}' % block, source)
        footer = instructions(rendered)
        self.assertEqual([('ADD', 'additions-archive /')] * 2,
                         [item for item in footer if item[0] == 'ADD'])
        runs = [rest for word, rest in footer if word == 'RUN']
        self.assertEqual(2, len(runs))
        api_run, compute_run = runs
        built = self.kolla_stage()
        # nova-api's footer is a RUN of the stage, word for word ...
        self.assertIn(api_run, built)
        # ... and nova-compute-ironic's is its first command, the pip line.
        self.assertEqual(commands(api_run)[:1], commands(compute_run))
        self.assertIn('python3 -m pip --no-cache-dir install -c '
                      '/requirements/upper-constraints.txt '
                      '/additions/reserveapi/reserveapi-*.whl',
                      commands(api_run))
