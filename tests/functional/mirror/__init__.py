"""Aggregate mirror against the real Placement service."""

from oslo_config import fixture as config_fixture

import reserveapi.conf
from reserveapi.mirror import placement
from tests import base
from tests.functional.fixtures import placement as placement_fixture


class MirrorTestCase(base.TestCase):
    """Real Placement on loopback, our ``[placement]`` group pointing at it.

    ``conf_fixture`` is the oslo.config fixture the peer fixtures configure.
    """

    def setUp(self):
        super().setUp()
        self.conf_fixture = self.useFixture(
            config_fixture.Config(reserveapi.conf.CONF))
        self.placement = self.useFixture(placement_fixture.PlacementFixture())
        self.placement.configure(self.conf_fixture)
        self.client = placement.PlacementClient()
