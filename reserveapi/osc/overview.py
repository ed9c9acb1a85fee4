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

"""``openstack baremetal reservation``: our commands, one line each.

For a name that is no command, cliff's help lists every command that
begins with its first word: ``openstack baremetal reservation --help``
listed all of python-ironicclient's ``baremetal`` commands. A command of
this very name makes that help, and the bare name, list ours.
"""

import argparse
import importlib.metadata
import textwrap

from osc_lib import exceptions
from osc_lib.command import command

COMMAND_GROUP = 'openstack.baremetal_reservation.v1'
PREFIX = 'baremetal_reservation'


def listing():
    """``  capacity   Nodes per resource class...``, one line per command
    of ours, from the entry points openstackclient loads them by."""
    commands = []
    for entry_point in importlib.metadata.entry_points(group=COMMAND_GROUP):
        if entry_point.name == PREFIX:
            continue
        name = entry_point.name[len(PREFIX) + 1:].replace('_', ' ')
        doc = entry_point.load().__doc__ or ''
        commands.append((name, ' '.join(doc.split('\n\n')[0].split())))
    width = max(len(name) for name, _summary in commands) + 4
    return '\n'.join(textwrap.fill(
        summary, 79, initial_indent='  ' + name.ljust(width - 2),
        subsequent_indent=' ' * width) for name, summary in sorted(commands))


class Overview(command.Command):
    """List the bare metal reservation commands."""

    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        # The listing's lines as they are, not refilled into a paragraph.
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
        # What follows a mistyped command's name lands here.
        parser.add_argument('words', nargs='*', help=argparse.SUPPRESS)
        return parser

    def get_epilog(self):
        return ('commands ("openstack baremetal reservation COMMAND --help" '
                'shows one):\n%s' % listing())

    def take_action(self, parsed_args):
        if parsed_args.words:
            raise exceptions.CommandError(
                '"openstack baremetal reservation %s" is no command; '
                '"openstack baremetal reservation" lists them.'
                % ' '.join(parsed_args.words))
        self.app.stdout.write(self.get_epilog() + '\n')
