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

"""Exceptions that carry an HTTP status and a stable error code.

The server's one family: domain code raises these; the API layer renders
them in the API-WG error format (``{"errors": [{"status", "code",
"title", "detail", ...}]}``), the commands print their ``detail``.
Anything else that escapes is a bug and becomes a 500, and so does an
``InternalOutcome`` (what the domain meets and acts on itself) or a
``CommandError`` (what only a command or the worker meets): neither is
ever an answer, so neither has a status or a code. Every outage of a
peer service (Ironic, Placement, Nova, Keystone's limits) is a
``PeerUnavailable``, a 503.
(``reserveapi.client``, ``nova`` and ``osc`` ship apart and keep their
own.)
"""

import json


class _Described(Exception):
    """``detail``: the message, or ``msg_fmt`` filled from the keyword
    arguments (kept as ``kwargs``)."""

    msg_fmt = 'An unexpected error occurred.'

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            message = self.msg_fmt % kwargs
        self.detail = str(message)
        super().__init__(self.detail)


class ReserveapiException(_Described):
    """Base class: ``status`` is the HTTP status, ``code`` the stable code."""

    status = 500
    code = 'reserveapi.internal_error'


class InternalOutcome(_Described):
    """An outcome the domain acts on itself (a node lost to a concurrent
    request, a node Ironic will not give: try the next one). It answers
    no request, so it has neither status nor code, and is no
    ReserveapiException: one that escaped would be a bug."""


class CommandError(_Described):
    """What only a command or the worker meets (a refused schema step,
    another process's sync, an operator's mistake): the command prints
    its ``detail``, the worker logs it. No request reaches it, so it has
    neither status nor code."""


class Invalid(ReserveapiException):
    status = 400
    code = 'reserveapi.invalid'
    msg_fmt = 'Invalid input: %(reason)s'


class FieldError(Invalid, ValueError):
    """Invalid input that says where in a document it is: ``path`` is a
    tuple of keys and list indexes, ``reason`` completes "field X ...".
    A ValueError too, for the parsers that take any.
    """

    def __init__(self, path, reason):
        self.path = tuple(path)
        self.reason = reason
        where = dotted(self.path)
        super().__init__('%s %s' % (where, reason) if where else reason,
                         reason=reason)


def dotted(path):
    """``('aggregates', 0, 'hosts')`` → ``aggregates[0].hosts``; a key
    that is not a plain word is quoted: ``extra_specs["a b"]``.
    """
    text = ''
    for key in path:
        if isinstance(key, int):
            text += '[%d]' % key
        elif key.isprintable() and key and not set(key) & set('.[]" '):
            text += '.%s' % key if text else key
        else:
            text += '[%s]' % json.dumps(key, ensure_ascii=False)
    return text


class InvalidRequestSpec(Invalid):
    """A request spec that cannot be satisfied by construction.

    ``key`` names the offending field (``extra_specs.capabilities:x``) so
    the caller can fix the flavor or image without reading our logs.
    """

    code = 'reserveapi.invalid_request_spec'
    msg_fmt = 'Invalid request spec key %(key)s: %(reason)s'

    def __init__(self, message=None, key=None, reason=None, **kwargs):
        self.key = key
        super().__init__(message, key=key, reason=reason, **kwargs)


class Unauthorized(ReserveapiException):
    status = 401
    code = 'reserveapi.unauthorized'
    msg_fmt = '%(reason)s'


class Forbidden(ReserveapiException):
    status = 403
    code = 'reserveapi.forbidden'
    msg_fmt = 'Policy does not allow %(action)s to be performed.'


class NotFound(ReserveapiException):
    status = 404
    code = 'reserveapi.not_found'
    msg_fmt = 'The resource could not be found.'


class ReservationNotFound(NotFound):
    code = 'reserveapi.reservation_not_found'
    msg_fmt = 'Reservation %(reservation)s could not be found.'


