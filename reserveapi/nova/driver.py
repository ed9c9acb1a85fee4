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

"""An Ironic virt driver that asks the reservation service for a node.

Every nova-compute running it registers one compute node named after its
host and reports the whole Ironic cloud's capacity; the scheduler picks a
host, and at spawn the driver reserves a node with the instance's request
spec (``POST /v1/reservations``), deploys to it with the stock driver's
machinery, confirms the reservation once the node is active and releases
it when the instance is destroyed. ``instance.node`` stays the host name:
every stock method that reads the Ironic node from it is given the
instance bound to its reserved node instead (:class:`_InstanceOnNode`).
"""

import threading
import time
import uuid

from keystoneauth1 import exceptions as ks_exc
from nova import context as nova_context
from nova import exception
from nova import objects
from nova.compute import task_states
import nova.conf
from nova.scheduler.client import report
from openstack import exceptions as sdk_exc
from oslo_log import log as logging

from reserveapi import client
from reserveapi.client import base as client_base
from reserveapi.nova import conf as reserveapi_conf
from reserveapi.nova import request_spec
from reserveapi.nova import stock

CONF = nova.conf.CONF
reserveapi_conf.register_opts(CONF)
LOG = logging.getLogger(__name__)

# Compute node UUIDs are uuid5(NODE_NAMESPACE, host): stable per host,
# distinct between hosts, the same after a restart or a reinstall.
NODE_NAMESPACE = uuid.UUID('5a0a4e8c-1d6e-5b8f-9a43-6f1c2f0c9e11')


def class_inventory(row):
    """A host's Placement inventory of one resource class, from its row
    of the service's capacity summary.

    The total is every node of the class. While one is free, reserved is
    the nodes neither free nor held by a reservation (in maintenance,
    deployed by other means, cleaning): a reservation moves a node from
    free to held and changes nothing here. Reporting the nodes other hosts hold
    too would change every host's inventory whenever any host reserves, and
    in a boot storm each of those writes races the boots' allocations on
    that provider (a generation conflict, a reschedule). Once none is
    free, reserved is every node not held by this host (Placement already
    counts this host's own allocations), so that the scheduler picks no
    host for the class. In between, a host whose last free node another
    takes first is a real shortage: its reservation's 409 reschedules the
    boot. Free nodes promised to holds that have not started (``promised``,
    from microversion 1.5) count as not free. From 1.6 each running hold
    has a row of its own, under its own resource class (its flavor's):
    its pins are its free nodes, its boots its held ones, so the
    scheduler sends the hold's boots to any host while a pin is free.
    Those pins and boots are reserved nodes of their own class too
    (``hold_nodes``), allocated under the hold's class only: here they
    count as unusable, else Placement would offer them.
    """
    free = row['available'] - row.get('promised', 0)
    unusable = row['total'] - free - (row.get('reserved', 0)
                                      - row.get('hold_nodes', 0))
    if not free:
        unusable = row['total'] - (row.get('reserved_by_host', 0)
                                   - row.get('hold_nodes_by_host', 0))
    return {'total': row['total'], 'reserved': max(unusable, 0),
            'min_unit': 1, 'max_unit': 1, 'step_size': 1,
            'allocation_ratio': 1.0}


HOLD_CLASS_PREFIX = 'CUSTOM_HOLD_'
"""A hold's own resource class starts so (the service's api-ref)."""


def _provider_usages(provider_uuid):
    """``{resource class: used}`` of a provider in Placement now, or None
    when Placement could not tell."""
    try:
        response = report.report_client_singleton().get(
            '/resource_providers/%s/usages' % provider_uuid, version='1.9')
    except (ks_exc.ClientException, exception.NovaException) as error:
        LOG.warning('Placement did not say what provider %s uses: %s',
                    provider_uuid, error)
        return None
    if response.status_code != 200:
        LOG.warning('Placement did not say what provider %s uses: %s',
                    provider_uuid, response.status_code)
        return None
    return response.json()['usages']


