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

"""What must hold after a soak run, each check a ``(name, ok, detail)``.
"""

import collections
import os
import socket

from oslo_utils import timeutils
import sqlalchemy as sa

from reserveapi.inventory import file as file_source
from reserveapi.inventory import sync as inventory_sync
from tests.system.soak import soakload


def _check(name, problems):
    return name, not problems, problems[:20]


def answers(recorder, api_log):
    """Every answer was 2xx, 404, 409 or 503; no traceback in the log."""
    odd = sorted(status for status in recorder.statuses
                 if status not in soakload.ALLOWED_STATUSES)
    with open(api_log, errors='replace') as log:
        unexpected = [line.strip() for line in log
                      if 'Unexpected error while serving' in line]
    return [
        _check('every answer was 2xx, 404, 409 or 503',
               ['%d x %d' % (recorder.statuses[status], status)
                for status in odd] + recorder.bad_answers),
        _check('no unexpected error in the API log', unexpected),
    ]


def holds(recorder, monitor, engine):
    """No node and no instance ever held twice; nothing held at the end.
    """
    with engine.connect() as connection:
        live = connection.execute(sa.text(
            'SELECT uuid, instance_uuid, host, state FROM reservations '
            "WHERE state IN ('reserved', 'active')")).all()
        flagged = connection.execute(sa.text(
            'SELECT uuid FROM nodes WHERE reserved = :flag'),
            {'flag': True}).all()
    return [
        _check('no node or instance held by two live reservations '
               '(monitor)', monitor.doubles),
        _check('no two holds of a node overlapped (clients)',
               soakload.overlapping_holds(recorder.holds)),
        _check('no reservation left after every client released',
               [tuple(row) for row in live]),
        _check('no node left flagged reserved',
               [row[0] for row in flagged]),
        _check('no anomaly seen by a client', recorder.anomalies),
    ]


def retries(recorder):
    return [_check('every operation converged within its retries',
                   recorder.gave_up)]


def mirror(engine, placement, used_aggregates):
    """No mirror row pending or claimed; Placement has exactly the
    desired aggregates (of ours) on every host's provider."""
    with engine.connect() as connection:
        stuck = connection.execute(sa.text(
            'SELECT a.uuid, h.host, h.state, h.leased_by, h.last_error '
            'FROM mirror_hosts h JOIN mirror_aggregates a '
            'ON a.id = h.aggregate_id '
            "WHERE h.state != 'synced' OR h.leased_by IS NOT NULL")).all()
        deleted = connection.execute(sa.text(
            'SELECT uuid FROM mirror_aggregates WHERE deleted = :flag'),
            {'flag': True}).all()
        members = connection.execute(sa.text(
            'SELECT a.uuid, h.host FROM mirror_hosts h '
            'JOIN mirror_aggregates a ON a.id = h.aggregate_id '
            'WHERE h.member = :flag AND a.deleted = :no'),
            {'flag': True, 'no': False}).all()
    wanted = {}
    for aggregate_uuid, host in members:
        wanted.setdefault(host, set()).add(aggregate_uuid)
    disagree = []
    for host, rp_uuid in sorted(placement.providers().items()):
        have = placement.aggregates(rp_uuid) & used_aggregates
        if have != wanted.get(host, set()):
            disagree.append('%s has %s, wants %s' % (
                host, sorted(have), sorted(wanted.get(host, set()))))
    return [
        _check('no mirror row pending or claimed',
               [tuple(row) for row in stuck]),
        _check('deleted aggregates forgotten once gone from Placement',
               [row[0] for row in deleted]),
        _check('Placement agrees with the desired aggregates', disagree),
    ]


def inventory(engine, inventory_file):
    """The node table is the inventory file, node for node."""
    nodes = file_source.load(inventory_file)
    expected = {node['uuid']: inventory_sync.fingerprint(node)
                for node in nodes}
    with engine.connect() as connection:
        stored = dict(connection.execute(sa.text(
            'SELECT uuid, fingerprint FROM nodes WHERE vanished = :no'),
            {'no': False}).all())
    differ = sorted(uuid for uuid in set(expected) | set(stored)
                    if expected.get(uuid) != stored.get(uuid))
    return [_check('the inventory agrees with its file', differ)]


