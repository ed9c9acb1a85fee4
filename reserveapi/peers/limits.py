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

"""The most nodes a project may hold, read from Keystone's unified limits.

With ``[holds] unified_limits`` operators set the number per project in
Keystone, as they do Nova's and Glance's quotas, and it is read through
oslo.limit, the library those services use (its options are in
``[oslo_limit]``). Only the number comes from Keystone: admission still
counts a project's holds itself (``holds/limits.py``, the most nodes
its overlapping holds take at one instant), which oslo.limit's usage
callback, one sum per project, cannot express.
"""

import importlib

from keystoneauth1 import exceptions as ks_exc
from oslo_limit import exception as limit_exc

from reserveapi.common import exception
from reserveapi.peers import clients

RESOURCE = 'baremetal_hold_nodes'
"""The resource of the limit: every resource class counts against it."""
UNLIMITED = -1
"""Keystone's value for no limit."""


def _oslo_limit():
    """oslo.limit's enforcer module, imported on first use: it loads the
    OpenStack SDK, a sixth of a second at the start of every process,
    which a deployment without unified limits need not pay."""
    return importlib.import_module('oslo_limit.limit')


def _failures():
    """What oslo.limit lets through when Keystone cannot tell a limit:
    keystoneauth1's errors (refused, timed out, credentials refused),
    the SDK's HTTP errors, an incomplete ``[oslo_limit]``
    (SessionInitError), an endpoint it does not find (ValueError), and
    an error page where it expects the enforcement model (ValueError,
    KeyError), and an enforcement model it does not implement
    (NotImplementedError: Keystone set to strict-two-level)."""
    sdk_exc = importlib.import_module('openstack.exceptions')
    return (ks_exc.ClientException, sdk_exc.SDKException,
            limit_exc.SessionInitError, ValueError, KeyError,
            NotImplementedError)


def _no_usage(project_id, resource_names):
    """oslo.limit's Enforcer wants a usage callback; only the limit is
    read here, so it never asks."""
    return dict.fromkeys(resource_names, 0)


def project_limit(project_id):
    """The most nodes ``project_id`` may hold at once: its own limit on
    ``RESOURCE`` in Keystone, else the registered one (0 when there is
    none, as oslo.limit reads it); None for no limit.

    One enforcer per call, as Nova makes one per check: each hold reads
    the limits as they are now.

    :raises: KeystoneUnavailable when Keystone cannot tell it
    """
    try:
        enforcer = _oslo_limit().Enforcer(_no_usage)
        ((_resource, value),) = enforcer.get_project_limits(
            project_id, [RESOURCE])
    except _failures() as error:
        raise exception.KeystoneUnavailable(
            reason='the limit on %s of project %s could not be read: %s'
            % (RESOURCE, project_id, clients.describe_error(error)))
    return None if value == UNLIMITED else value
