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

"""Why the mirror could not make Placement agree yet.

None of these ever reaches an API caller: the mirror records the
``detail`` on the pending row and the worker retries. So they carry no
HTTP status, only a message; ``reserveapi-manage`` prints it.
"""


class MirrorError(Exception):
    """Base class: ``detail`` is ``msg_fmt`` filled with the kwargs."""

    msg_fmt = 'The aggregate mirror failed.'

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        self.detail = str(message if message is not None
                          else self.msg_fmt % kwargs)
        super().__init__(self.detail)


class HostHasNoProvider(MirrorError):
    """Nothing to put in the aggregate yet: the host stays pending."""

    msg_fmt = 'Host %(host)s has no resource provider in Placement yet.'


class PeerError(MirrorError):
    """Placement or Nova did not do what we asked: the change stays
    pending.
    """

    msg_fmt = 'A peer service failed: %(reason)s'


class PlacementError(PeerError):
    """Placement answered in a way we cannot act on (4xx, bad body...)."""

    msg_fmt = 'Placement request failed: %(reason)s'


class PlacementUnavailable(PlacementError):
    """No answer in time: refused, timed out, no endpoint, or a 5xx."""

    msg_fmt = 'Placement is unavailable: %(reason)s'


class PlacementConflict(PlacementError):
    """The provider generation kept changing for every attempt we had."""

    msg_fmt = ('Resource provider %(provider)s changed concurrently on each '
               'of %(attempts)d attempts.')


class ProviderGone(PlacementError):
    """The provider does not exist (deleted, or not created yet).

    Distinct from other errors because the cure is to resolve the host
    again, not to retry the same provider.
    """

    msg_fmt = 'Resource provider %(provider)s does not exist.'


class NovaError(PeerError):
    """Nova answered in a way we cannot act on."""

    msg_fmt = 'Nova request failed: %(reason)s'


class NovaUnavailable(NovaError):
    """No answer from Nova in time: refused, timed out, or a 5xx."""

    msg_fmt = 'Nova is unavailable: %(reason)s'
