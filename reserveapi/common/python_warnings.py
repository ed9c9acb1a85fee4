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

"""Python warnings as log records, so that an operator reads ours only.

A library's warning about itself (a deprecation in a library it
imports, say) is for whoever upgrades that library, not for the operator:
it is logged at DEBUG. A warning that points at our own code is ours to
fix, and is logged at WARNING. Both go through oslo.log once it is set
up; before that, logging's last-resort handler prints WARNING and above.

Our commands and the WSGI module call ``route_to_log`` before they
import anything else, since libraries warn when they are imported.
"""

import logging
import os
import warnings

LOGGER = 'py.warnings'
"""The logger of ``logging.captureWarnings``, which this replaces with
one that chooses the level."""

_OURS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def is_ours(filename):
    """Whether a warning's frame is in the reserveapi package."""
    return os.path.abspath(filename).startswith(_OURS + os.sep)


def _log(message, category, filename, lineno, file=None, line=None):
    level = logging.WARNING if is_ours(filename) else logging.DEBUG
    logging.getLogger(LOGGER).log(
        level, '%s:%s: %s: %s', filename, lineno, category.__name__,
        message)


def route_to_log():
    """Send every Python warning to the log, at the level above."""
    warnings.showwarning = _log
