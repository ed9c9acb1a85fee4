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

import os
from unittest import mock

import fixtures
from oslo_policy import policy as oslo_policy

from reserveapi import policy
from reserveapi.common import context as context_mod
from reserveapi.common import exception
from reserveapi.policies import capacity as capacity_policy
from reserveapi.policies import hold as hold_policy
from reserveapi.policies import node as node_policy
from reserveapi.policies import reservation as reservation_policy
from tests import base


class PolicyFileCheckTest(base.TestCase):
    """The policy file is looked at once per interval, and an edit still
    takes effect without a restart."""

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'policy.yaml')
        policy.get_enforcer()  # registers the [oslo_policy] options
        self.config(policy_file=self.path, group='oslo_policy')
        policy.reset()  # an enforcer keeps the file name it was made with
        self.now = 1000.0
        self.useFixture(fixtures.MockPatch('time.monotonic',
                                           side_effect=lambda: self.now))
        self.admin = context_mod.RequestContext(
            user_id='u', project_id='p', roles=['admin', 'member',
                                                'reader'])

    def write(self, rule):
        with open(self.path, 'w') as stream:
            stream.write('"%s": "%s"\n' % (reservation_policy.GET, rule))
        # The file's mtime must move for oslo.policy to read it again.
        self.mtime = getattr(self, 'mtime', 0) + 10
        os.utime(self.path, (self.mtime, self.mtime))

    def authorize(self):
        policy.authorize(reservation_policy.GET, self.admin)

    def test_an_edit_takes_effect_after_the_interval(self):
        self.write('@')
        self.authorize()
        self.write('!')
        self.now += policy.FILE_CHECK_INTERVAL / 2
        self.authorize()  # not looked at yet
        self.now += policy.FILE_CHECK_INTERVAL
        self.assertRaises(exception.Forbidden, self.authorize)

    def test_files_are_not_looked_up_between_checks(self):
        self.write('@')
        self.authorize()
        with mock.patch.object(oslo_policy.Enforcer, 'load_rules',
                               autospec=True) as load:
            for _ in range(5):
                self.authorize()
            self.assertEqual(0, load.call_count)
            self.now += policy.FILE_CHECK_INTERVAL
            self.authorize()
            self.assertEqual(1, load.call_count)


class ProjectViewsTest(base.TestCase):
    """What ``reserveapi-status`` warns of: a policy file that opens the
    whole inventory, or capacity, to every project's reader again."""

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'policy.yaml')
        policy.get_enforcer()
        self.config(policy_file=self.path, group='oslo_policy')
        policy.reset()
        self.addCleanup(policy.reset)

    def test_the_defaults_open_neither(self):
        with open(self.path, 'w') as stream:
            stream.write('"%s": "role:admin"\n' % reservation_policy.GET)
        self.assertEqual([], policy.opened_to_readers(
            (node_policy.LIST_ALL, capacity_policy.GET)))

    def test_a_file_that_opens_one_is_named(self):
        with open(self.path, 'w') as stream:
            stream.write('"%s": "role:reader"\n' % capacity_policy.GET)
        self.assertEqual([capacity_policy.GET], policy.opened_to_readers(
            (node_policy.LIST_ALL, capacity_policy.GET)))


class UnknownNamesTest(base.TestCase):
    """A policy file may name a rule ours is deprecated from."""

    def test_a_deprecated_name_is_known(self):
        enforcer = oslo_policy.Enforcer(policy.CONF)
        old = oslo_policy.DeprecatedRule('reserveapi:old_name',
                                         'role:admin',
                                         deprecated_reason='renamed',
                                         deprecated_since='1.1')
        enforcer.register_default(oslo_policy.RuleDefault(
            'reserveapi:new_name', 'role:admin', deprecated_rule=old))
        enforcer.file_rules = {
            name: oslo_policy.RuleDefault(name, 'role:admin')
            for name in ('reserveapi:old_name', 'reserveapi:typo')}
        self.assertEqual(['reserveapi:typo'], policy._unknown_names(enforcer))


class HoldRulesTest(base.TestCase):
    """The default rules of holds, on a hold of project ``p``."""

    def allowed(self, rule, roles, project_id='p'):
        context = context_mod.RequestContext(
            user_id='u', project_id=project_id, roles=roles)
        try:
            policy.authorize(rule, context, {'project_id': 'p'})
        except exception.Forbidden:
            return False
        return True

    def test_who_may_do_what(self):
        personas = {
            'admin': (['admin', 'manager', 'member', 'reader'], 'q'),
            'service': (['service'], 'service'),
            'manager': (['manager', 'member', 'reader'], 'p'),
            'member': (['member', 'reader'], 'p'),
            'reader': (['reader'], 'p'),
            "another project's manager": (['manager', 'member', 'reader'],
                                          'q'),
        }
        expected = {
            hold_policy.CREATE: {'admin', 'service'},
            hold_policy.UPDATE: {'admin', 'service'},
            hold_policy.LIST_ALL: {'admin', 'service'},
            hold_policy.GET: {'admin', 'service', 'manager', 'member',
                              'reader'},
            hold_policy.LIST: {'admin', 'service', 'manager', 'member',
                               'reader'},
            hold_policy.CANCEL: {'admin', 'service', 'manager'},
        }
        self.assertEqual(expected, {
            rule: {name for name, (roles, project_id) in personas.items()
                   if self.allowed(rule, roles, project_id)}
            for rule in expected})
