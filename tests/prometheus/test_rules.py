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

"""The rules we ship (etc/prometheus/reserveapi-rules.yaml): valid for
``promtool check rules``, every alert fired by a ``promtool test rules``
case of etc/prometheus/tests/, and every alert in the admin guide."""

import pathlib
import subprocess

from oslotest import base
import yaml

from reserveapi_testing import prometheus

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTS = sorted((ROOT / 'etc' / 'prometheus' / 'tests').glob('*.yaml'))
GUIDE = ROOT / 'doc' / 'source' / 'admin' / 'monitoring.rst'


def promtool(*args):
    return subprocess.run(  # noqa: S603
        [prometheus.binary('promtool')] + list(args), capture_output=True,
        text=True, timeout=120, check=False, cwd=str(ROOT))


def alerts():
    rules = yaml.safe_load(prometheus.RULES.read_text())
    return sorted(rule['alert'] for group in rules['groups']
                  for rule in group['rules'] if 'alert' in rule)


class TestRules(base.BaseTestCase):

    def test_promtool_checks_the_rules(self):
        result = promtool('check', 'rules', str(prometheus.RULES))
        self.assertEqual(0, result.returncode, result.stdout + result.stderr)
        self.assertIn('SUCCESS', result.stdout)

    def test_promtool_unit_tests_pass(self):
        self.assertTrue(TESTS)
        result = promtool('test', 'rules', *map(str, TESTS))
        self.assertEqual(0, result.returncode, result.stdout + result.stderr)

    def test_every_alert_fires_in_a_unit_test(self):
        fired = set()
        for path in TESTS:
            for case in yaml.safe_load(path.read_text())['tests']:
                fired.update(test['alertname']
                             for test in case.get('alert_rule_test', ())
                             if test.get('exp_alerts'))
        self.assertGreaterEqual(len(alerts()), 7)
        self.assertEqual([], [name for name in alerts()
                              if name not in fired])

    def test_every_alert_is_in_the_admin_guide(self):
        guide = GUIDE.read_text()
        self.assertEqual([], [name for name in alerts()
                              if '``%s``' % name not in guide])