def _landed(fault):
    """Whether a fault hit what it aimed at (a job, a lease, a request
    just committed); a fault that aims at nothing in particular did."""
    return fault.get('landed_mid_job', fault.get('landed', True))


def faults(fault_log, kinds):
    """Every kind of fault was inflicted as often as ``kinds`` lists it,
    and each kind that aims at something (a worker kill at its job or
    lease, an API kill at a committed request) landed at least once."""
    wanted = collections.Counter(kinds)
    done = collections.Counter(fault['kind'] for fault in fault_log)
    missing = ['%s inflicted %d times of %d' % (kind, done[kind], count)
               for kind, count in wanted.items() if done[kind] < count]
    missed = ['%s never landed (%s)' % (kind, 'inside its job'
                                        if kind.startswith('worker-kill-mid')
                                        else 'on its target')
              for kind in wanted if done[kind] and not any(
                  fault['kind'] == kind and _landed(fault)
                  for fault in fault_log)]
    return [_check('every fault inflicted, worker kills inside their job',
                   missing + missed)]


# With the real Ironic --------------------------------------------------------

def _relative(problem, origin, *keys):
    """``problem`` with its monotonic times as seconds into the run."""
    problem = dict(problem)
    for key in keys:
        if problem.get(key) is not None:
            problem[key] = round(problem[key] - origin, 1)
    return problem


def ironic_claims(ledger, claim_monitor, origin):
    """What the clients and the claim monitor saw during the run."""
    violations = [_relative(problem, origin, 'since', 'last_seen')
                  for problem in claim_monitor.violations.values()]
    unbacked = [_relative(answer, origin, 'at') for answer in ledger.answers
                if answer['ironic_shows'] != answer['instance']]
    given = [_relative(dict(answer, foreign=claim['instance']), origin, 'at')
             for answer in ledger.answers
             for claim in [ledger.foreign_at(answer['node'], answer['at'])]
             if claim is not None]
    given += [problem for problem in violations if problem['foreign_claim']]
    changed = [_relative(change, origin, 'at')
               for change in claim_monitor.foreign_changes.values()]
    return [
        _check('Ironic kept the claim of every held reservation (monitor)',
               [problem for problem in violations if problem['held']]),
        _check('no live reservation without its Ironic claim for %ds '
               '(monitor)' % soakload.PENDING_GRACE,
               [problem for problem in violations if not problem['held']]),
        _check('every 201/200 answered was backed by its Ironic claim',
               unbacked),
        _check('foreign claims untouched while held (monitor)', changed),
        _check('no foreign-claimed node given to us', given),
    ]


