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

"""gunicorn's settings for the API with metrics (``[metrics] enabled``)::

    gunicorn -c python:reserveapi.wsgi.gunicorn_config --workers 4 \
        --bind 0.0.0.0:6390 reserveapi.wsgi.api:application

A scrape reaches one of gunicorn's workers; for it to answer for all of
them, every worker writes its metrics to files of one directory that the
scrape sums (``reserveapi/monitoring/exposition.py``). That directory
must be named before any worker imports prometheus-client, so it is set
here, when gunicorn reads its settings: ``PROMETHEUS_MULTIPROC_DIR`` from
the environment, emptied as gunicorn starts, or else a new temporary
directory, removed when gunicorn stops. The access log's lines end with
the request's id. The command line overrides any of these settings.
"""

import glob
import os
import shutil
import tempfile

# Not imported from reserveapi.monitoring: that would load
# prometheus-client before the variable is set.
MULTIPROCESS_ENV = 'PROMETHEUS_MULTIPROC_DIR'

access_log_format = ('%(h)s "%(r)s" %(s)s %(b)s %(M)sms '
                     '%({x-openstack-request-id}o)s')
"""gunicorn's access log line (with ``--access-logfile``) ends with the
request's id, as every line our code logs for it does."""

_created = None
if not os.environ.get(MULTIPROCESS_ENV):
    _created = tempfile.mkdtemp(prefix='reserveapi-metrics-')
    os.environ[MULTIPROCESS_ENV] = _created


def on_starting(server):
    """Values left by an earlier gunicorn would be summed with ours."""
    for path in glob.glob(os.path.join(os.environ[MULTIPROCESS_ENV],
                                       '*.db')):
        os.unlink(path)


def child_exit(server, worker):
    """A worker that exited leaves its counters to the sum (a counter
    never goes back); its live gauges, if any, go."""
    # Imported here: prometheus-client must read the variable set above.
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server):
    if _created is not None:
        shutil.rmtree(_created, ignore_errors=True)
