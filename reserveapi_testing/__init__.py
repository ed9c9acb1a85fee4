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

"""Real peer services and private database servers, run as processes.

Nothing here imports a peer in-process, so any test environment (ours,
or one that imports Nova) can use these fixtures. Each starts its peer
in a temporary directory of its own, on loopback and on a port of its
own, so that nothing else on the machine is touched.
"""
