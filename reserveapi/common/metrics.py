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

"""What this process counts and times, for Prometheus.

Every layer records here (the API, the domain, the database layer, the
worker); ``reserveapi/monitoring/`` serves it. Recording costs a lock
and an addition (under gunicorn, a write to a memory-mapped file: see
``monitoring/exposition.py``), so the hot path records unconditionally
and only serving depends on ``[metrics] enabled``. What the database
holds (capacity, the mirror's backlog, the last sync) is not counted
here: ``monitoring/database.py`` reads it when Prometheus scrapes.

Every label takes values from a set the code bounds: route templates,
HTTP methods and statuses, exception codes, criterion and job names;
never a node, an instance or a path. Each metric is documented, with
what to alert on, in doc/source/admin/monitoring.rst.
"""

import contextlib

import prometheus_client

from reserveapi.common import exception

PREFIX = 'reserveapi_'

# A ``_created`` series beside every counter and histogram series would
# double what each scrape stores for a value Prometheus 2 never reads.
prometheus_client.disable_created_metrics()

# Latency buckets, in seconds, each sized to what it times.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                   10.0, 30.0)
CLAIM_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                 30.0)
SYNC_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
                600.0, 1800.0)
JOB_BUCKETS = (0.01, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0,
               1800.0)


def _name(name):
    return PREFIX + name


# The API ----------------------------------------------------------------

API_REQUEST_DURATION = prometheus_client.Histogram(
    _name('api_request_duration_seconds'),
    'Seconds the API took to answer a request, from the request id '
    'middleware to the last byte, by route template (e.g. '
    '/v1/reservations/{reservation_uuid}; "unmatched" for a path no '
    'route has), method and HTTP status. Its _count is the number of '
    'requests.',
    ('route', 'method', 'status'), buckets=REQUEST_BUCKETS)

# Reservations -----------------------------------------------------------

RESERVATIONS = prometheus_client.Counter(
    _name('reservations'),
    'POST /v1/reservations by outcome: created, existing (a retry answered '
    'with the reservation it already has), no_valid_node (cause: the '
    'criterion that kept most nodes of the requested class, reserved '
    'when held nodes would have matched, resource_class when the class '
    'has no node, lost_races when concurrent requests took every '
    'match, held when the matches left are kept for holds), conflict, '
    'unavailable and invalid (cause: the error code, e.g. '
    'database_unavailable, ironic_unavailable, invalid_request_spec), '
    'error (a bug).',
    ('outcome', 'cause'))
RESERVATION_LOST_RACES = prometheus_client.Counter(
    _name('reservation_lost_races'),
    'Nodes a reservation tried to take that a concurrent request took '
    'first; the next candidate was tried.')

# Holds ------------------------------------------------------------------

HOLD_ADMISSIONS = prometheus_client.Counter(
    _name('hold_admissions'),
    'Admissions of holds: creates, and updates that grow a hold (more '
    'nodes or a later end), by action (create, update) and outcome: '
    'admitted, not_admitted (the holds would not fit: '
    'hold_not_admitted), over_quota (the project would hold more than '
    'it may), invalid (a window or request spec no admission could '
    'take). Other failures (the database down) are not admissions.',
    ('action', 'outcome'))
HOLD_ACTIONS = ('create', 'update')
HOLD_OUTCOMES = ('admitted', 'not_admitted', 'over_quota', 'invalid')

# Ironic -----------------------------------------------------------------

IRONIC_CLAIM_DURATION = prometheus_client.Histogram(
    _name('ironic_claim_duration_seconds'),
    'Seconds of the PATCH that claims a node in Ironic for a reservation '
    '([ironic] claim_nodes), its retries on a locked node included.',
    buckets=CLAIM_BUCKETS)
IRONIC_CLAIM_CONFLICTS = prometheus_client.Counter(
    _name('ironic_claim_conflicts'),
    'Claims Ironic refused or answered with a node we cannot use (another '
    'instance, a state transition, the instance on another node): the '
    'reservation moved on to the next node.')
IRONIC_ORPHAN_CLAIMS = prometheus_client.Counter(
    _name('ironic_orphan_claims'),
    'Claims of ours the reconcile pass found in Ironic on an available '
    'node that no reservation held and no clear stood for, and cleared: '
    'each was a node lost to every scheduler until then.')

# The inventory sync -----------------------------------------------------

INVENTORY_SYNC_DURATION = prometheus_client.Histogram(
    _name('inventory_sync_duration_seconds'),
    'Seconds of each complete pass over the inventory source, by source '
    '(file, ironic) and kind (full, incremental).',
    ('source', 'kind'), buckets=SYNC_BUCKETS)
INVENTORY_SYNC_CHANGES = prometheus_client.Counter(
    _name('inventory_sync_nodes_changed'),
    'Nodes the inventory syncs changed, by source and change (added, '
    'updated, removed, flagged: vanished from the source while reserved).',
    ('source', 'change'))
SYNC_CHANGES = ('added', 'updated', 'removed', 'flagged')

# The aggregate mirror ---------------------------------------------------

MIRROR_ATTEMPTS = prometheus_client.Counter(
    _name('mirror_attempts'),
    'Attempts to make Placement agree with one aggregate membership '
    'change, by result: synced, or pending (to be retried).',
    ('result',))
