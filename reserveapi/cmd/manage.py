"""reserveapi-manage: operator commands."""

import sys

from oslo_config import cfg

from reserveapi.common import service

COMMANDS = {}


def _add_commands(subparsers):
    for name, (func, help_text, arguments) in sorted(COMMANDS.items()):
        parser = subparsers.add_parser(name, help=help_text)
        for args, kwargs in arguments:
            parser.add_argument(*args, **kwargs)
        parser.set_defaults(func=func)


COMMAND_OPT = cfg.SubCommandOpt('command', title='Commands',
                                handler=_add_commands)


def main(argv=None):
    cfg.CONF.register_cli_opt(COMMAND_OPT)
    conf = service.prepare_service(sys.argv[1:] if argv is None else argv)
    return conf.command.func(conf)
