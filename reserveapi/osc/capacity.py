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


"""``openstack baremetal reservation capacity [--host]``: per resource
class, what each compute host reports to its resource tracker.
"""

from reserveapi.osc import common


class ShowCapacity(common.Lister):
    """Nodes per resource class: total, available, reserved, and summed
    memory, CPUs and disk.
    """

    columns = ('Resource Class', 'Total', 'Available', 'Reserved',
               'Memory MB', 'VCPUs', 'Local GB')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--host', metavar='<host>',
            help='Also count what this compute host has reserved.')
        return parser

    def chosen_columns(self, parsed_args):
        if parsed_args.host:
            return self.columns + ('Reserved By Host',)
        return self.columns

    def take_action(self, parsed_args):
        return self.table(parsed_args, self.clients.reservations.capacity(
            host=parsed_args.host))
