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

"""A real Prometheus server, from the distribution's ``prometheus``
package, scraping our processes on loopback.

Never the system's service: a process of its own on a free loopback
port, with its own configuration and data directory in a temporary
directory, scraping every second, with the rules we ship
(``etc/prometheus/reserveapi-rules.yaml``) loaded. Queries go through
its HTTP API, as a dashboard's would::

    server = self.useFixture(PrometheusServer({
        'reserveapi-api': ['127.0.0.1:6390'],
        'reserveapi-worker': ['127.0.0.1:6391']}))
    server.wait_for_scrapes(since=time.time())
    server.value('sum(reserveapi_nodes_available)')
"""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import fixtures
import yaml

from reserveapi_testing import loopback

ROOT = pathlib.Path(__file__).resolve().parents[1]
RULES = ROOT / 'etc' / 'prometheus' / 'reserveapi-rules.yaml'
SCRAPE_INTERVAL = 1
START_TIMEOUT = 60
WAIT_TIMEOUT = 60
STAMP_TOLERANCE = 0.05
"""Seconds a scrape's timestamp may differ from when it began: Prometheus
stamps a scrape within 2 ms of its schedule with the scheduled time."""


class PrometheusError(Exception):
    """Prometheus is missing, would not start, or refused a query."""


def binary(name='prometheus'):
    """``prometheus`` or ``promtool`` from the distribution's package."""
    path = shutil.which(name)
    if path is None:
        raise PrometheusError('%s not found: apt-get install prometheus'
                              % name)
    return path


class PrometheusServer(fixtures.Fixture):
    """Prometheus scraping ``targets`` (``{job: ['host:port', ...]}``) at
    ``/metrics`` every second."""

    def __init__(self, targets, rules=RULES, root_dir=None):
        super().__init__()
        self.targets = targets
        self.rules = rules
        self.root_dir = root_dir

    def _setUp(self):
        self.path = self.useFixture(fixtures.TempDir(
            rootdir=self.root_dir)).path
        self.port = loopback.free_port()
        self.log_path = os.path.join(self.path, 'prometheus.log')
        config = os.path.join(self.path, 'prometheus.yml')
        with open(config, 'w') as stream:
            yaml.safe_dump({
                'global': {'scrape_interval': '%ds' % SCRAPE_INTERVAL,
                           'evaluation_interval': '%ds' % SCRAPE_INTERVAL,
                           'scrape_timeout': '%ds' % SCRAPE_INTERVAL},
                'rule_files': [str(self.rules)] if self.rules else [],
                'scrape_configs': [
                    {'job_name': job,
                     'static_configs': [{'targets': list(addresses)}]}
                    for job, addresses in sorted(self.targets.items())],
            }, stream)
        with open(self.log_path, 'ab') as log:
            self.process = subprocess.Popen(  # noqa: S603
                [binary(), '--config.file=%s' % config,
                 '--storage.tsdb.path=%s' % os.path.join(self.path, 'data'),
                 '--web.listen-address=127.0.0.1:%d' % self.port,
                 '--storage.tsdb.retention.time=1d'],
                stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        self.addCleanup(self._stop)
        self._wait_ready()

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    def _stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def _wait_ready(self):
        if not loopback.wait_until(
                lambda: loopback.answers(self.url + '/-/ready', timeout=2),
                START_TIMEOUT, self.process, interval=0.2):
            raise PrometheusError('Prometheus did not start: %s' % self.tail())

    def tail(self, size=3000):
        with open(self.log_path, 'rb') as log:
            log.seek(max(0, os.path.getsize(self.log_path) - size))
            return log.read().decode(errors='replace')

    def api(self, path, **params):
        """The ``data`` of a GET on Prometheus' HTTP API."""
        url = '%s/api/v1/%s?%s' % (self.url, path,
                                   urllib.parse.urlencode(params))
        try:
            with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310
                body = json.load(response)
        except urllib.error.HTTPError as error:
            body = json.load(error)
        if body.get('status') != 'success':
            raise PrometheusError('%s: %s' % (url, body))
        return body['data']

    def query(self, expr, at=None):
        """The instant vector ``expr`` evaluates to (at Unix time ``at``,
        default now): ``[(labels, value)]``."""
        params = {'query': expr}
        if at is not None:
            params['time'] = '%.3f' % at
        data = self.api('query', **params)
        if data['resultType'] == 'scalar':
            return [({}, float(data['result'][1]))]
        return [(item['metric'], float(item['value'][1]))
                for item in data['result']]

    def value(self, expr, at=None):
        """The one value ``expr`` has; None when its vector is empty."""
        result = self.query(expr, at)
        if not result:
            return None
        if len(result) > 1:
            raise PrometheusError('%s has %d series: %s'
                                  % (expr, len(result), result))
        return result[0][1]

    def by(self, label, expr, at=None):
        """``{value of label: value}`` of the series of ``expr``."""
        return {labels.get(label, ''): value
                for labels, value in self.query(expr, at)}

    def last_scrape(self, job):
        """Unix time of ``job``'s last scrape (every target's oldest),
        or None while a target of it is down. (``timestamp()`` of a
        selector is its samples' time; of anything else, the query's.)
        """
        if self.value('min(up{job="%s"})' % job) != 1:
            return None
        return self.value('min(timestamp(up{job="%s"}))' % job)

    def wait_for_scrapes(self, since, jobs=None, timeout=WAIT_TIMEOUT):
        """Wait until every job (of ``jobs``) was scraped successfully
        after Unix time ``since`` (by more than STAMP_TOLERANCE): what
        its processes had done by then is in Prometheus. Returns that
        time."""
        deadline = time.monotonic() + timeout
        jobs = sorted(self.targets if jobs is None else jobs)
        while True:
            scraped = [self.last_scrape(job) for job in jobs]
            if all(when is not None and when > since + STAMP_TOLERANCE
                   for when in scraped):
                return max(scraped)
            if time.monotonic() > deadline:
                raise PrometheusError(
                    'no scrape of %s after %.3f in %ds (last: %s); '
                    'targets: %s' % (jobs, since, timeout, scraped,
                                     self.api('targets')['activeTargets']))
            time.sleep(0.2)

    def wait_for(self, expr, predicate, timeout=WAIT_TIMEOUT):
        """Wait until ``predicate(value of expr)``; that value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.value(expr)
            if predicate(value):
                return value
            if time.monotonic() > deadline:
                raise PrometheusError('%s is still %s after %ds'
                                      % (expr, value, timeout))
            time.sleep(0.2)

    def rules_health(self):
        """``{rule name: (health, last error)}`` of every loaded rule."""
        return {rule['name']: (rule['health'], rule.get('lastError', ''))
                for group in self.api('rules')['groups']
                for rule in group['rules']}
