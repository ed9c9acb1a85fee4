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

"""Sphinx configuration for the reserveapi documentation.

The configuration and policy references, their samples and the
openstackclient command reference are generated from the code.
"""

extensions = [
    'cliff.sphinxext',
    'openstackdocstheme',
    'oslo_config.sphinxconfiggen',
    'oslo_config.sphinxext',
    'oslo_policy.sphinxext',
    'oslo_policy.sphinxpolicygen',
]

html_theme = 'openstackdocs'
html_theme_options = {'sidebar_mode': 'toc'}
openstackdocs_repo_name = 'openstack/reserveapi'
openstackdocs_bug_project = 'reserveapi'
openstackdocs_bug_tag = 'doc'
openstackdocs_auto_name = False

project = 'reserveapi'
copyright = '2026, reserveapi developers'
master_doc = 'index'
source_suffix = {'.rst': 'restructuredtext'}
pygments_style = 'native'
exclude_patterns = ['_static/*.sample']

# Samples written into _static/ at build time, from the same generator
# files as tox -e genconfig and tox -e genpolicy.
config_generator_config_file = '../../etc/reserveapi/config-generator.conf'
sample_config_basename = '_static/reserveapi'
policy_generator_config_file = '../../etc/reserveapi/policy-generator.conf'
sample_policy_basename = '_static/reserveapi'

# openstack baremetal reservation ... commands, from their entry points.
autoprogram_cliff_application = 'openstack'
