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

"""Operations run one step at a time, in an order the test chooses.

A failpoint is a function the code under test calls at a point where it
talks to a peer or commits (a PATCH to Ironic, a transaction of its
own): ``Interleaver.pause_before`` wraps it so that an operation's
thread stops just before the call and goes on only when its turn comes.
An order such as ``'abba'`` lets operation ``a`` run to its next
failpoint, then ``b`` twice, then ``a``; once the order is used up, each
operation runs to its end, ``a`` first. ``orders`` lists every
interleaving of two operations' steps.

A failpoint must not be called inside a transaction: a paused operation
would hold its locks while the other waits for them.
"""

import collections
import functools
import itertools
import threading

import fixtures

STEP_TIMEOUT = 60
"""Seconds one step may take before the run is declared stuck."""


class Stuck(Exception):
    """An operation neither reached a failpoint nor ended in time."""


def orders(steps_a, steps_b):
    """Every interleaving of ``steps_a`` steps of ``a`` with ``steps_b``
    of ``b``, as strings such as ``'aabab'``."""
    total = steps_a + steps_b
    for positions in itertools.combinations(range(total), steps_a):
        yield ''.join('a' if index in positions else 'b'
                      for index in range(total))


class Interleaver(fixtures.Fixture):
    """Runs named operations (callables) under failpoints."""

    def _setUp(self):
        self._condition = threading.Condition()
        self._names = {}
        """thread ident -> the operation's name."""
        self._reset()

    def _reset(self):
        self._pauses = collections.Counter()
        """Failpoints each operation reached."""
        self._grants = collections.Counter()
        """Turns each operation was given."""
        self._finished = set()
        self.errors = {}
        self.trace = []
        """(operation, failpoint) in the order the calls were made."""

    def pause_before(self, owner, attribute):
        """Make ``owner.attribute`` a failpoint for every operation (other
        threads call it as it is)."""
        original = getattr(owner, attribute)
        point = getattr(original, '__name__', attribute)

        @functools.wraps(original)
        def failpoint(*args, **kwargs):
            self._wait(point)
            return original(*args, **kwargs)

        self.useFixture(fixtures.MockPatchObject(owner, attribute, failpoint))

    def _wait(self, point):
        name = self._names.get(threading.get_ident())
        if name is None:
            return
        with self._condition:
            self._pauses[name] += 1
            self._condition.notify_all()
            if not self._condition.wait_for(
                    lambda: self._grants[name] >= self._pauses[name],
                    STEP_TIMEOUT):
                raise Stuck('%s waited for its turn at %s' % (name, point))
            self.trace.append((name, point))

    def run(self, operations, order=''):
        """Run ``operations`` ({name: callable}) in threads: each starts
        paused at its first failpoint, then takes the turns ``order``
        gives it (a name a character); afterwards each runs to its end in
        name order. Returns what each raised, by name.

        :raises: Stuck
        """
        self._reset()
        threads = [threading.Thread(target=self._operation, args=(name, call),
                                    daemon=True)
                   for name, call in sorted(operations.items())]
        for thread in threads:
            thread.start()
        for name in sorted(operations):
            self._until_paused(name, 1)
        for name in order:
            if name not in self._finished:
                self._step(name)
        for name in sorted(operations):
            while name not in self._finished:
                self._step(name)
        for thread in threads:
            thread.join(STEP_TIMEOUT)
        return dict(self.errors)

    def _operation(self, name, call):
        self._names[threading.get_ident()] = name
        try:
            call()
        except Exception as error:
            self.errors[name] = error
        finally:
            with self._condition:
                self._finished.add(name)
                self._condition.notify_all()

    def _until_paused(self, name, pauses):
        with self._condition:
            if not self._condition.wait_for(
                    lambda: self._pauses[name] >= pauses
                    or name in self._finished, STEP_TIMEOUT):
                raise Stuck('%s did not reach its failpoint %d (trace: %s)'
                            % (name, pauses, self.trace))

    def _step(self, name):
        """Let ``name`` run from its failpoint to the next, or its end."""
        with self._condition:
            self._grants[name] += 1
            self._condition.notify_all()
        self._until_paused(name, self._grants[name] + 1)
