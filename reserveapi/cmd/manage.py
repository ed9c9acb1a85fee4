"""reserveapi-manage: operator commands.

Exit codes: 0 success, 1 something could not be done (the output says
what), 2 bad usage.
"""

import sys

from oslo_config import cfg

from reserveapi import reservations
from reserveapi.common import exception
from reserveapi.common import service
from reserveapi.inventory import sync as inventory_sync


def sync_nodes(conf):
    """Upsert the inventory source into the database."""
    try:
        counts = inventory_sync.sync(conf)
    except exception.Invalid as exc:
        print('Inventory not synced: %s' % exc, file=sys.stderr)
        return 1
    print('Nodes: %(added)d added, %(updated)d updated, %(unchanged)d '
          'unchanged, %(removed)d removed, %(flagged)d vanished but kept '
          'while reserved.' % counts)
    return 0


def expire_reservations(conf):
    """Expire reserved reservations older than [reservations]
    reserved_ttl.
    """
    if not conf.reservations.reserved_ttl:
        print('[reservations] reserved_ttl is 0: reservations never '
              'expire.')
        return 0
    print('Expired %d reservations.' % reservations.expire())
    return 0


COMMANDS = {
    'sync-nodes': sync_nodes,
    'expire-reservations': expire_reservations,
}


def _add_commands(subparsers):
    for name, func in sorted(COMMANDS.items()):
        parser = subparsers.add_parser(name, help=func.__doc__.split('\n')[0])
        parser.set_defaults(func=func)


COMMAND_OPT = cfg.SubCommandOpt('command', title='Commands',
                                handler=_add_commands)


def main(argv=None):
    cfg.CONF.register_cli_opt(COMMAND_OPT)
    conf = service.prepare_service(sys.argv[1:] if argv is None else argv)
    return conf.command.func(conf)