class NodeNotFound(NotFound):
    code = 'reserveapi.node_not_found'
    msg_fmt = 'Node %(node)s could not be found.'


class AggregateNotFound(NotFound):
    code = 'reserveapi.aggregate_not_found'
    msg_fmt = 'Aggregate %(aggregate)s could not be found.'


class NotAcceptable(ReserveapiException):
    status = 406
    code = 'reserveapi.version_not_acceptable'
    msg_fmt = '%(reason)s'


class UnsupportedMediaType(ReserveapiException):
    status = 415
    code = 'reserveapi.unsupported_media_type'
    msg_fmt = '%(reason)s'


class Conflict(ReserveapiException):
    status = 409
    code = 'reserveapi.conflict'
    msg_fmt = 'Conflict: %(reason)s'


class NoValidNode(Conflict):
    code = 'reserveapi.no_valid_node'
    msg_fmt = 'No valid node: %(reason)s'


class InstanceReserved(Conflict):
    """The instance has a live reservation; when the database refuses a
    second one, which reservation won is not known yet.
    """

    code = 'reserveapi.instance_reserved'
    msg_fmt = ('Instance %(instance_uuid)s already has reservation '
               '%(reservation)s on host %(host)s.')
    concurrent_fmt = ('Instance %(instance_uuid)s got a reservation from a '
                      'concurrent request meanwhile; read it or retry.')

    def __init__(self, message=None, **kwargs):
        if message is None and 'reservation' not in kwargs:
            message = self.concurrent_fmt % kwargs
        super().__init__(message, **kwargs)


class UpgradeRefused(CommandError):
    """A schema step that cannot run now (reserveapi-dbsync), and why."""


class InvalidStateTransition(Conflict):
    code = 'reserveapi.invalid_state'
    msg_fmt = 'Reservation %(reservation)s cannot go from %(src)s to %(dst)s.'


class HoldNotFound(NotFound):
    code = 'reserveapi.hold_not_found'
    msg_fmt = 'Hold %(hold)s could not be found.'


class InvalidHold(Invalid):
    """A hold no admission could take: its window is backwards, in the
    past, or beyond a limit the operator set."""

    code = 'reserveapi.invalid_hold'
    msg_fmt = 'Invalid hold: %(reason)s'


class HoldQuotaExceeded(Forbidden):
    """The project would hold more nodes at once than it may."""

    code = 'reserveapi.hold_quota_exceeded'
    msg_fmt = ('Project %(project)s may hold at most %(limit)d nodes at '
               'once; at %(at)s it would hold %(wanted)d.')


class HoldNotAdmitted(Conflict):
    """The first instant of the padded window at which the holds that
    overlap it, this one included, do not fit in the matching nodes."""

    code = 'reserveapi.hold_not_admitted'
    msg_fmt = ('Hold not admitted: at %(at)s the holds overlapping it want '
               '%(wanted)d nodes and only %(fit)d of them can be met.')


class HoldsChanged(InternalOutcome):
    """A hold or a reservation a hold depends on was written
    concurrently: read the holds again and decide again."""

    msg_fmt = 'Holds changed concurrently.'


class NodeHeld(InternalOutcome):
    """Reserving the node would break a hold's promise; the caller moves
    on to the next candidate."""

    msg_fmt = 'Node %(node)s is kept for holds %(holds)s.'


class NodeAlreadyReserved(InternalOutcome):
    """Lost a race for a node; the caller moves on to the next candidate."""

    msg_fmt = 'Node %(node)s is already reserved.'


class HostStillUp(Conflict):
    code = 'reserveapi.host_still_up'
    msg_fmt = ('Nova reports nova-compute on %(host)s as up: stop it, and '
               'make sure it stays down, before its reservations are taken '
               'over.')


class UnknownComputeHost(Invalid):
    code = 'reserveapi.unknown_compute_host'
    msg_fmt = 'Nova has no nova-compute service on host %(host)s.'


