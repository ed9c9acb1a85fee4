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

"""What must hold after a rolling upgrade, each check a ``(name, ok,
problems)``; README.rst says why each matters."""

import collections
import os
import re

from reserveapi import client
from reserveapi.db import derived
from tests.system.soak import soakload
from tests.system.upgrade import load

RESERVED_LINE = re.compile(r'Reserved node (\S+) for instance (\S+)')
REPAIRED = 'Repaired derived rows'
"""What N's inventory sync logs when it rewrote derived rows."""


def _check(name, problems):
    return name, not problems, problems[:20]


def reserved_in_log(path):
    """{instance: node} of every reservation an API logged making."""
    with open(path, errors='replace') as log:
        return {instance: node
                for node, instance in RESERVED_LINE.findall(log.read())}


def answers(recorder, api_logs):
    """No 5xx reached a client (503s included: the front hid every
    stop) and no API logged an unexpected error."""
    errors = ['%d x %d' % (count, status)
              for status, count in sorted(recorder.statuses.items())
              if status >= 500] + [answer for answer in recorder.bad_answers
                                   if answer['status'] >= 500]
    for path in api_logs:
        with open(path, errors='replace') as log:
            errors += ['%s: %s' % (os.path.basename(path), line.strip())
                       for line in log if 'Unexpected error' in line]
    return [_check('no HTTP 5xx answered (%d answers)'
                   % sum(recorder.statuses.values()), errors)]


def connection_errors(front, recorder, stop_windows, origin):
    """Connection errors that reached a client: allowed only while an
    API was being stopped."""
    events = [dict(event, seen_by='front') for event in front.failed]
    events += [dict(event, seen_by='client')
               for event in recorder.connection_failures]
    outside = [dict(event, at=round(event['at'] - origin, 2))
               for event in events
               if not any(start <= event['at'] <= end
                          for start, end in stop_windows)]
    return [_check('no connection error reached a client outside the '
                   'stop of an API (%d within it)'
                   % (len(events) - len(outside)), outside)]


def holds(recorder, monitor, clients, now):
    """No node held by two live reservations: the monitor's reads of the
    database, and the holds as the clients saw them, every grant and
    release through every API (a kept reservation is held until now)."""
    kept = [(reservation['node_uuid'], reservation['uuid'], start, now)
            for each in clients for reservation, start in each.kept]
    return [
        _check('no node or instance held by two live reservations '
               '(monitor)', monitor.doubles),
        _check('no two holds of a node overlapped (%d holds, clients)'
               % (len(recorder.holds) + len(kept)),
               soakload.overlapping_holds(recorder.holds + kept)),
        _check('no client saw an anomaly or gave up',
               recorder.anomalies + recorder.gave_up),
    ]


def kept_reservations(reader, clients, live):
    """Every reservation a client confirmed and kept is still there,
    active, on its node and host; no other is live (every release
    took)."""
    problems = []
    kept = set()
    for each in clients:
        for reservation, _start in each.kept:
            kept.add(reservation['uuid'])
            expected = {'node_uuid': reservation['node_uuid'],
                        'host': reservation['host'], 'state': 'active'}
            try:
                now = reader.get(reservation['uuid'])
            except client.ClientError as exc:
                problems.append('%s: %s' % (reservation['uuid'], exc))
                continue
            seen = {key: now[key] for key in expected}
            if seen != expected:
                problems.append('%s is now %s' % (reservation['uuid'], seen))
    problems += ['%s live, never kept by a client' % uuid
                 for uuid in sorted(set(live) - kept)]
    return [_check('every confirmed reservation kept by its client '
                   'survived (%d), and no other is live' % len(kept),
                   problems)]


def grants(recorder, nodes, expanded_at, old_instances, new_instances):
    """Every node granted satisfies the spec it was asked for; N-1 made
    grants after the expand (else the check proves nothing of it).
    Returns the checks and the grants counted by who made them when."""
    by_uuid = {node['uuid']: node for node in nodes}
    counted = collections.Counter()
    wrong = []
    for grant in recorder.grants.values():
        after = grant['at'] >= expanded_at
        api = ('N-1' if grant['instance'] in old_instances
               else 'N' if grant['instance'] in new_instances else '?')
        counted['%s %s the expand' % (api, 'after' if after
                                      else 'before')] += 1
        mismatches = load.mismatches(by_uuid[grant['node']],
                                     load.SPECS[grant['spec']])
        if mismatches:
            wrong.append(dict(grant, api=api, after_expand=after,
                              mismatches=mismatches))
    unattributed = ['%d grants logged by no API' % counted[key]
                    for key in counted if key.startswith('?')]
    return [
        _check('every grant satisfies its spec (%d grants)'
               % len(recorder.grants), wrong),
        _check('N-1 granted after the expand (%d) and N granted (%d)'
               % (counted['N-1 after the expand'],
                  counted['N after the expand']),
               [] if counted['N-1 after the expand']
               and counted['N after the expand'] else
               ['%s' % dict(counted)]),
        _check('every grant found in one API\'s log', unattributed),
    ], dict(sorted(counted.items()))


