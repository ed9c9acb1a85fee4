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


"""The server's one error family: every error has a status and a stable
code of its own, and every peer outage is one 503 per peer; what no
request meets has neither."""

import inspect

from oslotest import base

from reserveapi.common import exception


def _family():
    return [value for _name, value in inspect.getmembers(exception)
            if inspect.isclass(value)
            and issubclass(value, exception.ReserveapiException)]


class TestFamily(base.BaseTestCase):

    def test_codes_are_stable_and_distinct(self):
        family = _family()
        self.assertGreater(len(family), 30)
        # A class that defines no code of its own (FieldError) answers as
        # its parent does.
        codes = [error.code for error in family if 'code' in vars(error)]
        self.assertEqual(sorted(set(codes)), sorted(codes))
        self.assertEqual([], [code for code in codes
                              if not code.startswith('reserveapi.')])

    def test_internal_outcomes_answer_nothing(self):
        """What the domain acts on itself has no status or code to leak:
        escaped, it is a bug (a 500), never an answer."""
        outcomes = [value for value in vars(exception).values()
                    if inspect.isclass(value)
                    and issubclass(value, exception.InternalOutcome)]
        self.assertGreaterEqual(len(outcomes), 3)
        for outcome in outcomes:
            self.assertFalse(issubclass(outcome,
                                        exception.ReserveapiException))
            self.assertFalse(hasattr(outcome, 'status'), outcome)
            self.assertFalse(hasattr(outcome, 'code'), outcome)
        self.assertEqual('Node n1 is already reserved.',
                         exception.NodeAlreadyReserved(node='n1').detail)

    def test_command_errors_answer_nothing(self):
        """What only a command or the worker meets has no status or code:
        no request reaches it. UnsupportedLibrary is the exception, as
        the database engine it refuses is made at a first request."""
        errors = [value for value in vars(exception).values()
                  if inspect.isclass(value)
                  and issubclass(value, exception.CommandError)
                  and value is not exception.UnsupportedLibrary]
        self.assertEqual(
            ['CommandError', 'ConfigurationError', 'MissingCredentials',
             'SyncInProgress', 'UpgradeRefused'],
            sorted(error.__name__ for error in errors))
        for error in errors:
            self.assertFalse(issubclass(error,
                                        exception.ReserveapiException))
            self.assertFalse(hasattr(error, 'status'), error)
            self.assertFalse(hasattr(error, 'code'), error)
        refused = exception.UnsupportedLibrary('pecan 9 is installed')
        self.assertIsInstance(refused, exception.ConfigurationError)
        self.assertEqual((500, 'reserveapi.unsupported_library'),
                         (refused.status, refused.code))

    def test_each_peer_outage_is_a_503(self):
        outages = sorted(error.__name__ for error in _family()
                         if issubclass(error, exception.PeerUnavailable)
                         and error is not exception.PeerUnavailable)
        self.assertEqual(['IronicUnavailable', 'KeystoneUnavailable',
                          'NovaUnavailable', 'PlacementUnavailable'],
                         outages)
        for name in outages:
            error = getattr(exception, name)(reason='down')
            self.assertEqual(503, error.status)
            self.assertIn('down', error.detail)

    def test_a_mirror_outage_is_still_a_mirror_error(self):
        # The mirror's callers catch PeerError, the retry queue any
        # MirrorError: an outage stays pending like any other failure.
        for outage in (exception.PlacementUnavailable,
                       exception.NovaUnavailable):
            error = outage(reason='down')
            self.assertIsInstance(error, exception.PeerError)
            self.assertIsInstance(error, exception.ServiceUnavailable)

    def test_field_error_names_where(self):
        error = exception.FieldError(('aggregates', 0, 'hosts'),
                                     'must be a list')
        self.assertEqual('aggregates[0].hosts must be a list', str(error))
        self.assertIsInstance(error, ValueError)
        self.assertEqual(400, error.status)
