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

"""``POST /v1/candidates``: the story, who counts over which nodes, and
the property that holds it to ``POST /v1/reservations``: reserving again
and again gets exactly ``count`` nodes, then a 409 that counts what
``excluded`` counts.
"""

import copy
import random
import re

from reserveapi_testing import examples
from reserveapi_testing import inventory
from tests.functional import base
from tests.functional.api import reservation_base as rbase

VERSION = {'OpenStack-API-Version': 'baremetal-reservation 1.3'}
SAMPLE_PROJECT = rbase.SAMPLE_PROJECT
OTHER_PROJECT = rbase.OTHER_PROJECT
sample = examples.sample


def parse_refusal(detail):
    """``(total, {reason: count}, {capability: [[value, count], ...]})``
    from a 409's "No valid node: 5 nodes: 2 wrong resource class, ...;
    capability boot_mode: closest nodes have bios (1)"."""
    text = detail[len('No valid node: '):]
    head, *capabilities = text.split('; capability ')
    total, _nodes, reasons = head.partition(
        ' nodes' if ' nodes' in head else ' node')
    counts = {}
    for reason in filter(None, reasons.lstrip(':').split(', ')):
        count, _space, phrase = reason.strip().partition(' ')
        counts[phrase] = int(count)
    values = {}
    for entry in capabilities:
        key, _colon, shown = entry.partition(': closest nodes have ')
        values[key] = [[value, int(count)] for value, count in re.findall(
            r'(.+?) \((\d+)\)(?:, |$)', shown)]
    return int(total), counts, values


class CandidatesTestCase(rbase.ReservationTestCase):

    def candidates(self, request_spec=None, headers=None, version=VERSION,
                   **fields):
        body = {'request_spec': (examples.REQUEST_SPEC if request_spec is None
                                 else request_spec)}
        body.update(fields)
        return self.request('POST', '/v1/candidates', body,
                            headers=dict(headers or self.admin_headers,
                                         **version))

    def answer(self, request_spec=None, **fields):
        response = self.candidates(request_spec, **fields)
        self.assertEqual(200, response.status_int, response.text)
        return response.json

    def assertAddsUp(self, answer):
        self.assertEqual(answer['count'], sum(
            row['count'] for row in answer['by_partition']))
        self.assertEqual(answer['total'], answer['count'] + sum(
            row['count'] for row in answer['excluded']))

    def assertRefusalCounts(self, answer, response):
        """The 409 counts what ``answer['excluded']`` counts."""
        detail = self.assertNoValidNode(response)
        total, counts, values = parse_refusal(detail)
        self.assertEqual(answer['total'], total, detail)
        self.assertEqual({row['reason']: row['count']
                          for row in answer['excluded']}, counts, detail)
        self.assertEqual({row['item']: row['values']
                          for row in answer['excluded']
                          if row['criterion'] == 'capabilities'},
                         {key: [{'value': value, 'count': count}
                                for value, count in shown]
                          for key, shown in values.items()}, detail)


