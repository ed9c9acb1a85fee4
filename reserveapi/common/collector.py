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

"""Python's cycle collector, run less often during bulk work.

A sync builds millions of short-lived dicts and lists (nodes, rows,
statements' parameters), which reference counting frees as they go; the
collector still starts every 700 container allocations and walks every
young container each time: a third of a million-node sync's CPU
(``tools/bench/RESULTS.rst``). Starting it 100 times less often only lets
the rare cycle live a little longer; the process's own thresholds come
back when the work ends.
"""

import contextlib
import gc
import threading

BULK_THRESHOLD = 70000
"""Container allocations between two young-generation collections during
bulk work (Python's default: 700)."""

_lock = threading.Lock()
_holders = 0
_saved = None


@contextlib.contextmanager
def fewer_collections():
    """Raise the collector's young threshold until the block ends; the
    threshold is the process's, so concurrent blocks share one raise and
    the last to end restores it."""
    global _holders, _saved
    with _lock:
        if not _holders:
            _saved = gc.get_threshold()
            gc.set_threshold(max(BULK_THRESHOLD, _saved[0]), *_saved[1:])
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if not _holders:
                gc.set_threshold(*_saved)
