"""The oslo.policy enforcer; the rules themselves live in policies/."""

import threading

from oslo_config import cfg
from oslo_policy import opts as policy_opts
from oslo_policy import policy

from reserveapi import policies
from reserveapi.common import exception

_ENFORCER = None
_ENFORCER_LOCK = threading.Lock()


def get_enforcer(conf=None):
    """Entry point for oslopolicy tools and for authorize().

    Built whole before it is published, under a lock: a threaded server
    must never see an enforcer whose rules are not registered yet.
    """
    global _ENFORCER
    with _ENFORCER_LOCK:
        if _ENFORCER is None:
            conf = conf or cfg.CONF
            policy_opts.set_defaults(conf, enforce_scope=True,
                                     enforce_new_defaults=True)
            enforcer = policy.Enforcer(conf)
            enforcer.register_defaults(policies.list_rules())
            _ENFORCER = enforcer
    return _ENFORCER


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
