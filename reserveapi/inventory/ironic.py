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

"""Ironic as the node inventory, on python-ironicclient.

Reading: a full pass lists every node in pages with only the fields
matching needs (Ironic refuses timestamps in ``fields``); an incremental
pass reads ``detail`` pages newest first, by ``updated_at`` and then by
``created_at`` (a node created through the API has no ``updated_at``
until its first change), and stops at the first node older than the
caller's watermark. Every node is normalized by the file source's rules,
so both sources store exactly the same thing.

Claiming: one PATCH sets the node's ``instance_uuid`` and writes
``instance_info`` as Nova's Ironic driver does; Ironic's answer says
whether the node is still usable, so the hot path needs no GET.
"""

import dataclasses
import datetime
import json
import logging
import threading
import time

from oslo_log import log
from oslo_utils import timeutils

from reserveapi.common import eligibility
from reserveapi.common import exception
from reserveapi.common import metrics
from reserveapi.common import node_fields
from reserveapi.common import states
from reserveapi.inventory import file as file_source
from reserveapi.peers import clients as peers

LOG = log.getLogger(__name__)


NAME = 'ironic'

API_VERSION = '1.82'
"""The microversion of every request: the first that knows ``shard``.
It also has all else we read: ``traits`` in ``fields`` (1.37), ``owner``
(1.50), ``retired`` (1.61), ``lessee`` (1.65)."""

FIELDS = tuple(field.name for field in node_fields.FIELDS
               if not field.in_properties) + ('properties', 'traits')
"""What the inventory keeps of a node, as Ironic's API names it: the
sizes, cpu_arch and capabilities come in ``properties``
(``fields=allocation_uuid`` would even be a 500 in Ironic 39)."""

CLAIMED_BY = ('claimed_by', 'reserveapi')
"""The key and value every claim of ours adds to the node's
``instance_info``: a claim left behind is known to be ours, and one of
another tool is left alone."""

FIRST_CHANGES_PAGE = 50
"""An incremental pass starts with a page this small (a quiet cloud
has nothing newer) and doubles it while every node is new."""

_SORTED_BY = ('updated_at', 'created_at')


@dataclasses.dataclass
class Page:
    """Nodes read in one request, as the file source normalizes them.

    ``skipped``: UUIDs Ironic listed that cannot be normalized (logged;
    their last good state is kept). ``read_at``: our clock just before the
    request, so that only marks older than the read are cleared.
    ``newest``: Ironic's newest ``updated_at``/``created_at`` among the
    nodes (``detail`` pages only), naive UTC.
    """

    nodes: list
    skipped: list
    read_at: datetime.datetime
    newest: datetime.datetime | None = None


class _QuietRetryLog(logging.Filter):
    """python-ironicclient logs every failed attempt at ERROR, a 409 of a
    node taken meanwhile included; we report what matters ourselves."""

    def filter(self, record):
        return not record.getMessage().startswith(
            'Error contacting Ironic server')


logging.getLogger('ironicclient.common.http').addFilter(_QuietRetryLog())


def instance_info(request_spec):
    """``instance_info`` fields exactly as Nova's patcher writes them.

    ``capabilities``: the flavor's ``capabilities:*`` extra specs, prefix
    stripped, JSON-encoded; ``traits``: the flavor's required traits (any
    ``trait`` group), then the image's ``traits_required``. A field is
    only written when not empty.
    """
    extra_specs = request_spec.get('extra_specs') or {}
    capabilities = {}
    traits = []
    for key, value in extra_specs.items():
        prefix, colon, name = key.partition(':')
        if not colon:
            continue
        if prefix == 'capabilities':
            capabilities[name] = value
        elif prefix.startswith('trait') and value == 'required':
            traits.append(name)
    traits.extend(_image_traits(request_spec.get('image') or {}))
    info = {}
    if capabilities:
        info['capabilities'] = json.dumps(capabilities)
    if traits:
        info['traits'] = traits
    return info


def _image_traits(image):
    """Nova's ``traits_required``: from the list, or Glance's
    ``trait:T=required`` properties it is made of."""
    properties = image.get('properties') or {}
    if 'traits_required' in properties:
        return list(properties['traits_required'] or ())
    return [key[len('trait:'):] for key, value in properties.items()
            if key.startswith('trait:') and value == 'required']


