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

"""gunicorn's settings for the nova-api image (``Containerfile``, target
``nova-api``), named by ``GUNICORN_CMD_ARGS``: in a file, because Nova's
WSGI application parses ``sys.argv`` as its own command line (uwsgi's
``--pyargv``), so gunicorn must run with no argument at all or every
worker exits at start with ``unrecognized arguments``.
"""

import os

wsgi_app = 'nova.wsgi.osapi_compute:application'
bind = os.environ.get('NOVA_API_BIND', '0.0.0.0:8774')
workers = int(os.environ.get('NOVA_API_WORKERS', '2'))
accesslog = '-'
errorlog = '-'