def counters(watch, final):
    """The counters equal a recount from the nodes at the end and at
    every sample during the roll."""
    problems = ['at %.1fs: %s %s counters %s, recount %s'
                % ((at - watch.origin,) + tuple(rest))
                for at, *rest in watch.differences]
    problems += ['at the end: %s %s counters %s, recount %s' % difference
                 for difference in final]
    return [_check('capacity counters equal a recount (%d samples during '
                   'the roll, %d missed, and at the end)'
                   % (watch.samples, watch.missed), problems)]


def capacity(rows, nodes, held_nodes):
    """``GET /v1/capacity`` per resource class: every node of the file,
    those of the live reservations (``held_nodes``) held, the rest free
    but for nodes in maintenance."""
    expected = {}
    classes = {}
    for node in nodes:
        name = classes[node['uuid']] = load.nova_resource_class(
            node['resource_class'])
        totals = expected.setdefault(name, collections.Counter())
        totals['total'] += 1
        totals['available'] += not node['maintenance']
    for node_uuid in held_nodes:
        expected[classes[node_uuid]]['reserved'] += 1
        expected[classes[node_uuid]]['available'] -= 1
    shown = {row['resource_class']: {key: row[key] for key in (
        'total', 'available', 'reserved')} for row in rows}
    problems = ['%s: %s, expected %s' % (name, shown.get(name),
                                         dict(expected.get(name, {})))
                for name in sorted(set(shown) | set(expected))
                if shown.get(name) != {
                    key: expected.get(name, {}).get(key, 0)
                    for key in ('total', 'available', 'reserved')}]
    return [_check('GET /v1/capacity agrees with the inventory and the '
                   'live reservations (%d held)' % len(held_nodes),
                   problems)]


def old_client(done, old, nodes, new_instances):
    """N-1's own client reserved, confirmed, read back and released a
    node that satisfies its spec, through N's API."""
    problems = []
    if done.get('error') or done['exit']:
        problems.append('exit %s: %s' % (done['exit'], done.get('error')))
    elif not done['client_module'].startswith(str(old.path)):
        problems.append('not the old client: %s' % done['client_module'])
    else:
        node = {node['uuid']: node for node in nodes}[
            done['reserved']['node_uuid']]
        problems += load.mismatches(node, load.SPECS[done['spec']])
        if done['confirmed_state'] != 'active':
            problems.append('confirmed as %s' % done['confirmed_state'])
        if done['read_back']['node_uuid'] != node['uuid']:
            problems.append('read back on %s' % done['read_back'])
        if done['released'] is not True:
            problems.append('release found it gone')
        if done['instance_uuid'] not in new_instances:
            problems.append('not reserved by N\'s API')
    return [_check("N-1's client reserved and released through N's API "
                   '(microversion %s)' % done.get('microversion'),
                   problems)]


def derived_repairs(schema_steps, worker_log):
    """Nothing derived (node texts and flags, the summary counters) was
    ever found wrong: not by ``migrate``, not by N's inventory sync,
    which checks every node each pass and would repair a write that
    escaped them before a sample of the counters saw it."""
    problems = []
    for step in schema_steps:
        if step['step'] != 'migrate':
            continue
        for name in derived.CHECKS:
            found = re.search(r'^%s\s+(\d+)\s+(\d+)$' % re.escape(name),
                              step['output'], re.M)
            if not found:
                problems.append('migrate reported nothing of %s' % name)
            elif int(found.group(1)):
                problems.append('migrate found %s %s wrong'
                                % (found.group(1), name))
    with open(worker_log, errors='replace') as log:
        problems += [line.strip() for line in log if REPAIRED in line]
    return [_check('no derived row found wrong (migrate, N\'s syncs)',
                   problems)]


def graceful_stops(exits):
    """N-1's API and worker, sent SIGTERM, finished and exited 0."""
    return [_check("N-1's API and worker exited 0 on SIGTERM",
                   ['%s exited %s' % (name, code)
                    for name, code in exits.items() if code != 0])]


def commands(schema_steps, mixed_status, status):
    """Every schema step succeeded; ``reserveapi-status upgrade check``
    of N finds no failure while both versions serve (warnings: the
    contract waits), and is clean at the end."""
    return [
        _check('expand, migrate and contract succeeded',
               ['%s exited %d: %s' % (step['step'], step['exit'],
                                      step['output'][-500:])
                for step in schema_steps if step['exit']]),
        _check('reserveapi-status upgrade check finds no failure while '
               'N-1 and N serve',
               ['not run'] if mixed_status is None else
               [] if mixed_status['exit'] in (0, 1) else
               ['exit %d: %s' % (mixed_status['exit'],
                                 mixed_status['output'])]),
        _check('reserveapi-status upgrade check exits 0',
               [] if status['exit'] == 0 else
               ['exit %d: %s' % (status['exit'], status['output'])]),
    ]
