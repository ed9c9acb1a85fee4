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

"""Blazar's ``baremetal:hold`` reservations, kept as holds of the
reservation service (``/v1/holds``).

Blazar keeps the lease, its dates and its events; the service keeps the
nodes. A reservation of this type becomes one hold for the lease's
project over the lease's window, and the hold's UUID is the
reservation's ``resource_id``: the plugin stores nothing else, so that
there is one record of what is promised, the service's. Admission is the
service's alone: a hold it refuses fails the lease with the service's
reason, and Blazar rolls the lease back.

The plugin talks to the service only through ``reserveapi.client``,
with the credentials of blazar.conf's ``[reserveapi]`` group.
"""

import datetime
import json

from blazar import exceptions as blazar_exc
from blazar.db import api as db_api
from blazar.enforcement import exceptions as enforcement_exc
from blazar.manager import exceptions as manager_exc
from blazar.plugins import base
from blazar.utils.openstack import nova
from novaclient import exceptions as nova_exc
from oslo_config import cfg
from oslo_log import log as logging
from oslo_utils import excutils
from oslo_utils import timeutils

from reserveapi import client

# The [reserveapi] group's keystoneauth adapter options and loader, as
# nova.conf has them; see doc/source/blazar.rst.
from reserveapi.blazar import conf as plugin_conf
from reserveapi.client import conf as client_conf
from reserveapi.client import request_spec as spec_builder

LOG = logging.getLogger(__name__)
CONF = cfg.CONF

RESOURCE_TYPE = 'baremetal:hold'
PLUGIN_NAME = 'baremetal.hold.plugin'
AT_END = ('keep', 'delete')
FINAL_STATES = ('ended', 'cancelled')
HOLD_NOT_ADMITTED = 'reserveapi.hold_not_admitted'
HOLD_QUOTA_EXCEEDED = 'reserveapi.hold_quota_exceeded'
# What a reservation of this type may carry, and what Blazar adds to it.
HOLD_KEYS = ('amount', 'flavor_id', 'request_spec', 'shard',
             'conductor_group', 'at_end')
BLAZAR_KEYS = ('id', 'lease_id', 'resource_type', 'resource_id', 'status',
               'start_date', 'end_date', 'missing_resources',
               'resources_changed', 'created_at', 'updated_at')
# What an update may change beside the lease's dates.
UPDATABLE_KEYS = ('amount',)
QUERY_TYPE_ALLOCATION = 'allocation'