def _utc(value):
    """Ironic's ISO 8601 timestamp as a naive UTC datetime, or None."""
    if not value:
        return None
    return timeutils.normalize_time(datetime.datetime.fromisoformat(value))


def _is_node_locked(error):
    # Ironic names no error code; its messages are stable.
    return 'is locked by host' in str(error)


def _is_claimed_elsewhere(error):
    # Ironic: "Instance X is already associated with a node, it cannot be
    # associated with this other node Y" (instance_uuid is unique).
    return 'is already associated with a node' in str(error)


def _is_claimed_by(error, instance_uuid):
    # Ironic: "Node N is associated with instance X." (NodeAssociated).
    return 'associated with instance %s' % instance_uuid in str(error)


def _node_answers():
    """Ironic's refusals about one node: the node is not to be had."""
    return (peers.ironic_exc.Conflict, peers.ironic_exc.NotFound,
            peers.ironic_exc.BadRequest)


class IronicSource:
    """One Ironic, as the inventory; share one per process.

    ``conf`` holds the ``[ironic]`` and ``[inventory]`` options. The clients
    are built on first use, so a process starts while Ironic (or the
    catalog) is down.
    """

    name = NAME

    def __init__(self, conf):
        self.conf = conf
        self._lock = threading.Lock()
        self._clients = {}

    # Clients

    def _client(self, for_sync=False):
        """The sync's client, or the reservations' (which waits: see
        ``peers.ironic``)."""
        with self._lock:
            client = self._clients.get(for_sync)
            if client is None:
                client = self._clients[for_sync] = peers.ironic(
                    self.conf, API_VERSION, waiting=not for_sync)
            return client

    @property
    def location(self):
        """Where the nodes come from: Ironic's endpoint, once known."""
        client = self._clients.get(True) or self._clients.get(False)
        if client is not None:
            return client.http_client.endpoint_trimmed
        return self.conf.ironic.endpoint_override

    def _list(self, for_sync=True, **params):
        """One page of ``GET /v1/nodes``, limited to our partition."""
        settings = self.conf.ironic
        if settings.conductor_group is not None:
            params['conductor_group'] = settings.conductor_group
        if settings.shard is not None:
            params['shards'] = [settings.shard]
        try:
            return self._client(for_sync=for_sync).node.list(**params)
        except peers.ironic_failures() as error:
            raise peers.ironic_unavailable(error)

    def check(self):
        """One small request with all a sync needs (credentials, endpoint,
        microversion), without retries.

        :raises: IronicUnavailable saying what failed.
        """
        self._list(for_sync=False, fields=['uuid'], limit=1)

    # Reading

    def full_pages(self):
        """Every node of our partition, a page at a time, in Ironic's id
        order (stable while nodes come and go)."""
        size = self.conf.ironic.page_size
        marker = None
        while True:
            read_at = timeutils.utcnow()
            listed = self._list(fields=list(FIELDS), limit=size,
                                marker=marker)
            yield _page(listed, read_at)
            if len(listed) < size:
                return
            marker = listed[-1].uuid

    def newest_change(self):
        """Ironic's newest ``updated_at`` or ``created_at`` now (naive UTC,
        Ironic's clock), or None for an empty Ironic: the watermark of a
        full pass that starts now.
        """
        newest = None
        for sort_key in _SORTED_BY:
            for node in self._list(detail=True, sort_key=sort_key,
                                   sort_dir='desc',
                                   limit=FIRST_CHANGES_PAGE):
                stamp = _utc(getattr(node, sort_key, None))
                if stamp is not None:
                    newest = max(newest or stamp, stamp)
                    break
        return newest

    def changed_pages(self, since):
        """Nodes changed or created at or after ``since`` (naive UTC,
        Ironic's clock), newest first: by ``updated_at``, then by
        ``created_at`` for nodes never updated. A node may come twice.
        """
        for sort_key in _SORTED_BY:
            yield from self._changed_by(sort_key, since)

    def _changed_by(self, sort_key, since):
        size = min(FIRST_CHANGES_PAGE, self.conf.ironic.page_size)
        marker = None
        while True:
            read_at = timeutils.utcnow()
            listed = self._list(detail=True, sort_key=sort_key,
                                sort_dir='desc', limit=size, marker=marker)
            fresh = []
            older_seen = False
            for node in listed:
                stamp = _utc(getattr(node, sort_key, None))
                if stamp is None:
                    continue  # never updated: the created_at pass has it
                if stamp < since:
                    older_seen = True
                    break
                fresh.append(node)
            yield _page(fresh, read_at)
            if older_seen or len(listed) < size:
                return
            marker = listed[-1].uuid
            size = min(size * 2, self.conf.ironic.page_size)

    def get_node(self, node_uuid):
        """One node re-read, as a one-node page; an empty page if Ironic
        no longer has it."""
        read_at = timeutils.utcnow()
        try:
            node = self._client(for_sync=True).node.get(
                node_uuid, fields=list(FIELDS))
        except peers.ironic_exc.NotFound:
            return Page([], [], read_at)
        except peers.ironic_failures() as error:
            raise peers.ironic_unavailable(error)
        return _page([node], read_at)

    # Claiming

    def claim(self, node_uuid, instance_uuid, info):
        """Claim the node for ``instance_uuid``; return it, normalized.

        ``info`` is :func:`instance_info`. Ironic sets an instance only on
        a node that has none, so a claim never takes a node from anyone;
        a node that already carries ``instance_uuid`` (a claim whose
        answer was lost, a retry) is ours already.

        :raises: NodeTaken when Ironic refuses (another instance, a state
            transition, a node gone) or answers with a node that is not
            usable (``ours`` when our claim is on it);
            InstanceClaimedElsewhere when Ironic has the instance on
            another node; IronicUnavailable when Ironic cannot be asked:
            the claim may then have landed. Timed, and each refusal
            counted, for Prometheus.
        """
        try:
            return self._claim(node_uuid, instance_uuid, info)
        except (exception.NodeTaken, exception.InstanceClaimedElsewhere):
            metrics.IRONIC_CLAIM_CONFLICTS.inc()
            raise

    def _claim(self, node_uuid, instance_uuid, info):
        patch = [{'op': 'add', 'path': '/instance_uuid',
                  'value': instance_uuid}]
        marked = dict(info)
        marked[CLAIMED_BY[0]] = CLAIMED_BY[1]
        patch.extend({'op': 'add', 'path': '/instance_info/%s' % key,
                      'value': value} for key, value in sorted(marked.items()))
        try:
            with metrics.IRONIC_CLAIM_DURATION.time():
                answer = self._patch(node_uuid, patch)
        except peers.ironic_exc.Conflict as error:
            if _is_claimed_elsewhere(error):
                raise exception.InstanceClaimedElsewhere(
                    instance_uuid=instance_uuid)
            if not _is_claimed_by(error, instance_uuid):
                raise exception.NodeTaken(peers.describe_error(error))
            answer = self._get(node_uuid)
        except _node_answers() as error:
            raise exception.NodeTaken(peers.describe_error(error))
        try:
            node = file_source.normalize(_node_dict(answer))
        except ValueError as error:
            raise exception.NodeTaken('cannot be used: %s' % error,
                                      ours=True)
        problem = _unusable(node, instance_uuid)
        if problem is not None:
            raise exception.NodeTaken(
                problem, ours=node['instance_uuid'] == instance_uuid)
        return node

    def _get(self, node_uuid):
        try:
            return self._client().node.get(node_uuid, fields=list(FIELDS))
        except _node_answers() as error:
            raise exception.NodeTaken(peers.describe_error(error))
        except peers.ironic_failures() as error:
            raise peers.ironic_unavailable(error)

    def our_claims_on_available_nodes(self):
        """``(node uuid, instance uuid, Ironic's updated_at)`` of every
        available node of our partition that carries a claim of ours
        (``CLAIMED_BY``): claims on their way to a deployment, and any
        left behind. Few in a healthy cloud: one request, every page.

        :raises: IronicUnavailable
        """
        return [
            (node.uuid, node.instance_uuid, _utc(node.updated_at))
            for node in self._list(for_sync=False, detail=True,
                                   associated=True,
                                   provision_state=states.AVAILABLE,
                                   limit=0)
            if (node.instance_info or {}).get(CLAIMED_BY[0]) == (
                CLAIMED_BY[1])]

    def find_claim(self, instance_uuid):
        """``(node uuid, provision state)`` of the node Ironic has the
        instance on, or None.

        :raises: IronicUnavailable
        """
        try:
            node = self._client().node.get_by_instance_uuid(
                instance_uuid, fields=['uuid', 'provision_state'])
        except peers.ironic_exc.NotFound:
            return None
        except peers.ironic_failures() as error:
            raise peers.ironic_unavailable(error)
        return node.uuid, node.provision_state

    def clear_claim(self, node_uuid, instance_uuid, still_ours):
        """Clear the node's claim in Ironic if it is still
        ``instance_uuid``'s and nothing was deployed.

        Ironic has no conditional PATCH: the caller must be the only one
        clearing this claim, and nothing of ours may claim the node until
        it is done (see ``inventory.claims``); ``still_ours()`` is asked
        between the read and the PATCH. Nobody else can claim the node
        while our instance is on it, so what the read saw holds until the
        PATCH. A teardown clears the claim itself and refuses PATCHes
        while cleaning.

        Returns ``(outcome, page)``: what was done, in words, and the node
        as Ironic now has it (a one-node page, empty if Ironic no longer
        has it), which spares the inventory a sync to learn it.

        :raises: ClaimNotCleared when Ironic refuses the PATCH or the
            caller's lease lapsed; IronicUnavailable.
        """
        read_at = timeutils.utcnow()
        try:
            node = self._client().node.get(node_uuid, fields=list(FIELDS))
        except peers.ironic_exc.NotFound:
            return 'node gone from Ironic', Page([], [], read_at)
        except peers.ironic_failures() as error:
            raise peers.ironic_unavailable(error)
        if node.instance_uuid != instance_uuid:
            outcome = ('claim already cleared' if node.instance_uuid is None
                       else 'claim already cleared; the node now carries '
                            'instance %s, left alone' % node.instance_uuid)
        elif node.provision_state not in states.UNDEPLOYED:
            outcome = 'left to the teardown (%s)' % node.provision_state
        elif not still_ours():
            raise exception.ClaimNotCleared(
                reason='this process no longer holds the clear\'s lease')
        else:
            read_at = timeutils.utcnow()
            try:
                node = self._patch(node_uuid, _CLEAR_CLAIM)
            except peers.ironic_exc.NotFound:
                return 'node gone from Ironic', Page([], [], read_at)
            except _node_answers() as error:
                raise exception.ClaimNotCleared(
                    reason=peers.describe_error(error))
            outcome = 'claim cleared'
        return outcome, _page([node], read_at)

    def _patch(self, node_uuid, patch):
        """PATCH, retrying a NodeLocked 409 with a short doubling wait;
        node-level refusals propagate, anything else is unavailability.
        """
        settings = self.conf.ironic
        delay = settings.node_locked_retry_interval
        for attempt in range(settings.node_locked_retries + 1):
            try:
                return self._client().node.update(node_uuid, patch)
            except peers.ironic_exc.Conflict as error:
                if (not _is_node_locked(error)
                        or attempt == settings.node_locked_retries):
                    raise
                LOG.debug('Node %s is locked in Ironic; retrying in %.2fs',
                          node_uuid, delay)
            except _node_answers():
                raise
            except peers.ironic_failures() as error:
                raise peers.ironic_unavailable(error)
            time.sleep(delay)
            delay *= 2


