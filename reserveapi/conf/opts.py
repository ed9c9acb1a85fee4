"""Entry points for oslo-config-generator."""

from reserveapi.conf import api
from reserveapi.conf import database
from reserveapi.conf import default
from reserveapi.conf import healthcheck
from reserveapi.conf import inventory
from reserveapi.conf import matcher
from reserveapi.conf import mirror
from reserveapi.conf import nova
from reserveapi.conf import placement
from reserveapi.conf import reservations

MODULES = (default, api, database, healthcheck, inventory, matcher, mirror,
           nova, placement, reservations)


def list_opts():
    """[(group, [opts])] for the oslo.config.opts entry point."""
    groups = {}
    for module in MODULES:
        for group, opts in module.list_opts().items():
            groups.setdefault(group, []).extend(opts)
    return sorted(groups.items())


def update_opt_defaults():
    """oslo.config.opts.defaults: our defaults for library options."""
    database.set_lib_defaults()
    healthcheck.set_lib_defaults()