def _delete_resource_class(name):
    """Delete the custom resource class ``name`` from Placement. True
    when that is settled: it is gone, or another provider still has
    inventory of it (409), whose host deletes it when it drops it in
    turn. False when Placement could not be asked: try again."""
    try:
        response = report.report_client_singleton().delete(
            '/resource_classes/%s' % name, version='1.2')
    except (ks_exc.ClientException, exception.NovaException) as error:
        LOG.warning('Could not delete resource class %s from Placement: '
                    '%s', name, error)
        return False
    if response.status_code == 204:
        LOG.info('Deleted resource class %s from Placement: its hold is '
                 'over.', name)
    elif response.status_code not in (404, 409):
        LOG.warning('Could not delete resource class %s from Placement: '
                    '%s', name, response.status_code)
        return False
    return True


def ironic_partition():
    """This host's Ironic partition, from nova.conf's ``[ironic] shard``
    and ``conductor_group`` as the stock driver reads them: an empty
    shard is none; an empty conductor group is Ironic's default group.
    """
    return {'shard': CONF.ironic.shard or None,
            'conductor_group': CONF.ironic.conductor_group}


class _InstanceOnNode:
    """The instance as the stock driver expects it, with ``node`` the
    Ironic node's UUID; everything else, ``save()`` and ``refresh()``
    included, is the real instance, whose ``node`` stays the host name
    (Nova 34 refuses to save a changed ``node`` without ``compute_id``).
    """

    def __init__(self, instance, node_uuid):
        object.__setattr__(self, '_instance', instance)
        object.__setattr__(self, 'node', node_uuid)

    def __getattr__(self, name):
        return getattr(self._instance, name)

    def __setattr__(self, name, value):
        setattr(self._instance, name, value)

    def __getitem__(self, key):
        return self.node if key == 'node' else self._instance[key]

    def __setitem__(self, key, value):
        self._instance[key] = value

    def __contains__(self, key):
        # Nova objects answer ``'field' in instance`` (is it set?); the
        # wrapper's own ``node`` always is.
        return key == 'node' or key in self._instance

    def get(self, key, default=None):
        return self.node if key == 'node' else self._instance.get(key,
                                                                  default)


class _Cached:
    """A value recomputed at most every ``ttl()`` seconds; while the
    service cannot be read, the last value read is kept.
    """

    def __init__(self, load, ttl):
        self._load = load
        self._ttl = ttl
        self._lock = threading.Lock()
        self._value = None
        self._loaded_at = None

    def get(self):
        with self._lock:
            now = time.monotonic()
            if (self._loaded_at is None
                    or now - self._loaded_at >= self._ttl()):
                try:
                    self._value = self._load()
                except client.ClientError as error:
                    if self._loaded_at is None:
                        raise exception.VirtDriverNotReady() from error
                    LOG.warning('Keeping the last inventory read: %s',
                                error)
                self._loaded_at = now
            return self._value