class ServiceUnavailable(ReserveapiException):
    """``cause``, when given, says for the log what failed underneath
    (e.g. the database's error number); the client never sees it."""

    status = 503
    code = 'reserveapi.service_unavailable'
    msg_fmt = '%(reason)s'

    def __init__(self, message=None, cause=None, **kwargs):
        self.cause = cause
        super().__init__(message, **kwargs)


class DatabaseUnavailable(ServiceUnavailable):
    """The database did not answer: nothing was changed, retry later."""

    code = 'reserveapi.database_unavailable'
    msg_fmt = ('The database is unavailable; nothing was changed. Retry '
               'later.')


class NoSchema(DatabaseUnavailable):
    """The database has no tables yet, or not the ones this version
    reads (its SQLite file does not even exist)."""

    code = 'reserveapi.no_schema'
    msg_fmt = ('The database has no schema yet, or an older one: run '
               '"reserveapi-dbsync upgrade".')


class NoDatabase(DatabaseUnavailable):
    """The server answers, but has no database of the name
    ``[database] connection`` gives."""

    code = 'reserveapi.no_database'
    msg_fmt = ('The database server has no database of the name [database] '
               'connection gives: create it (the install guide says how), '
               'then run "reserveapi-dbsync upgrade".')


class DatabaseUnhealthy(ServiceUnavailable):
    """The database answers, but this node must not take traffic (a
    Galera node not Synced or not Primary): ``GET /healthcheck`` says
    why."""

    code = 'reserveapi.database_unhealthy'


class DatabaseBusy(ServiceUnavailable):
    """Other transactions held the rows or the lock this one needed for
    longer than its retries waited: nothing was changed, retry.
    """

    code = 'reserveapi.database_busy'
    msg_fmt = ('The database is busy with other requests; nothing was '
               'changed. Retry.')


class InstanceDeployed(Conflict):
    code = 'reserveapi.instance_deployed'
    msg_fmt = ('Instance %(instance_uuid)s is already on Ironic node '
               '%(node)s (%(state)s).')


class PeerUnavailable(ServiceUnavailable):
    """A peer service did not answer in time (refused, timed out, no
    endpoint, or a 5xx): the one outage signal, one class per peer."""

    code = 'reserveapi.peer_unavailable'
    msg_fmt = 'A peer service is unavailable: %(reason)s'


class IronicUnavailable(PeerUnavailable):
    """Ironic could not be asked; nothing was changed on our side.

    ``delivered``: whether the request may have reached Ironic (and so
    may still take effect there); False only when no connection was
    ever made.
    """

    code = 'reserveapi.ironic_unavailable'
    msg_fmt = 'Ironic is unavailable: %(reason)s'

    def __init__(self, message=None, delivered=True, **kwargs):
        self.delivered = delivered
        super().__init__(message, **kwargs)


class KeystoneUnavailable(PeerUnavailable):
    """Keystone could not tell a project's unified limit (``[holds]
    unified_limits``): the hold was refused, nothing was changed."""

    code = 'reserveapi.keystone_unavailable'
    msg_fmt = 'Keystone is unavailable: %(reason)s'


class NodeTaken(InternalOutcome):
    """Ironic will not let the node be ours now: try another one.

    ``ours``: our claim landed, but Ironic's answer shows a node that
    cannot be used; that claim is for the caller to clear.
    """

    msg_fmt = 'Ironic will not give the node: %(reason)s'

    def __init__(self, reason, ours=False):
        self.ours = ours
        super().__init__(reason=reason)


class InstanceClaimedElsewhere(InternalOutcome):
    """Ironic has the instance on another node (a claim of ours whose
    answer was lost, or one not cleared yet)."""

    msg_fmt = ('Ironic has instance %(instance_uuid)s on another node '
               'already.')


class ClaimNotCleared(ServiceUnavailable):
    """Ironic refused to clear a claim of ours for now (its node is
    locked, or in a transition): the clear is tried again later."""

    code = 'reserveapi.claim_not_cleared'
    msg_fmt = 'Ironic did not clear the claim: %(reason)s'


