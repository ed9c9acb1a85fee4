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

import soakload
import sqlalchemy as sa

from reserveapi.inventory import file as file_source
from reserveapi.inventory import sync as inventory_sync


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
            'SELECT uuid, instance_uuid, host, state FROM reservations'
        )).all()
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
            'SELECT a.uuid, h.host, h.state, h.claimed_by, h.last_error '
            'FROM mirror_hosts h JOIN mirror_aggregates a '
            'ON a.id = h.aggregate_id '
            "WHERE h.state != 'synced' OR h.claimed_by IS NOT NULL")).all()
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


def faults(fault_log, kinds):
    """Every kind of fault was inflicted, and each kind of worker kill
    landed inside its job at least once."""
    missing = [kind for kind in kinds
               if not any(fault['kind'] == kind for fault in fault_log)]
    missed = [kind for kind in kinds if kind.startswith('worker-kill')
              and not any(fault['kind'] == kind and fault['landed_mid_job']
                          for fault in fault_log)]
    return [_check('every fault inflicted, worker kills inside their job',
                   ['%s never inflicted' % kind for kind in missing]
                   + ['%s never landed inside its job' % kind
                      for kind in missed])]