def _utc(value):
    """Blazar's naive UTC datetime as one with its offset, which the
    service requires (a time without one is refused)."""
    if isinstance(value, str):
        value = timeutils.parse_isotime(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value.astimezone(datetime.timezone.utc)


def _check_keys(values, allowed):
    """Refuse a key this type does not take (a misspelt ``amount``
    would otherwise be ignored), or one an update cannot change."""
    unknown = sorted(set(values) - set(BLAZAR_KEYS) - set(allowed))
    if not unknown:
        return
    if set(unknown) <= set(HOLD_KEYS):
        raise manager_exc.CantUpdateParameter(param=', '.join(unknown))
    raise manager_exc.MalformedParameter(
        param='%s (a %s reservation takes %s)' % (
            ', '.join(unknown), RESOURCE_TYPE, ', '.join(HOLD_KEYS)))


def _hold_arguments(values):
    """The hold a new reservation asks for, checked before the lease
    exists: Blazar refuses a malformed reservation with our words."""
    _check_keys(values, HOLD_KEYS)
    if 'amount' not in values:
        raise manager_exc.MissingParameter(param='amount')
    amount = _amount(values['amount'])
    has_flavor = values.get('flavor_id') not in (None, '')
    has_spec = values.get('request_spec') not in (None, '')
    if has_flavor and has_spec:
        raise manager_exc.MalformedParameter(
            param='flavor_id and request_spec (give one of them)')
    if not (has_flavor or has_spec):
        raise manager_exc.MissingParameter(param='flavor_id or request_spec')
    at_end = values.get('at_end')
    if at_end is not None and at_end not in AT_END:
        raise manager_exc.MalformedParameter(
            param="at_end (one of %s)" % ', '.join(AT_END))
    arguments = {'amount': amount, 'at_end': at_end,
                 'shard': values.get('shard'),
                 'conductor_group': values.get('conductor_group')}
    if has_flavor:
        arguments['flavor_id'] = str(values['flavor_id'])
    else:
        arguments['request_spec'] = _request_spec(values['request_spec'])
    return arguments


def _amount(value):
    try:
        amount = int(value)
    except (TypeError, ValueError):
        amount = 0
    if isinstance(value, bool) or amount < 1 or str(amount) != str(
            value).strip():
        raise manager_exc.MalformedParameter(
            param='amount (a whole number of nodes, at least 1)')
    return amount


def _request_spec(value):
    """A request spec as ``POST /v1/holds`` takes it: a JSON object, or
    its text (a command line carries no object)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = None
    if not isinstance(value, dict):
        raise manager_exc.MalformedParameter(
            param='request_spec (a JSON object: the request spec of '
                  'reserveapi\'s POST /v1/holds)')
    return value


def _blazar_error(exc, doing):
    """Blazar's own exception for the service's refusal, with its reason.

    Blazar's API answers only its own exception types with their
    message (any other is a bare 500), and a lease update refused with
    one of the types it lists keeps the lease as it was rather than
    putting it in ERROR: a hold that does not fit is Blazar's "not
    enough hosts", a malformed one its "invalid input", a project over
    its limit its enforcement refusal.
    """
    message = 'reserveapi refused to %s: %s' % (doing, exc.detail)
    if exc.code:
        message += ' (%s)' % exc.code
    if exc.status == 409 and exc.code == HOLD_NOT_ADMITTED:
        return manager_exc.NotEnoughHostsAvailable(message)
    if exc.status == 400:
        return blazar_exc.InvalidInput(message)
    if exc.status == 403 and exc.code == HOLD_QUOTA_EXCEEDED:
        return enforcement_exc.ExternalServiceFilterException(message)
    if exc.status == 409:
        return manager_exc.CantUpdateParameter(message)
    if exc.status == 404:
        return blazar_exc.NotFound(message)
    if isinstance(exc, client.ServiceUnavailable):
        return blazar_exc.ServiceClient(
            'The reservation service could not be reached to %s: %s'
            % (doing, exc.detail))
    return blazar_exc.BlazarException(message)


class HoldPlugin(base.BasePlugin):
    """Blazar resource plugin: a lease's ``baremetal:hold`` reservation
    is a hold of ``amount`` nodes for the lease's project."""

    resource_type = RESOURCE_TYPE
    title = 'Bare metal hold plugin'
    description = ('Bare metal nodes promised to a project for a lease, '
                   'admitted and kept by the reservation service.')
    query_options = {QUERY_TYPE_ALLOCATION: ['lease_id', 'reservation_id']}

    def __init__(self, holds=None, flavors=None):
        """``holds``: a ``HoldClient``, else one from ``[reserveapi]``
        at first use; ``flavors``: a callable from a flavor id to the
        flavor as compute's API shows it, else Nova's, read as the
        lease's user (Blazar's flavor plugin reads them so too)."""
        super().__init__()
        plugin_conf.register_opts(CONF)
        self._holds = holds
        self._flavors = flavors or _nova_flavor

    @property
    def holds(self):
        if self._holds is None:
            self._holds = client.HoldClient(client_conf.load_adapter(CONF))
        return self._holds

    def get(self, resource_id):
        """The hold, as the service shows it."""
        try:
            return self.holds.get(resource_id)
        except client.ClientError as exc:
            raise _blazar_error(exc, 'show the hold %s' % resource_id)

    def reserve_resource(self, reservation_id, values):
        """Hold the nodes for the lease's project over its window; the
        hold's UUID becomes the reservation's resource_id."""
        arguments = _hold_arguments(values)
        lease = db_api.lease_get(values['lease_id'])
        start, end = self._window(values['start_date'], values['end_date'])
        hold = self._create(lease['project_id'], arguments, start, end)
        LOG.info('Reservation %(reservation)s of lease %(lease)s: hold '
                 '%(hold)s of %(amount)d nodes for project %(project)s '
                 'from %(start)s to %(end)s.',
                 {'reservation': reservation_id, 'lease': lease['id'],
                  'hold': hold['uuid'], 'amount': hold['amount'],
                  'project': lease['project_id'], 'start': hold['start'],
                  'end': hold['end']})
        return hold['uuid']

    def update_reservation(self, reservation_id, values):
        """Move the hold's end, change its amount, or, while it is
        pending, replace it by one from the new start (a hold's start
        never moves): the new one is admitted beside the old, which is
        cancelled only once the new one is held."""
        _check_keys(values, UPDATABLE_KEYS)
        reservation = db_api.reservation_get(reservation_id)
        hold = self.get(reservation['resource_id'])
        amount = values.get('amount')
        amount = hold['amount'] if amount is None else _amount(amount)
        start, end = _utc(values['start_date']), _utc(values['end_date'])
        # A started lease's start cannot move (Blazar refuses it); a
        # lease that started "now" holds from its creation's second.
        if start > timeutils.utcnow(with_timezone=True) and (
                start != _utc(hold['start'])):
            self._replace(reservation, hold, amount, start, end)
            return
        changes = {}
        if end != _utc(hold['end']):
            changes['end'] = end
        if amount != hold['amount']:
            changes['amount'] = amount
        if not changes:
            return
        try:
            self.holds.update(hold['uuid'], **changes)
        except client.ClientError as exc:
            raise _blazar_error(exc, 'change the hold %s' % hold['uuid'])

    def on_start(self, resource_id):
        """Nothing to do: the service's worker pins the hold's nodes at
        its start. A hold cancelled behind Blazar's back fails the
        reservation, so that the lease shows it has no nodes."""
        try:
            hold = self.holds.get(resource_id)
        except client.ServiceUnavailable as exc:
            LOG.warning('The hold %s starts without being checked: %s',
                        resource_id, exc)
            return
        except client.ClientError as exc:
            raise _blazar_error(exc, 'show the hold %s' % resource_id)
        if hold['state'] in FINAL_STATES:
            raise blazar_exc.BlazarException(
                'The hold %s is %s in the reservation service: the lease '
                'keeps no node.' % (resource_id, hold['state']))

    def on_end(self, resource_id):
        """Cancel the hold unless it has already ended (at the lease's
        end it has); Blazar calls this at the end and when the lease is
        deleted."""
        if not resource_id:
            return
        try:
            hold = self.holds.get(resource_id)
            if hold['state'] in FINAL_STATES:
                return
            self.holds.cancel(resource_id)
        except client.NotFound:
            LOG.warning('The hold %s is gone from the reservation service.',
                        resource_id)
            return
        except client.ClientError as exc:
            raise _blazar_error(exc, 'cancel the hold %s' % resource_id)
        LOG.info('Hold %s cancelled.', resource_id)

    def allocation_candidates(self, values):
        """What Blazar allocates before it creates or changes a lease: a
        reservation's own hold once it has one, else nothing (the
        service decides admission when the hold is created, once, so
        that no earlier answer can disagree with it); a malformed new
        reservation is refused here, before the lease exists."""
        if values.get('resource_id'):
            return [values['resource_id']]
        if 'id' not in values:
            _hold_arguments(values)
        return []

    def list_allocations(self, query, detail=False):
        """Each hold with the reservations (of Blazar's) that own it."""
        options = self.get_query_options(query or {}, QUERY_TYPE_ALLOCATION)
        allocations = self._allocations(**options)
        return [{'resource_id': resource_id, 'reservations': reservations}
                for resource_id, reservations in allocations.items()]

    def query_allocations(self, resource_id_list, lease_id=None,
                          reservation_id=None):
        """``{hold uuid: [reservation]}`` for the holds asked for."""
        allocations = self._allocations(lease_id, reservation_id)
        return {resource_id: allocations.get(resource_id, [])
                for resource_id in resource_id_list}

    def _allocations(self, lease_id=None, reservation_id=None):
        filters = {'resource_type': RESOURCE_TYPE}
        if lease_id:
            filters['lease_id'] = lease_id
        if reservation_id:
            filters['id'] = reservation_id
        allocations = {}
        leases = {}
        for reservation in db_api.reservation_get_all_by_values(**filters):
            if not reservation['resource_id'] or (
                    reservation['status'] == 'deleted'):
                continue
            lease = leases.get(reservation['lease_id'])
            if lease is None:
                lease = leases[reservation['lease_id']] = db_api.lease_get(
                    reservation['lease_id'])
            allocations.setdefault(reservation['resource_id'], []).append({
                'id': reservation['id'], 'lease_id': reservation['lease_id'],
                'start_date': lease['start_date'],
                'end_date': lease['end_date']})
        return allocations

    def _window(self, start_date, end_date):
        """The hold's window: the lease's, except that a lease starting
        now (Blazar counts in whole minutes) holds from this second."""
        start = _utc(start_date)
        return max(start, timeutils.utcnow(with_timezone=True)), _utc(
            end_date)

    def _create(self, project_id, arguments, start, end):
        if 'flavor_id' in arguments:
            request_spec = self._flavor_spec(arguments['flavor_id'])
        else:
            request_spec = arguments['request_spec']
        try:
            return self.holds.create(
                project_id, arguments['amount'], request_spec, start, end,
                shard=arguments['shard'],
                conductor_group=arguments['conductor_group'],
                at_end=arguments['at_end'])
        except client.ClientError as exc:
            raise _blazar_error(exc, 'hold %d nodes for project %s' % (
                arguments['amount'], project_id))

    def _flavor_spec(self, flavor_id):
        """The request spec of a Nova flavor, as nova-compute's driver
        would ask for a server of it (without an image)."""
        try:
            flavor = self._flavors(flavor_id)
        except nova_exc.NotFound:
            raise blazar_exc.InvalidInput('Flavor %s not found.' % flavor_id)
        return spec_builder.build(spec_builder.flavor_from_compute(flavor),
                                  {})

    def _replace(self, reservation, hold, amount, start, end):
        if hold['state'] != 'pending':
            raise manager_exc.CantUpdateParameter(
                param='start_date of a started hold')
        arguments = {'amount': amount, 'request_spec': hold['request_spec'],
                     'shard': hold.get('shard'),
                     'conductor_group': hold.get('conductor_group'),
                     'at_end': hold.get('at_end')}
        try:
            new = self._create(hold['project_id'], arguments, start, end)
        except manager_exc.NotEnoughHostsAvailable as exc:
            raise manager_exc.NotEnoughHostsAvailable(
                'A hold cannot change its start: the hold from the new '
                'start must be admitted beside the one it replaces, %s, '
                'which the lease keeps. %s' % (hold['uuid'], exc))
        try:
            db_api.reservation_update(reservation['id'],
                                      {'resource_id': new['uuid']})
        except Exception:
            # Blazar's database failed: the lease keeps the old hold, so
            # the new one must not stay admitted beside it.
            with excutils.save_and_reraise_exception():
                self._cancel_unrecorded(new['uuid'])
        LOG.info('Reservation %(reservation)s: hold %(new)s from %(start)s '
                 'replaces hold %(old)s.',
                 {'reservation': reservation['id'], 'new': new['uuid'],
                  'start': new['start'], 'old': hold['uuid']})
        try:
            self.on_end(hold['uuid'])
        except blazar_exc.BlazarException:
            # The lease has its new hold: failing the update now would
            # leave Blazar's dates behind it. The old hold keeps its
            # nodes until an operator cancels it.
            LOG.exception('The hold %s, replaced by %s, could not be '
                          'cancelled: cancel it by hand.', hold['uuid'],
                          new['uuid'])


    def _cancel_unrecorded(self, uuid):
        try:
            self.holds.cancel(uuid)
        except client.ClientError:
            LOG.exception('The hold %s, which no reservation records, could '
                          'not be cancelled: cancel it by hand.', uuid)


def _nova_flavor(flavor_id):
    """The flavor with its extra specs, read with the lease's user's
    token, so that a project names only a flavor it can see."""
    flavor = nova.NovaClientWrapper().nova.nova.flavors.get(flavor_id)
    shown = flavor.to_dict()
    shown['extra_specs'] = flavor.get_keys()
    return shown
