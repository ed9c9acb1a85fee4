"""The oslo.policy enforcer; the rules themselves live in policies/."""

from oslo_config import cfg
from oslo_policy import opts as policy_opts
from oslo_policy import policy

from reserveapi import policies
from reserveapi.common import exception

_ENFORCER = None


def get_enforcer(conf=None):
    """Entry point for oslopolicy tools and for authorize()."""
    global _ENFORCER
    if _ENFORCER is None:
        conf = conf or cfg.CONF
        policy_opts.set_defaults(conf, enforce_scope=True,
                                 enforce_new_defaults=True)
        _ENFORCER = policy.Enforcer(conf)
        _ENFORCER.register_defaults(policies.list_rules())
    return _ENFORCER


def reset():
    global _ENFORCER
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
