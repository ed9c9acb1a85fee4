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

"""Absolute links to our resources, honouring [api] public_endpoint."""

import pecan

import reserveapi.conf

CONF = reserveapi.conf.CONF


def base_url():
    base = CONF.api.public_endpoint or pecan.request.host_url
    return base.rstrip('/')


def make(path, rel='self'):
    return {'href': '%s/%s' % (base_url(), path.lstrip('/')), 'rel': rel}
