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

"""What differs by inventory source is answered by the configured
source, for every choice of ``[inventory] source``."""

from reserveapi import conf
from reserveapi.cmd import worker
from reserveapi.inventory import sources
from tests import base


class TestSources(base.TestCase):

    def test_every_choice_has_a_source(self):
        (source,) = [opt for opt in conf.inventory.opts
                     if opt.dest == 'source']
        self.assertEqual(sorted(source.type.choices),
                         sorted(sources.SOURCES))

    def test_file(self):
        self.config(source='file', group='inventory')
        source = sources.configured()
        self.assertIs(sources.FILE, source)
        self.assertEqual((False, False, False, False), (
            source.incremental, source.released_nodes_stale,
            source.reconciled, source.claims_in_ironic))

    def test_ironic(self):
        self.config(source='ironic', group='inventory')
        source = sources.configured()
        self.assertIs(sources.IRONIC, source)
        self.assertEqual((True, True, True, True), (
            source.incremental, source.released_nodes_stale,
            source.reconciled, source.claims_in_ironic))
        self.config(claim_nodes=False, group='ironic')
        self.assertFalse(source.claims_in_ironic)

    def test_the_worker_reconciles_only_what_is_reconciled(self):
        self.config(reconcile_interval=60, group='ironic')
        for name, reconciled in (('file', False), ('ironic', True)):
            self.config(source=name, group='inventory')
            self.assertEqual(reconciled, 'ironic-reconcile' in [
                job for job, _interval, _call in worker.jobs()])
