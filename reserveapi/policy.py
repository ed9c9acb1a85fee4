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

"""The oslo.policy enforcer; the rules themselves live in policies/."""

import threading
import time

from oslo_policy import opts as policy_opts
from oslo_policy import policy

from reserveapi import policies
from reserveapi.common import exception
import reserveapi.conf

CONF = reserveapi.conf.CONF
_ENFORCER = None
_ENFORCER_LOCK = threading.Lock()

FILE_CHECK_INTERVAL = 1.0
"""Seconds between two looks at the policy file and policy.d."""


class _Enforcer(policy.Enforcer):
    """An enforcer that looks for changed policy files at most once per
    FILE_CHECK_INTERVAL, not on every check.

    oslo.policy looks the file and each policy directory up in every
    configuration directory on each check: about 85 of the 100
    microseconds a check costs. An edited file still takes effect
    without a restart, within a second.
    """

    _next_file_check = 0.0

    def load_rules(self, force_reload=False):
        now = time.monotonic()
        if force_reload or now >= self._next_file_check:
            super().load_rules(force_reload)
            self._next_file_check = now + FILE_CHECK_INTERVAL


def get_enforcer():
    """Entry point for oslopolicy tools and for authorize().

    Built whole before it is published, under a lock: a threaded server
    must never see an enforcer whose rules are not registered yet.
    """
    global _ENFORCER
    with _ENFORCER_LOCK:
        if _ENFORCER is None:
            policy_opts.set_defaults(CONF, enforce_scope=True,
                                     enforce_new_defaults=True)
            enforcer = _Enforcer(CONF)
            enforcer.register_defaults(policies.list_rules())
            _ENFORCER = enforcer
    return _ENFORCER


def check_at_startup():
    """A policy file that does not parse stops the API at start-up, named,
    rather than failing every request that is authorized with a 500.

    :raises: ConfigurationError
    """
    enforcer = get_enforcer()
    try:
        enforcer.load_rules(force_reload=True)
    except ValueError as exc:
        raise exception.ConfigurationError(
            '[oslo_policy] policy_file %s is not valid: %s.' % (
                enforcer.policy_path or CONF.oslo_policy.policy_file,
                ' '.join(str(exc).split()).rstrip('.')))


def reset():
    global _ENFORCER
    with _ENFORCER_LOCK:
        _ENFORCER = None


def authorize(rule, context, target=None):
    """Raise Forbidden unless ``context`` may perform ``rule`` on target."""
    target = target if target is not None else {
        'project_id': context.project_id}
    try:
        get_enforcer().authorize(rule, target, context,
                                 do_raise=True, exc=exception.Forbidden,
                                 action=rule)
    except policy.InvalidScope:
        raise exception.Forbidden(action=rule)