class TestCandidates(CandidatesTestCase):
    scenarios = base.EVERY_BACKEND

    def sample_inventory(self):
        self.nodes(
            inventory.node('node-gold-1', shard='rack-1'),
            inventory.node('node-gold-2', shard='rack-2', memory_mb=16384),
            inventory.node('node-gold-3', shard='rack-1'),
            inventory.node('node-gold-4', capabilities='boot_mode:bios,'
                           'supports_uefi:true,has_gpu:true'),
            inventory.node('node-gold-5', traits=['HW_CPU_X86_AVX2']),
            inventory.node('node-gold-6', maintenance=True),
            inventory.node('node-silver-1',
                           resource_class='baremetal-silver'))
        self.assertReserved(self.reserve(candidate_nodes=['node-gold-3']),
                            'node-gold-3')

    def test_sample(self):
        self.sample_inventory()
        response = self.request(
            'POST', '/v1/candidates',
            sample('candidates/candidates-request.json'),
            headers=dict(self.admin_headers, **VERSION))
        self.assertEqual(200, response.status_int, response.text)
        self.assertMatchesSample(response.json,
                                 'candidates/candidates-response.json')
        self.assertAddsUp(response.json)

    def test_holds_nothing_and_answers_what_reserving_gets(self):
        self.sample_inventory()
        # Best fit first, as a reservation picks among the best one.
        self.config(subset_size=1, group='matcher')
        answer = self.answer(project_id=SAMPLE_PROJECT)
        self.assertEqual(['node-gold-1', 'node-gold-2'],
                         [node['name'] for node in answer['nodes']])
        self.assertEqual(1, len(self.list_reservations()))
        reserved = {self.assertReserved(self.reserve(), name)['node_name']
                    for name in ('node-gold-1', 'node-gold-2')}
        self.assertEqual({'node-gold-1', 'node-gold-2'}, reserved)
        refusal = self.reserve()
        drained = self.answer(project_id=SAMPLE_PROJECT)
        self.assertEqual((0, [], []), (drained['count'],
                                       drained['by_partition'],
                                       drained['nodes']))
        self.assertRefusalCounts(drained, refusal)
        before = {row['reason']: row['count'] for row in answer['excluded']}
        before['reserved'] += answer['count']
        self.assertEqual(before, {row['reason']: row['count']
                                  for row in drained['excluded']})

    def test_partition_limit_and_candidate_nodes(self):
        self.sample_inventory()
        answer = self.answer(shard='rack-1', limit=0)
        self.assertEqual((1, [], [{'shard': 'rack-1', 'conductor_group': '',
                                   'count': 1}]),
                         (answer['count'], answer['nodes'],
                          answer['by_partition']))
        self.assertIn({'criterion': 'partition', 'item': None, 'count': 4,
                       'reason': 'in another partition', 'values': []},
                      answer['excluded'])
        answer = self.answer(candidate_nodes=['node-gold-2', 'node-gold-4'],
                             limit=1)
        self.assertEqual((1, ['node-gold-2']), (
            answer['count'], [node['name'] for node in answer['nodes']]))

    def test_python_checks_what_sql_cannot(self):
        # "=" (at least) and "<in>" are decided in Python, per distinct
        # set of capabilities, and counted as the 409 counts them.
        self.nodes(
            inventory.node('four', capabilities='gpus:4,cpu:Xeon Gold'),
            inventory.node('eight', capabilities='gpus:8,cpu:Xeon Gold',
                           memory_mb=9000),
            inventory.node('eight-too', capabilities='gpus:8,cpu:Xeon Gold',
                           memory_mb=9001),
            inventory.node('one', capabilities='gpus:1,cpu:Xeon Gold'),
            inventory.node('epyc', capabilities='gpus:8,cpu:EPYC'),
            inventory.node('none', capabilities=''))
        request_spec = rbase.spec(extra_specs={
            'capabilities': None, 'capabilities:boot_mode': None,
            'capabilities:gpus': '= 4', 'capabilities:cpu': '<in> Gold'})
        answer = self.answer(request_spec)
        self.assertEqual(3, answer['count'])
        self.assertEqual([{'criterion': 'capabilities', 'item': 'gpus',
                           'count': 2, 'reason': 'fail capability gpus',
                           'values': [{'value': '1', 'count': 1},
                                      {'value': '<unset>', 'count': 1}]},
                          {'criterion': 'capabilities', 'item': 'cpu',
                           'count': 1, 'reason': 'fail capability cpu',
                           'values': [{'value': 'EPYC', 'count': 1}]}],
                         answer['excluded'])
        self.assertEqual(['four', 'eight', 'eight-too'],
                         [node['name'] for node in answer['nodes']])
        for _node in range(3):
            self.assertEqual(201, self.reserve(request_spec).status_int)
        self.assertRefusalCounts(self.answer(request_spec),
                                 self.reserve(request_spec))

    def test_without_explaining(self):
        # The cheap question of a dashboard: count and partitions only.
        self.sample_inventory()
        answer = self.answer(explain=False, limit=0)
        self.assertEqual({'count': 2, 'nodes': [], 'by_partition': [
            {'shard': 'rack-1', 'conductor_group': '', 'count': 1},
            {'shard': 'rack-2', 'conductor_group': '', 'count': 1}]},
            answer)

    def test_a_spec_no_node_can_match_is_a_400(self):
        self.nodes(inventory.node('node-gold-1'))
        response = self.candidates(rbase.spec(extra_specs={
            'capabilities:gpus': '> 4'}))
        self.assertError(response, 400, 'reserveapi.invalid_request_spec')
        self.assertError(self.candidates(limit=-1), 400, 'reserveapi.invalid')

    def test_not_there_before_its_microversion(self):
        self.nodes(inventory.node('node-gold-1'))
        for version in ('1.0', '1.2'):
            response = self.candidates(version={
                'OpenStack-API-Version': 'baremetal-reservation ' + version})
            error = self.assertError(response, 404, 'reserveapi.not_found')
            self.assertEqual(
                'POST /v1/candidates needs microversion 1.3 or later; this '
                'request asked for %s: send "OpenStack-API-Version: '
                'baremetal-reservation 1.3".' % version, error['detail'])
        self.assertEqual(1, self.answer()['count'])