class IronicDriver(stock.StockDriver):
    """``compute_driver = reserveapi.IronicDriver`` (through
    ``reserveapi-nova-compute``).
    """

    # One compute node per host, which never moves to another host.
    rebalances_nodes = False

    def __init__(self, virtapi, read_only=False):
        super().__init__(virtapi, read_only=read_only)
        self._host = None
        # This host's compute node, named after it: set by init_host.
        self._node_uuid = None
        # None: the service is not used, the stock driver runs.
        self._reservations = None
        # instance uuid -> its reservation, as this process made it.
        self._reserved = {}
        self._partition = {}
        self._summary = _Cached(
            self._read_summary, lambda: CONF.reserveapi.inventory_cache_time)
        # Classes of holds that are over, which this host's report drops:
        # deleted from Placement once the drop is sent.
        self._hold_classes_dropped = set()

    # Start-up ---------------------------------------------------------

    def init_host(self, host):
        """Connect to the reservation service; refuse to start without it
        when ``[reserveapi] required``, else run the stock driver.
        """
        self._host = host
        self._node_uuid = str(uuid.uuid5(NODE_NAMESPACE, host))
        reservations = client.ReservationClient(
            reserveapi_conf.load_adapter(CONF))
        try:
            version = reservations.api_version
        except (client.ClientError, ks_exc.MissingAuthPlugin) as error:
            detail = getattr(error, 'detail', None) or (
                '[reserveapi] sets neither auth_type nor endpoint_override, '
                'so nothing says where the service is: %s' % error)
            if CONF.reserveapi.required:
                raise exception.InvalidConfiguration(
                    'The reservation service cannot be reached (%s) and '
                    '[reserveapi] required is true: refusing to start.'
                    % detail)
            LOG.warning('The reservation service cannot be reached (%s); '
                        'running the stock Ironic driver, one compute node '
                        'per Ironic node, which is deprecated: deploy the '
                        'reservation service and restart.', detail)
            self.rebalances_nodes = True
            return super().init_host(host)
        self._partition = ironic_partition()
        if not reservations.speaks(client_base.SUMMARY_VERSION):
            raise exception.InvalidConfiguration(
                'The reservation service speaks microversions up to %s; '
                'this driver needs %s (%s): upgrade the service before '
                'nova-compute.' % (
                    version, client_base.SUMMARY_VERSION,
                    _needs(self._partition)))
        self._reservations = reservations
        LOG.info('Reserving Ironic nodes through the reservation service '
                 '(microversion %s) for host %s, %s.', version, host,
                 _describe(self._partition))

    @property
    def _uses_reservations(self):
        return self._reservations is not None

    # Identity: one compute node, named after the host -----------------

    def get_available_nodes(self, refresh=False):
        if not self._uses_reservations:
            return super().get_available_nodes(refresh=refresh)
        # The resource tracker's periodic task calls this: keep the cache
        # of this host's deployed nodes fresh, as the stock driver does.
        self._refresh_node_cache()
        return [self._host]

    def get_nodenames_by_uuid(self, refresh=False):
        if not self._uses_reservations:
            return super().get_nodenames_by_uuid(refresh=refresh)
        return {self._node_uuid: self._host}

    def node_is_available(self, nodename):
        if not self._uses_reservations:
            return super().node_is_available(nodename)
        return nodename == self._host

    def is_node_deleted(self, nodename):
        """A compute node the stock driver left on this host (one per
        Ironic node) is retired once no instance of this host is on it,
        so that Placement stops offering it; its Ironic node is offered
        through the reservation service instead.
        """
        if not self._uses_reservations:
            return super().is_node_deleted(nodename)
        if nodename == self._host:
            return False
        return not objects.InstanceList.get_uuids_by_host_and_node(
            nova_context.get_admin_context(), self._host, nodename)

    def _refresh_node_cache(self):
        """The Ironic nodes of this host's partition that carry this
        host's instances.
        """
        if not self._uses_reservations:
            return super()._refresh_node_cache()
        filters = {name: value for name, value in self._partition.items()
                   if value is not None}
        nodes = self._list_ironic_nodes(associated=True, **filters)
        ours = set(objects.InstanceList.get_uuids_by_host(
            nova_context.get_admin_context(), self._host))
        self._replace_node_cache(
            [node for node in nodes if node.instance_id in ours],
            time.time())

    # Capacity: the whole partition, on every host of it --------------

    def _read_summary(self):
        """One request, whose cost does not grow with the inventory: the
        partition's capacity, its free nodes' traits, its architectures;
        at the negotiated microversion, so that a service of 1.6 or later
        adds its running holds' rows (an older one answers without).
        """
        return self._reservations.summary(self._host, **self._partition)

    def get_available_resource(self, nodename):
        if not self._uses_reservations:
            return super().get_available_resource(nodename)
        supported = [instance_type for arch in
                     self._summary.get()['architectures']
                     for instance_type in self._supported_instances(arch)]
        return {
            'uuid': self._node_uuid,
            'hypervisor_hostname': self._host,
            'hypervisor_type': self._hypervisor_type(),
            'hypervisor_version': self._hypervisor_version(),
            'cpu_info': None,
            'vcpus': 0, 'vcpus_used': 0,
            'memory_mb': 0, 'memory_mb_used': 0,
            'local_gb': 0, 'local_gb_used': 0, 'disk_available_least': 0,
            'supported_instances': supported,
            'stats': {},
            'numa_topology': None,
        }

    def update_provider_tree(self, provider_tree, nodename, allocations=None):
        """Every resource class of the partition, its whole total (see
        class_inventory for what is reserved); the traits are the free
        nodes'. Free is the service's rule.
        """
        if not self._uses_reservations:
            return super().update_provider_tree(provider_tree, nodename,
                                                allocations=allocations)
        summary = self._summary.get()
        inventory = {}
        for row in summary['capacity']:
            if not row['resource_class'] or not row['total']:
                continue
            inventory[row['resource_class']] = class_inventory(row)
        provider = provider_tree.data(nodename)
        self._delete_dropped_hold_classes(provider)
        self._keep_hold_classes_in_use(
            provider, inventory,
            {row['resource_class'] for row in summary['capacity']})
        provider_tree.update_inventory(nodename, inventory)
        provider_tree.update_traits(nodename, summary['traits'])

    def _keep_hold_classes_in_use(self, provider, inventory, listed):
        """Keep a hold's class with no room in the summary (the hold is
        over, or its boots were released) while Placement still counts an
        allocation of it here, every unit reserved: Placement refuses to
        drop inventory in use, which would fail the whole report, and
        the delete of the instance whose release dropped it. Nova deletes
        the allocation right after; the next report drops the class.

        A dropped class the service no longer ``listed`` is a hold's that
        is over: it is deleted once this drop is sent.
        """
        dropped = [resource_class for resource_class in provider.inventory
                   if resource_class.startswith(HOLD_CLASS_PREFIX)
                   and resource_class not in inventory]
        if not dropped:
            return
        used = _provider_usages(provider.uuid)
        for resource_class in dropped:
            if used is None or used.get(resource_class):
                current = provider.inventory[resource_class]
                inventory[resource_class] = dict(current,
                                                 reserved=current['total'])
            elif resource_class not in listed:
                self._hold_classes_dropped.add(resource_class)

    def _delete_dropped_hold_classes(self, provider):
        """Delete from Placement the classes of holds that are over, once
        this host's report has dropped them, so that they do not pile up.
        Placement refuses while another provider still has the class: the
        host that drops it last deletes it. If that host restarts in
        between, the class stays: ``openstack resource class delete``
        removes it.
        """
        for resource_class in sorted(self._hold_classes_dropped
                                     - set(provider.inventory)):
            if _delete_resource_class(resource_class):
                self._hold_classes_dropped.discard(resource_class)

    # Spawn ------------------------------------------------------------

    def prepare_for_spawn(self, instance):
        """Reserve a node and mark it as this instance's in Ironic; no
        node (or none usable) reschedules the instance to another host.
        """
        if not self._uses_reservations:
            return super().prepare_for_spawn(instance)
        reservation = self._reserve(instance)
        try:
            node = self._get_ironic_node(reservation['node_uuid'])
        except (ks_exc.ClientException, sdk_exc.SDKException) as error:
            # Ironic could not be asked (a dropped connection, an outage)
            # or no longer has the node: rather than abort the build with
            # the node held, let it go and have Nova try the next host.
            self._release(instance)
            raise exception.ComputeResourcesUnavailable(
                reason='Ironic could not be asked about reserved node '
                       '%s: %s' % (reservation['node_uuid'], error))
        # With [ironic] claim_nodes the service has already set our
        # instance_uuid: that node is ours, not "in use".
        if (node.instance_id not in (None, instance.uuid)
                or self._node_unusable(node)):
            self._release(instance)
            raise exception.ComputeResourcesUnavailable(
                reason='Reserved Ironic node %s is in use or unavailable '
                       'in Ironic.' % node.id)
        if node.instance_id is None:
            try:
                self._mark_node_for_instance(node, instance)
            except exception.InstanceDeployFailure as error:
                self._release(instance)
                raise exception.ComputeResourcesUnavailable(
                    reason=error.format_message())

    def _reserve(self, instance):
        spec = request_spec.build(instance.flavor,
                                  objects.ImageMeta.from_instance(instance))
        try:
            reservation = self._reservations.reserve(
                instance.uuid, self._host, spec,
                project_id=instance.project_id, **self._partition)
        except (client.Conflict, client.ServiceUnavailable) as error:
            # No valid node here (or the service is down): Nova tries the
            # next host the scheduler chose, then sets ERROR.
            LOG.info('No node reserved: %s', error, instance=instance)
            raise exception.ComputeResourcesUnavailable(reason=error.detail)
        except client.ClientError as error:
            # A request spec no node can ever satisfy: no retry helps.
            raise exception.InstanceUnacceptable(
                instance_id=instance.uuid, reason=error.detail)
        LOG.info('Reserved Ironic node %s (reservation %s)',
                 reservation['node_uuid'], reservation['uuid'],
                 instance=instance)
        self._reserved[instance.uuid] = reservation
        return reservation

    def spawn(self, context, instance, image_meta, injected_files,
              admin_password, allocations, network_info=None,
              block_device_info=None, power_on=True, accel_info=None):
        super().spawn(context, self._on_node(instance), image_meta,
                      injected_files, admin_password, allocations,
                      network_info=network_info,
                      block_device_info=block_device_info,
                      power_on=power_on, accel_info=accel_info)
        if self._uses_reservations:
            self._confirm(instance)

    def _confirm(self, instance):
        # The node is deployed and carries the instance in Ironic: a boot
        # is not failed for the bookkeeping.
        try:
            reservation = (self._reserved.get(instance.uuid)
                           or self._find_reservation(instance))
            if reservation is None:
                LOG.error('The deployed instance has no reservation to '
                          'confirm.', instance=instance)
                return
            self._reservations.confirm(reservation['uuid'])
        except client.ClientError as error:
            LOG.error('Could not confirm the reservation of the deployed '
                      'node: %s', error, instance=instance)

    # Release ----------------------------------------------------------

    def failed_spawn_cleanup(self, instance):
        super().failed_spawn_cleanup(instance)
        if self._uses_reservations:
            self._release(instance)

    def destroy(self, context, instance, network_info, block_device_info=None,
                destroy_disks=True, destroy_secrets=True):
        super().destroy(context, instance, network_info,
                        block_device_info=block_device_info,
                        destroy_disks=destroy_disks,
                        destroy_secrets=destroy_secrets)
        if self._uses_reservations:
            self._release(instance)
            if (instance.node != self._host
                    and instance.task_state == task_states.DELETING):
                self._retire_stock_node(context, instance)

    def _retire_stock_node(self, context, instance):
        """Retire the compute node the stock driver registered for the
        instance being deleted (it booted before this host moved to the
        reservation service), with its provider, now rather than at the
        next periodic task: until then Placement would offer its freed
        resource, and a boot sent there would fail its first attempt.
        """
        try:
            node = objects.ComputeNode.get_by_host_and_nodename(
                context, self._host, instance.node)
        except exception.ComputeHostNotFound:
            return
        LOG.info('Retiring compute node %s, left from the stock Ironic '
                 'driver: its last instance is deleted.', instance.node,
                 instance=instance)
        placement = report.report_client_singleton()
        try:
            # The instance's allocation first, which Nova deletes next
            # anyway: Placement refuses to delete a provider with
            # allocations, and Nova 34's cascade passes database rows where
            # it means UUIDs.
            placement.delete_allocation_for_instance(context, instance.uuid,
                                                     force=True)
            placement.delete_resource_provider(context, node)
            node.destroy()
        except (ks_exc.ClientException, exception.NovaException) as error:
            # The instance is torn down: its delete is not failed for the
            # bookkeeping. With the instance gone, is_node_deleted lets
            # the next periodic task retire the compute node.
            LOG.warning('Compute node %s not retired now (%s); the next '
                        'periodic task retires it.', instance.node, error,
                        instance=instance)

    def _release(self, instance):
        """Release by instance UUID, so it works after a restart; an
        already released reservation is success.
        """
        self._reserved.pop(instance.uuid, None)
        try:
            self._reservations.release_instance(instance.uuid)
        except client.ClientError as error:
            # The Ironic node is already torn down; failing the delete
            # would leave the instance undeletable while the service is
            # away. The service's orphan cleanup frees the node later.
            LOG.error('Could not release the reservation: %s', error,
                      instance=instance)

    # Every other operation: the instance's node, not instance.node ----

    def _find_reservation(self, instance):
        for reservation in self._reservations.list(
                instance_uuid=instance.uuid):
            if reservation['state'] != 'expired':
                return reservation
        return None

    def _ironic_node_of(self, instance):
        reservation = self._reserved.get(instance.uuid)
        if reservation is not None:
            return reservation['node_uuid']
        try:
            return self._ironic_node_of_instance(instance).id
        except exception.InstanceNotFound:
            reservation = self._find_reservation(instance)
            if reservation is None:
                raise
            return reservation['node_uuid']

    def _on_node(self, instance):
        if (not self._uses_reservations
                or isinstance(instance, _InstanceOnNode)):
            return instance
        return _InstanceOnNode(instance, self._ironic_node_of(instance))

    def _clean_up_deploy(self, node, instance, network_info=None):
        if (self._uses_reservations
                and not isinstance(instance, _InstanceOnNode)):
            instance = _InstanceOnNode(instance, node.id)
        return super()._clean_up_deploy(node, instance, network_info)

    def prepare_networks_before_block_device_mapping(self, instance,
                                                     network_info):
        return super().prepare_networks_before_block_device_mapping(
            self._on_node(instance), network_info)

    def unplug_vifs(self, instance, network_info):
        return super().unplug_vifs(self._on_node(instance), network_info)

    def attach_interface(self, context, instance, image_meta, vif):
        return super().attach_interface(context, self._on_node(instance),
                                        image_meta, vif)

    def rebuild(self, context, instance, image_meta, injected_files,
                admin_password, allocations, bdms, detach_block_devices,
                attach_block_devices, network_info=None,
                evacuate=False, block_device_info=None,
                preserve_ephemeral=False, accel_uuids=None,
                reimage_boot_volume=False):
        return super().rebuild(
            context, self._on_node(instance), image_meta, injected_files,
            admin_password, allocations, bdms, detach_block_devices,
            attach_block_devices, network_info=network_info,
            evacuate=evacuate, block_device_info=block_device_info,
            preserve_ephemeral=preserve_ephemeral, accel_uuids=accel_uuids,
            reimage_boot_volume=reimage_boot_volume)

    def rescue(self, context, instance, network_info, image_meta,
               rescue_password, block_device_info, share_info):
        return super().rescue(context, self._on_node(instance), network_info,
                              image_meta, rescue_password, block_device_info,
                              share_info)

    def unrescue(self, context, instance):
        return super().unrescue(context, self._on_node(instance))

    def get_vnc_console(self, context, instance):
        return super().get_vnc_console(context, self._on_node(instance))

    def get_volume_connector(self, instance):
        return super().get_volume_connector(self._on_node(instance))


def _needs(partition):
    if partition['shard'] is not None or (
            partition['conductor_group'] is not None):
        return 'this host is limited to %s' % _describe(partition)
    return 'the capacity summary'


def _describe(partition):
    named = ['%s %r' % (name.replace('_', ' '), value)
             for name, value in sorted(partition.items())
             if value is not None]
    return ' and '.join(named) if named else 'every Ironic node'