class ClaimBeingCleared(ServiceUnavailable):
    """The instance's claim on another node is being cleared by another
    process: nothing is held; retry in a few seconds."""

    code = 'reserveapi.claim_being_cleared'
    msg_fmt = ('Instance %(instance_uuid)s still has a claim on Ironic '
               'node %(node)s that another process is clearing; nothing '
               'was reserved. Retry in a few seconds.')


class SyncInProgress(CommandError):
    """Another process holds the inventory sync's lease (the worker's
    pass or reserveapi-manage sync-nodes)."""

    msg_fmt = 'Another process is syncing the inventory.'


class ConfigurationError(CommandError):
    """An operator's mistake in the configuration (a file that cannot be
    read, a value an option refuses, a section the chosen mode needs) or
    on the command line. The process does not start; the commands exit 2
    with this one line.
    """

    msg_fmt = '%(reason)s'


class UnsupportedLibrary(ConfigurationError, ReserveapiException):
    """An installed library is not a version the private-API patch of
    ``reserveapi/compat.py`` that uses it was written for. Also an
    answer, a 500: the database engine, whose patches check, is made at
    the first request or job that needs it."""

    code = 'reserveapi.unsupported_library'


class MissingCredentials(ConfigurationError):
    """A peer group lacks options that the service needs: the process
    does not start, so no caller ever sees it."""


# The aggregate mirror's errors. None reaches an API caller: the mirror
# records the ``detail`` on the pending row and the worker retries;
# reserveapi-manage prints it. Their statuses say what each would be.


class MirrorError(ReserveapiException):
    """Base class: the mirror could not make Placement agree yet."""

    code = 'reserveapi.mirror_error'
    msg_fmt = 'The aggregate mirror failed.'


class HostHasNoProvider(MirrorError):
    """Nothing to put in the aggregate yet: the host stays pending."""

    status = 409
    code = 'reserveapi.host_has_no_provider'
    msg_fmt = 'Host %(host)s has no resource provider in Placement yet.'


class PeerError(MirrorError):
    """Placement or Nova did not do what we asked: the change stays
    pending. A 502: the peer answered in a way we cannot act on.
    """

    status = 502
    code = 'reserveapi.peer_error'
    msg_fmt = 'A peer service failed: %(reason)s'


class PlacementError(PeerError):
    """Placement answered in a way we cannot act on (4xx, bad body...)."""

    code = 'reserveapi.placement_error'
    msg_fmt = 'Placement request failed: %(reason)s'


class PlacementUnavailable(PlacementError, PeerUnavailable):
    """No answer in time: refused, timed out, no endpoint, or a 5xx."""

    status = 503
    code = 'reserveapi.placement_unavailable'
    msg_fmt = 'Placement is unavailable: %(reason)s'


class PlacementConflict(PlacementError):
    """The provider generation kept changing for every attempt we had."""

    status = 409
    code = 'reserveapi.placement_conflict'
    msg_fmt = ('Resource provider %(provider)s changed concurrently on each '
               'of %(attempts)d attempts.')


class ProviderGone(PlacementError):
    """The provider does not exist (deleted, or not created yet).

    Distinct from other errors because the cure is to resolve the host
    again, not to retry the same provider.
    """

    code = 'reserveapi.provider_gone'
    msg_fmt = 'Resource provider %(provider)s does not exist.'


class NovaError(PeerError):
    """Nova answered in a way we cannot act on."""

    code = 'reserveapi.nova_error'
    msg_fmt = 'Nova request failed: %(reason)s'


class NovaUnavailable(NovaError, PeerUnavailable):
    """No answer from Nova in time: refused, timed out, or a 5xx."""

    status = 503
    code = 'reserveapi.nova_unavailable'
    msg_fmt = 'Nova is unavailable: %(reason)s'