class TestWhoCountsWhat(CandidatesTestCase):
    """A project's reader counts over the nodes its project may use and
    sees only those; admin and service count over every node."""

    scenarios = base.EVERY_BACKEND

    def setUp(self):
        super().setUp()
        self.nodes(inventory.node('shared'),
                   inventory.node('mine', owner=SAMPLE_PROJECT),
                   inventory.node('leased-to-me', owner=OTHER_PROJECT,
                                  lessee=SAMPLE_PROJECT),
                   inventory.node('theirs', owner=OTHER_PROJECT),
                   inventory.node('theirs-too', lessee=OTHER_PROJECT))
        self.reader = self.headers_for(['reader'], project_id=SAMPLE_PROJECT)

    def names(self, answer):
        return sorted(node['name'] for node in answer['nodes'])

    def test_reader_counts_its_project_s_nodes_only(self):
        response = self.candidates(headers=self.reader)
        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual((3, 3, []), (response.json['count'],
                                      response.json['total'],
                                      response.json['excluded']))
        # "shared" has no owner: counted, but only admin sees it.
        self.assertEqual(['leased-to-me', 'mine'],
                         self.names(response.json))
        self.assertNotIn(inventory.node_uuid('theirs'), response.text)
        self.assertNotIn(inventory.node_uuid('shared'), response.text)

    def test_reader_may_not_ask_for_another_project(self):
        for project in (OTHER_PROJECT, 'someone-else'):
            self.assertError(self.candidates(headers=self.reader,
                                             project_id=project),
                             403, 'reserveapi.forbidden')
        self.assertEqual(200, self.candidates(
            headers=self.reader, project_id=SAMPLE_PROJECT).status_int)
        self.assertError(self.candidates(headers=self.headers_for(['member'])),
                         403, 'reserveapi.forbidden')

    def test_admin_and_service_count_every_node(self):
        for headers in (self.admin_headers, self.service_headers):
            answer = self.answer(headers=headers, project_id=SAMPLE_PROJECT)
            self.assertEqual((3, 5), (answer['count'], answer['total']))
            self.assertEqual([{'criterion': 'owner', 'item': None,
                               'count': 2, 'reason': "not the project's",
                               'values': []}], answer['excluded'])
        answer = self.answer(headers=self.service_headers,
                             project_id=OTHER_PROJECT)
        self.assertEqual(['leased-to-me', 'shared', 'theirs', 'theirs-too'],
                         self.names(answer))


# The property: random inventories and specs over a few values of every
# field the matcher reads, so that specs and nodes meet often. The
# capability requirements are Nova's operator vectors
# (tests/unit/matcher/test_operators.py), decided in SQL or in Python.
# Each case is a seed: a failure names the one to run again.
CASES = 40
SPECS_PER_CASE = 3
CLASSES = ('baremetal-gold', 'baremetal-silver')
TRAITS = ('CUSTOM_RAID', 'CUSTOM_GPU', 'HW_CPU_X86_AVX2')
CAPABILITY_VALUES = ('uefi', 'bios', '4', '8', '16', 'Xeon Gold', 'true',
                     'True', '')
REQUIREMENTS = ('uefi', '= 8', '== 8', '!= 8', '>= 8', '<= 8', 's== bios',
                's!= bios', 's< c', 's>= 8', '<in> Gold', '<all-in> Xeon Gold',
                '<or> uefi <or> bios', '<or> 4 <or> 16')


def random_node(rng, index):
    capabilities = ','.join(
        '%s:%s' % (key, value) for key, value in (
            ('boot_mode', rng.choice(CAPABILITY_VALUES)),
            ('gpus', rng.choice(CAPABILITY_VALUES))) if value)
    return inventory.node(
        'node-%d' % index, resource_class=rng.choice(CLASSES),
        memory_mb=rng.choice((4096, 8192)),
        cpu_arch=rng.choice(('x86_64', 'x86_64', 'aarch64')),
        traits=[trait for trait in TRAITS if rng.random() < 0.6],
        capabilities=capabilities,
        provision_state=rng.choice(('available',) * 4 + ('active',)),
        maintenance=rng.random() < 0.15,
        owner=rng.choice((None,) * 4 + (SAMPLE_PROJECT, OTHER_PROJECT)),
        lessee=rng.choice((None,) * 6 + (SAMPLE_PROJECT,)),
        shard=rng.choice((None, 'rack-1', 'rack-2')))


