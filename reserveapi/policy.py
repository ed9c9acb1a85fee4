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

import difflib
import logging
import re
import threading
import time

from oslo_config import cfg
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
            # oslo.policy 6 always checks scope (scope_types) and has
            # no enforce_scope; the new defaults are said for clarity.
            policy_opts.set_defaults(CONF, enforce_new_defaults=True)
            enforcer = _Enforcer(CONF)
            enforcer.register_defaults(policies.list_rules())
            _ENFORCER = enforcer
    return _ENFORCER


def check_at_startup():
    """A policy file that is missing where configured, does not parse,
    holds a rule that does not parse or names a rule we do not have stops
    the API at start-up, named. Otherwise oslo.policy would log a
    traceback and deny, or ignore the rule, on every request.

    :raises: ConfigurationError
    """
    enforcer = get_enforcer()
    path = CONF.oslo_policy.policy_file
    if _configured(path) and not CONF.find_file(path):
        raise exception.ConfigurationError(
            '[oslo_policy] policy_file %s is not there: write it, or remove '
            'the option to use the default rules.' % path)
    silenced = _Silenced()
    parser_log = logging.getLogger('oslo_policy._parser')
    parser_log.addFilter(silenced)
    try:
        enforcer.load_rules(force_reload=True)
    except ValueError as exc:
        raise exception.ConfigurationError(
            '[oslo_policy] policy_file %s is not valid: %s.' % (
                enforcer.policy_path or path,
                ' '.join(str(exc).split()).rstrip('.')))
    finally:
        parser_log.removeFilter(silenced)
    where = enforcer.policy_path or path
    broken = sorted(name for name, rule in enforcer.file_rules.items()
                    if str(rule.check) == '!'
                    and rule.check_str.strip() != '!')
    if broken:
        raise exception.ConfigurationError(
            '[oslo_policy] policy_file %s: %s does not parse: see '
            '"oslopolicy-sample-generator --namespace reserveapi" for the '
            'syntax.' % (where, ', '.join(
                '"%s": "%s"' % (name, enforcer.file_rules[name].check_str)
                for name in broken)))
    unknown = _unknown_names(enforcer)
    if unknown:
        raise exception.ConfigurationError(
            '[oslo_policy] policy_file %s names %s, which reserveapi has no '
            'rule of and no rule refers to%s.' % (
                where, ', '.join(unknown), _meant(unknown[0], enforcer)))


class _Silenced(logging.Filter):
    """Drops oslo.policy's traceback for a rule that does not parse: the
    start-up check says the same in one line."""

    def filter(self, record):
        return False


def _configured(path):
    """True when the operator named the policy file, rather than leaving
    oslo.policy's default name, which may well not exist."""
    location = CONF.get_location('policy_file', 'oslo_policy')
    return (location is not None and location.location
            not in (cfg.Locations.opt_default, cfg.Locations.set_default))


def _unknown_names(enforcer):
    """Rules of the file that nothing uses: neither ours (nor a name one
    of ours is deprecated from, which oslo.policy still reads) nor an
    alias that another rule refers to as ``rule:NAME``."""
    known = set(enforcer.registered_rules)
    referred = set()
    for rule in list(enforcer.file_rules.values()) + list(
            enforcer.registered_rules.values()):
        referred.update(_RULE_REFERENCE.findall(rule.check_str))
    for rule in enforcer.registered_rules.values():
        if getattr(rule, 'deprecated_rule', None):
            known.add(rule.deprecated_rule.name)
    return sorted(name for name in enforcer.file_rules
                  if name not in known and name not in referred)


def _meant(name, enforcer):
    close = difflib.get_close_matches(
        name, sorted(enforcer.registered_rules), n=1, cutoff=0.8)
    return ' (did you mean %s?)' % close[0] if close else ''


_RULE_REFERENCE = re.compile(r'\brule:([^\s()]+)')


def opened_to_readers(rules):
    """The ``rules`` that let a plain reader of one project act on
    another's: what a policy file written for an older default may still
    open (reserveapi-status upgrade check)."""
    enforcer = get_enforcer()
    reader = {'roles': ['reader'], 'project_id': 'a-project',
              'user_id': 'a-reader'}
    return [rule for rule in rules if enforcer.enforce(
        rule, {'project_id': 'another-project'}, reader)]


def reset():
    global _ENFORCER
    with _ENFORCER_LOCK:
        _ENFORCER = None


def listed_project(list_all_rule, context, requested):
    """The project a list is filtered by: ``requested`` (None for every
    project) for a caller ``list_all_rule`` allows, else the caller's
    own, whatever it asked for.

    :raises: Forbidden for a caller the rule refuses who has no project
        ("project_id:%(project_id)s" matched None to None: with no
        project to restrict the list to, there is none)
    """
    try:
        authorize(list_all_rule, context)
        return requested
    except exception.Forbidden:
        if not context.project_id:
            raise
        return context.project_id


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
