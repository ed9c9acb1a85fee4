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

"""What an operator asks at 3 a.m., answered by PromQL over a real
Prometheus scraping gunicorn (two API workers) and reserveapi-worker:
capacity per class and partition through a storm of reservations and
releases, the requests sent, the sync's progress, and the mirror's
backlog while Placement is down.
"""

import json
import pathlib
import re
import subprocess
import time
import uuid

import requests
import testtools
from testtools import content

from reserveapi_testing import monitored
from reserveapi_testing import prometheus

ROOT = pathlib.Path(__file__).resolve().parents[2]
GUIDE = ROOT / 'doc' / 'source' / 'admin' / 'monitoring.rst'
DOCUMENTED = re.compile(r'``(reserveapi_[a-z_]+)(?:``|\{)')
SERIES_SUFFIXES = ('', '_bucket', '_count', '_sum')
HISTOGRAM = ('reserveapi_api_request_duration_seconds_count'
             '{job="reserveapi-api"}')


def documented_families():
    return sorted(set(DOCUMENTED.findall(GUIDE.read_text())))


class TestScrapedByPrometheus(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.deployment = self.useFixture(monitored.MonitoredDeployment())
        self.prometheus = self.deployment.prometheus
        self.addCleanup(self.attach_logs)

    def attach_logs(self):
        """The processes' logs, read before their directory goes."""
        for name in ('api_log', 'worker_log'):
            self.addDetail(name, content.content_from_file(
                getattr(self.deployment, name), buffer_now=True))

    def scraped(self):
        """A time at which every process's state up to now is in
        Prometheus: the end of a scrape of each that began after now."""
        return self.prometheus.wait_for_scrapes(since=time.time())

    def available(self, at):
        return self.prometheus.by(
            'resource_class', 'sum by (resource_class) (max without '
            '(instance, job) (reserveapi_nodes_available))', at)

    def requests_counted(self, at):
        return {(labels['route'], labels['method'], labels['status']): value
                for labels, value in self.prometheus.query(
                    'sum by (route, method, status) (%s)' % HISTOGRAM, at)}

    def test_capacity_requests_sync_and_backlog(self):
        self.check_every_family_is_scraped()
        self.check_the_exposition_with_promtool()
        self.check_the_storm()
        self.check_a_replaced_worker_keeps_its_counts()
        self.check_the_sync_moves()
        self.check_the_backlog_appears_and_drains()
        self.check_the_rules_evaluate()
        self.check_each_api_log_line_has_its_request_id()

    def check_every_family_is_scraped(self):
        self.scraped()
        names = {labels['__name__']
                 for labels, _value in self.prometheus.query(
                     'count by (__name__) ({__name__=~"reserveapi_.+"})')}
        families = documented_families()
        self.assertGreaterEqual(len(families), 30)
        self.assertEqual([], [family for family in families if not any(
            family + suffix in names for suffix in SERIES_SUFFIXES)])
        # Two API workers, one target: every scrape sums both.
        self.assertEqual(1.0, self.prometheus.value(
            'count(up{job="reserveapi-api"} == 1)'))

    def check_the_exposition_with_promtool(self):
        for url in (self.deployment.api_url + '/metrics',
                    'http://127.0.0.1:%d/metrics'
                    % self.deployment.worker_port):
            text = requests.get(url, timeout=30).text
            result = subprocess.run(  # noqa: S603
                [prometheus.binary('promtool'), 'check', 'metrics'],
                input=text, capture_output=True, text=True, timeout=60,
                check=False)
            self.assertEqual(0, result.returncode,
                             '%s: %s%s' % (url, result.stdout,
                                           result.stderr))

    def check_the_storm(self):
        plateaus = monitored.storm_plateaus()
        start = self.scraped()
        before = self.requests_counted(start)
        sent_before = dict(self.deployment.sent)
        self.assertEqual(plateaus[0], self.available(start))
        self.assertEqual(
            {'east': 30.0, 'west': 30.0},
            self.prometheus.by('shard', 'reserveapi_nodes{resource_class='
                               '"%s"}' % monitored.GOLD, start))
        for wave, expected in zip(monitored.STORM, plateaus[1:],
                                  strict=True):
            self.deployment.wave(*wave)
            at = self.scraped()
            self.assertEqual(expected, self.available(at), wave)
            # Every node not free is held, in whichever shard.
            self.assertEqual(
                monitored.NODES[monitored.GOLD] - expected[monitored.GOLD],
                self.prometheus.value(
                    'sum(reserveapi_nodes_reserved{resource_class="%s"})'
                    % monitored.GOLD, at))
            self.assertEqual(
                self.deployment.live_per_host(),
                self.prometheus.by('host', 'reserveapi_reservations_live'
                                   ' > 0', at))
        end = self.scraped()
        # The recording rule the guide graphs, once evaluated after it.
        self.prometheus.wait_for(
            'sum(class:reserveapi_nodes_available:sum)',
            lambda free: free == sum(plateaus[-1].values()))
        after = self.requests_counted(end)
        sent = {key: count - sent_before.get(key, 0)
                for key, count in self.deployment.sent.items()}
        counted = {key: after[key] - before.get(key, 0) for key in after
                   if after[key] != before.get(key, 0)}
        self.assertEqual(sent, counted)
        created = 'sum(reserveapi_reservations_total{outcome="created"})'
        self.assertEqual(
            sum(count for (action, _class, count) in monitored.STORM
                if action == 'reserve'),
            self.prometheus.value(created, end)
            - self.prometheus.value(created, start))

    def check_a_replaced_worker_keeps_its_counts(self):
        """gunicorn replaces a killed worker: what the dead one counted
        still counts, so no counter goes back (a rate() would see a
        reset)."""
        before = self.requests_counted(self.scraped())
        self.deployment.replace_api_worker()
        self.deployment.request('GET', '/v1/capacity')
        after = self.requests_counted(self.scraped())
        key = ('/v1/capacity', 'GET', '200')
        self.assertEqual(before.get(key, 0) + 1, after[key])
        self.assertEqual({k: v for k, v in before.items() if k != key},
                         {k: v for k, v in after.items() if k != key})

    def check_the_sync_moves(self):
        query = ('max(reserveapi_inventory_last_sync_timestamp_seconds'
                 '{source="file"})')
        first = self.prometheus.value(query, self.scraped())
        time.sleep(5)
        at = self.scraped()
        later = self.prometheus.value(query, at)
        self.assertGreater(later, first)
        self.assertLess(at - later, 10)
        self.assertGreater(self.prometheus.value(
            'sum(reserveapi_inventory_sync_duration_seconds_count)', at), 2)

    def check_the_backlog_appears_and_drains(self):
        aggregate = str(uuid.uuid4())
        errors = ('sum(reserveapi_mirror_errors_total'
                  '{error="placement_unavailable"})')
        errors_before = self.prometheus.value(errors, self.scraped())
        self.deployment.placement.stop()
        try:
            statuses = [self.deployment.join_aggregate(aggregate, host)
                        for host in monitored.HOSTS]
            self.assertEqual([202] * len(monitored.HOSTS), statuses)
            at = self.scraped()
            self.assertEqual(len(monitored.HOSTS), self.prometheus.value(
                'max(reserveapi_mirror_pending_changes)', at))
            self.prometheus.wait_for(
                'max(reserveapi_mirror_oldest_pending_age_seconds)',
                lambda age: age is not None and age >= 2)
            self.assertGreater(self.prometheus.value(
                'max(reserveapi_mirror_oldest_pending_attempts)'), 0)
            # The API's inline attempts and the worker's retries.
            self.assertGreater(self.prometheus.value(errors),
                               errors_before + len(monitored.HOSTS))
        finally:
            self.deployment.placement.start()
        self.prometheus.wait_for('max(reserveapi_mirror_pending_changes)',
                                 lambda pending: pending == 0)
        self.assertEqual(len(monitored.HOSTS), self.prometheus.value(
            'max(max_over_time(reserveapi_mirror_pending_changes[1m]))'))
        self.assertEqual(0, self.prometheus.value(
            'max(reserveapi_mirror_oldest_pending_age_seconds)'))
        for host, provider in self.deployment.providers.items():
            self.assertIn(aggregate,
                          self.deployment.placement.aggregates(provider),
                          host)

    def check_the_rules_evaluate(self):
        health = self.prometheus.rules_health()
        self.assertGreaterEqual(len(health), 15)
        self.assertEqual({}, {name: state for name, state in health.items()
                              if state[0] != 'ok'})

    def check_each_api_log_line_has_its_request_id(self):
        with open(self.deployment.api_log) as log:
            lines = log.read().splitlines()
        records = [json.loads(line) for line in lines
                   if line.startswith('{')]
        # gunicorn's access log (reserveapi.wsgi.gunicorn_config's
        # format) ends each line with the request's id.
        accessed = {line.rsplit(' ', 1)[1] for line in lines
                    if '"POST /v1/reservations ' in line}
        self.assertEqual([], sorted(set(self.deployment.request_ids.values())
                                    - accessed))
        reserved = [record for record in records
                    if record['message'].startswith('Reserved node ')]
        self.assertEqual(len(self.deployment.request_ids), len(reserved))
        for record in reserved:
            instance = record['message'].split(' for instance ')[1].split()[0]
            self.assertEqual(self.deployment.request_ids[instance],
                             record['context']['request_id'])
