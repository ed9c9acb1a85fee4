#!/usr/bin/env python3
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

"""One line after the README's test command: how many PostgreSQL and
MariaDB/MySQL tests the last stestr run skipped, and how to run them.

The opportunistic database tests skip without their servers (oslo.db's
convention), and a run that skipped hundreds of them otherwise reads as
a full pass. Reads ``stestr last --subunit``; always exits 0.
"""

import io
import os
import subprocess
import sys

import subunit
import testtools

BACKENDS = (('PostgreSQL', 'PostgreSQL'), ('MySQL', 'MariaDB/MySQL'))
"""(scenario name ending a test id, what to call it)."""


def records(stream):
    """Every test of a subunit v2 byte stream, as testtools' dicts (id,
    status, details)."""
    found = []
    result = testtools.StreamToDict(found.append)
    result.startTestRun()
    subunit.ByteStreamToStreamResult(
        stream, non_subunit_name='stdout').run(result)
    result.stopTestRun()
    return found


def outcomes(stream):
    """``{test id: status}`` of a subunit v2 byte stream."""
    return {test['id']: test['status'] for test in records(stream)}


def scenarios(test_id):
    """The scenario names a test id ends with: ``test_x(PostgreSQL,leases)``
    has two, ``test_x(MySQL)`` one."""
    if not test_id.endswith(')') or '(' not in test_id:
        return ()
    return tuple(test_id[test_id.rindex('(') + 1:-1].split(','))


def summary(found):
    counts = {}
    for scenario, name in BACKENDS:
        ours = [status for test_id, status in found.items()
                if scenario in scenarios(test_id)]
        counts[name] = (len(ours), ours.count('skip'))
    total = sum(count for count, _skipped in counts.values())
    skipped = sum(skipped for _count, skipped in counts.values())
    if not total:
        return 'Database tests: none of this run is on PostgreSQL or MariaDB.'
    if not skipped:
        return ('Database tests: all %d PostgreSQL and MariaDB/MySQL tests '
                'ran, none skipped.' % total)
    return ('Database tests: %d of %d skipped (%s): their servers, or the '
            'openstack_citest user and database, are missing; '
            'tools/ensure-test-databases.sh sets them up on this machine, '
            'then run the tests again.' % (
                skipped, total, ', '.join(
                    '%s %d' % (name, counts[name][1])
                    for _scenario, name in BACKENDS if counts[name][1])))


def last_run():
    """``stestr last --subunit`` of this Python's environment: (the
    stream, or None, and why not)."""
    stestr = os.path.join(os.path.dirname(sys.executable), 'stestr')
    last = subprocess.run([stestr, 'last', '--subunit'],
                          capture_output=True, check=False)
    # 1: the last run had failures, which stestr has reported already.
    if last.returncode not in (0, 1):
        return None, last.stderr.decode(errors='replace').strip()
    return io.BytesIO(last.stdout), None


def main():
    stream, why_not = last_run()
    if stream is None:
        print('Database tests: no stestr run to read (%s).' % why_not)
        return 0
    print(summary(outcomes(stream)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