_CLEAR_CLAIM = [{'op': 'remove', 'path': '/instance_uuid'},
                {'op': 'remove', 'path': '/instance_info'}]


def _node_dict(node):
    return {field: getattr(node, field, None) for field in FIELDS}


def _unusable(node, instance_uuid):
    """Why a node Ironic just answered with (normalized) cannot be
    reserved for ``instance_uuid``, or None: claimed by another instance,
    or failing a rule common/eligibility.py re-checks after a claim."""
    if node['instance_uuid'] != instance_uuid:
        return 'claimed by instance %s' % node['instance_uuid']
    for rule in eligibility.AFTER_CLAIM:
        value = node[rule.field]
        if not eligibility.passes(rule)(value):
            return eligibility.worded(rule.claim_miss or rule.miss, value)
    return None


def _page(listed, read_at):
    """Normalize what one request listed; note what cannot be."""
    nodes, skipped = [], []
    newest = None
    for node in listed:
        for sort_key in _SORTED_BY:
            stamp = _utc(getattr(node, sort_key, None))
            if stamp is not None:
                newest = max(newest or stamp, stamp)
        try:
            nodes.append(file_source.normalize(_node_dict(node)))
        except ValueError as error:
            uuid = getattr(node, 'uuid', None)
            LOG.warning('Ironic node %s cannot be used, keeping what was '
                        'last read of it: %s', uuid, error)
            if uuid:
                skipped.append(uuid)
    return Page(nodes, skipped, read_at, newest)