MIRROR_ERRORS = prometheus_client.Counter(
    _name('mirror_errors'),
    'Failed mirror attempts by peer (placement, nova) and error code '
    '(placement_unavailable, placement_conflict, provider_gone, '
    'host_has_no_provider, placement_error, nova_unavailable, '
    'nova_error).',
    ('peer', 'error'))

# The database -----------------------------------------------------------

DATABASE_RETRIES = prometheus_client.Counter(
    _name('database_retries'),
    'Transactions run again after losing a race, by error: deadlock (a '
    'deadlock, a Galera certification failure, a lock held too long) or '
    'duplicate (a row inserted concurrently).',
    ('error',))
DATABASE_DEADLOCKS = prometheus_client.Counter(
    _name('database_deadlocks'),
    'Transactions the database rolled back as a deadlock (or a Galera '
    'certification failure, or an AUTO-INC lock lost), retried or not.')
DATABASE_CONNECTION_ERRORS = prometheus_client.Counter(
    _name('database_connection_errors'),
    'Transactions that failed because the database refused or lost the '
    'connection (each a 503 to an API caller, a failed run to a job).')

# The worker -------------------------------------------------------------
# Their label is ``worker_job``: Prometheus gives every scraped series a
# ``job`` label of its own (the scrape job's name).

JOB_RUNS = prometheus_client.Counter(
    _name('worker_job_runs'),
    'Runs of each reserveapi-worker job (worker_job), failed ones '
    'included.', ('worker_job',))
JOB_FAILURES = prometheus_client.Counter(
    _name('worker_job_failures'),
    'Failed runs of each reserveapi-worker job, by cause: the peer that '
    'failed (database, ironic, placement, nova) or other.',
    ('worker_job', 'cause'))
JOB_DURATION = prometheus_client.Histogram(
    _name('worker_job_duration_seconds'),
    'Seconds each run of each reserveapi-worker job took.', ('worker_job',),
    buckets=JOB_BUCKETS)
JOB_LAST_SUCCESS = prometheus_client.Gauge(
    _name('worker_job_last_success_timestamp_seconds'),
    'When each reserveapi-worker job last succeeded (Unix time); 0 '
    'until it has.', ('worker_job',), multiprocess_mode='max')


def start_counting():
    """Give the label values known in advance a series at 0, so that a
    series exists (and ``rate()`` and ``increase()`` see its first
    increment) before the first event."""
    RESERVATIONS.labels(outcome='created', cause='')
    for action in HOLD_ACTIONS:
        for outcome in HOLD_OUTCOMES:
            HOLD_ADMISSIONS.labels(action=action, outcome=outcome)
    for error in ('deadlock', 'duplicate'):
        DATABASE_RETRIES.labels(error=error)
    for result in ('synced', 'pending'):
        MIRROR_ATTEMPTS.labels(result=result)
    MIRROR_ERRORS.labels(peer='placement', error='placement_unavailable')


def code_of(error):
    """``database_unavailable`` for our DatabaseUnavailable: an error's
    stable code without the prefix, a bounded label value."""
    return error.code.rpartition('.')[2]


def reservation_outcome(error):
    """``(outcome, cause)`` of a POST /v1/reservations that raised
    ``error``."""
    if isinstance(error, exception.NoValidNode):
        return 'no_valid_node', error.kwargs.get('criterion') or 'none'
    if not isinstance(error, exception.ReserveapiException):
        return 'error', ''
    if error.status == 503:
        return 'unavailable', code_of(error)
    if error.status == 409:
        return 'conflict', code_of(error)
    if error.status == 400:
        return 'invalid', code_of(error)
    return 'error', code_of(error)


def hold_admission_outcome(error):
    """The outcome of a hold admission that raised ``error``, or None
    when it is no admission's outcome (the database down, a hold gone,
    a bug)."""
    if isinstance(error, exception.HoldNotAdmitted):
        return 'not_admitted'
    if isinstance(error, exception.HoldQuotaExceeded):
        return 'over_quota'
    if isinstance(error, exception.Invalid):
        return 'invalid'
    return None


@contextlib.contextmanager
def hold_admission(action, counted=True):
    """Count what happens inside as one admission of ``action``
    (``create``, ``update``), unless not ``counted`` (an update that
    does not grow its hold), or it raised no admission's outcome."""
    try:
        yield
    except Exception as error:
        outcome = hold_admission_outcome(error)
        if counted and outcome is not None:
            HOLD_ADMISSIONS.labels(action=action, outcome=outcome).inc()
        raise
    if counted:
        HOLD_ADMISSIONS.labels(action=action, outcome='admitted').inc()


def sync_observed(source, kind, seconds, counts):
    """Record a complete inventory pass of ``seconds`` that made
    ``counts`` (added, updated, ...)."""
    INVENTORY_SYNC_DURATION.labels(source=source, kind=kind).observe(seconds)
    for change in SYNC_CHANGES:
        INVENTORY_SYNC_CHANGES.labels(source=source, change=change).inc(
            counts.get(change, 0))


def mirror_failed(error):
    """Record a mirror attempt that ``error`` (a MirrorError) failed."""
    MIRROR_ATTEMPTS.labels(result='pending').inc()
    peer = 'nova' if isinstance(error, exception.NovaError) else 'placement'
    MIRROR_ERRORS.labels(peer=peer, error=code_of(error)).inc()


start_counting()