def random_spec(rng):
    """``(request spec, shard or None)``; most specs ask little, so that
    most of them match some nodes."""
    extra_specs = {'resources:VCPU': '0', 'resources:DISK_GB': '0'}
    memory_mb = rng.choice((0, 0, 8192))
    if not memory_mb:
        extra_specs['resources:MEMORY_MB'] = '0'
    resource_class = rng.choice((None, None) + CLASSES)
    if resource_class:
        extra_specs['resources:CUSTOM_%s' % resource_class.upper().replace(
            '-', '_')] = '1'
    traits = rng.sample(TRAITS, rng.choice((0, 0, 1, 2)))
    for index, trait in enumerate(traits):
        extra_specs['trait:' + trait] = ('forbidden' if index == 1
                                         else 'required')
    for key in ('boot_mode', 'gpus'):
        if rng.random() < 0.4:
            extra_specs['capabilities:' + key] = rng.choice(REQUIREMENTS)
    if rng.random() < 0.2:
        extra_specs['capabilities'] = rng.choice(('gpus', 'boot_mode:uefi'))
    arch = rng.choice((None, None, 'x86_64', 'amd64', 'aarch64'))
    return ({'memory_mb': memory_mb, 'vcpus': 1, 'extra_specs': extra_specs,
             'image': {'id': None, 'properties': (
                 {'hw_architecture': arch} if arch else {})}},
            rng.choice((None, None, None, 'rack-1')))


class TestAgainstReservations(CandidatesTestCase):
    """For random specs over random inventories: ``count`` reservations,
    then a 409 that counts what ``excluded`` counts, before and after."""

    scenarios = base.EVERY_BACKEND

    def test_count_and_excluded_are_what_reserving_meets(self):
        matched = 0
        for case in range(CASES):
            rng = random.Random(case)
            size = rng.randint(0, 12)
            self.nodes(*[random_node(rng, index) for index in range(size)])
            for _spec in range(SPECS_PER_CASE):
                request_spec, shard = random_spec(rng)
                with self.subTest(case=case, spec=request_spec, shard=shard):
                    matched += self.assertReservingMeetsTheAnswer(
                        size, request_spec, {'shard': shard} if shard else {})
        # The cases do reach both sides of the property.
        self.assertGreater(matched, CASES)

    def assertReservingMeetsTheAnswer(self, inventory_size, request_spec,
                                      partition):
        """Reserve until refused; how many nodes were reserved."""
        answer = self.answer(copy.deepcopy(request_spec),
                             project_id=SAMPLE_PROJECT, limit=20,
                             **partition)
        self.assertAddsUp(answer)
        self.assertEqual(inventory_size, answer['total'])
        self.assertEqual(
            {key: answer[key] for key in ('count', 'by_partition', 'nodes')},
            self.answer(request_spec, project_id=SAMPLE_PROJECT, limit=20,
                        explain=False, **partition))
        named = {node['name'] for node in answer['nodes']}
        self.assertEqual(answer['count'], len(named))
        reserved = set()
        headers = dict(self.admin_headers, **VERSION)
        for _node in range(answer['count']):
            response = self.reserve(request_spec, headers=headers,
                                    project_id=SAMPLE_PROJECT, **partition)
            self.assertEqual(201, response.status_int, response.text)
            reserved.add(response.json['node_name'])
        self.assertEqual(named, reserved)
        refusal = self.reserve(request_spec, headers=headers,
                               project_id=SAMPLE_PROJECT, **partition)
        drained = self.answer(request_spec, project_id=SAMPLE_PROJECT,
                              **partition)
        self.assertEqual(0, drained['count'])
        self.assertRefusalCounts(drained, refusal)
        before = {row['reason']: row['count'] for row in answer['excluded']}
        if answer['count']:
            before['reserved'] = before.get('reserved', 0) + answer['count']
        self.assertEqual(before, {row['reason']: row['count']
                                  for row in drained['excluded']})
        for reservation in self.list_reservations():
            self.release(reservation['uuid'])
        return answer['count']