def ironic_settled(engine, ironic, ledger, pass_exit_codes):
    """After the load and two worker passes: nothing of ours left in
    Ironic without a live reservation, foreign claims in place, no lease
    or release stuck, abandoned reservations expired."""
    shown = ironic.claims()
    now = timeutils.utcnow()
    with engine.connect() as connection:
        live = set(connection.execute(sa.text(
            'SELECT r.instance_uuid, n.uuid FROM reservations r '
            'JOIN nodes n ON n.id = r.node_id '
            "WHERE r.state IN ('reserved', 'active')")).all())
        leases = connection.execute(sa.text(
            'SELECT source, leased_by, leased_until FROM inventory_syncs '
            'WHERE leased_by IS NOT NULL')).all()
        due = connection.execute(sa.text(
            'SELECT node_uuid, instance_uuid, attempts, last_error '
            'FROM ironic_releases WHERE next_attempt_at <= :now'),
            {'now': now}).all()
        states = dict(connection.execute(sa.text(
            'SELECT uuid, state FROM reservations')).all())
    leaked = sorted('node %s carries instance %s' % (node, instance)
                    for node, instance in shown.items()
                    if instance in ledger.instances
                    and (instance, node) not in live)
    foreign = ['node %s: foreign %s, Ironic shows %s' % (
        claim['node'], claim['instance'], shown.get(claim['node']))
        for claim in ledger.foreign_held()
        if shown.get(claim['node']) != claim['instance']]
    stuck = ['%s held by %s until %s, %s' % (
        source, holder, until, 'a live process' if _alive(holder)
        else 'no live process') for source, holder, until in leases
        if not _alive(holder)]
    # An abandoned reservation must have expired. One superseded after
    # an outage expired, or was ended by its own retry (Ironic did not
    # have its node: the retry ends it, and answers 503 or another node).
    unexpired = ['%s is %s' % (uuid, states.get(uuid, 'gone (ended, not '
                                                'expired)'))
                 for uuid in ledger.abandoned
                 if states.get(uuid) != 'expired']
    unexpired += ['superseded %s is still %s' % (uuid, states[uuid])
                  for uuid in ledger.outlived
                  if states.get(uuid, 'expired') != 'expired']
    return [
        _check('both final worker passes succeeded',
               ['pass %d exited %d' % (number, code) for number, code
                in enumerate(pass_exit_codes, 1) if code]),
        _check('no node carries an instance of ours without a live '
               'reservation (after the passes)', leaked),
        _check('foreign claims still in place (after the passes)', foreign),
        _check('no lease held by a dead process (after the passes)', stuck),
        _check('no Ironic claim left to clear (after the passes)',
               [tuple(row) for row in due]),
        _check('abandoned reservations expired (%d), and %d superseded '
               'after an outage ended' % (len(ledger.abandoned),
                                     len(ledger.outlived)), unexpired),
    ]


def _alive(holder):
    """Whether a lease holder (``host:pid:tag``) is a process running on
    this host."""
    host, _, rest = (holder or '').partition(':')
    pid = rest.partition(':')[0]
    return (host == socket.gethostname() and pid.isdigit()
            and os.path.exists('/proc/%s' % pid))


def lease_takeover(fault_log, claim_monitor, origin, limit):
    """After each kill of the worker holding the sync lease, a sync
    completed (``synced_at`` moved) within ``limit`` seconds, as the
    claim monitor saw the lease."""
    samples = claim_monitor.lease_samples
    problems = []
    for fault in fault_log:
        if fault['kind'] != 'worker-kill-holding-lease' or not fault.get(
                'landed'):
            continue
        killed = origin + fault['killed_at_s']
        before = [sample for sample in samples if sample[0] <= killed]
        synced_before = before[-1][2] if before else None
        after = [sample for sample in samples if sample[0] > killed
                 and sample[2] is not None and sample[2] != synced_before]
        if not after or after[0][0] - killed > limit:
            watched = (claim_monitor.last_read or killed) - killed
            last = samples[-1] if samples else (None, None, None)
            problems.append(
                'killed holder %s at %.1fs: %s; the lease then named %s'
                % (fault['holder'], fault['killed_at_s'],
                   'no sync completed in the %.0fs watched after' % watched
                   if not after else 'next sync %.1fs after'
                   % (after[0][0] - killed), last[1]))
    return [_check('the sync lease of a killed worker taken over within '
                   '%ds' % limit, problems)]


EVIDENCE = {
    'api.log': ('Unexpected error', 'Ironic refused node',
                'Clearing a stale claim', 'Could not undo'),
    'worker.log': ('claim cleared', 'claimed it again', 'Ended reservation',
                   'Another process is syncing', 'Left for an operator',
                   'Expired'),
}
"""Log lines that tell what happened to claims, counted for the report
with the first few shown."""


def log_evidence(run_dir, shown=3):
    evidence = {}
    for name, patterns in EVIDENCE.items():
        path = os.path.join(run_dir, name)
        if not os.path.exists(path):
            continue
        with open(path, errors='replace') as log:
            lines = log.readlines()
        for pattern in patterns:
            found = [line.strip() for line in lines if pattern in line]
            evidence['%s: %s' % (name, pattern)] = {
                'count': len(found), 'first': found[:shown]}
    return evidence
